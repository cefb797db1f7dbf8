/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Scorer snapshots.  Layout (little endian):
 *
 *   header (HEADER_SIZE bytes): magic "TXLSNAP1", u32 version, u32 header
 *     size, model id and vocabulary id (64 hex chars each), then i32 fields
 *     n_layer, d_model, HD, memory kind, mem_len, clamp_len, same_length,
 *     max_segment, mem used, has_last, segment, pending, precision,
 *     shuffle, sections; i64 tokens seen; u64 section bytes, raw and
 *     compressed payload sizes
 *   payload: zstd frame of [state floats, coded by lib/state/snapcodec.c]
 *     [pending tokens, i32][sections: u32 name length, name, u64 length,
 *     bytes; repeated]
 *   trailer: SHA-256 of header and payload (32 bytes)
 *
 * The checksum is verified first, so a flipped bit anywhere is caught
 * before a single field is believed; every field is then checked against
 * the model and the sizes it implies. */
#include "model_internal.h"
#include "bytes.h"
#include "jsonstr.h"
#include "snapcodec.h"
#include "snapfile.h"
#include "stream_state.h"

#include <math.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define MAGIC "TXLSNAP1"
#define VERSION 2u
#define N_INTS 15
#define HEADER_SIZE (8 + 4 + 4 + 64 + 64 + 4 * N_INTS + 8 + 8 + 8 + 8)
#define MAX_SECTIONS 64
#define MAX_NAME 64
#define DIGEST 32

/* The header's fields: the scorer state's own (stream_state.h), then the
 * file's coding of them. */
enum { F_NLAYER = TXL_STATE_NLAYER, F_DMODEL = TXL_STATE_DMODEL,
       F_HD = TXL_STATE_HD, F_KIND = TXL_STATE_KIND,
       F_MEMLEN = TXL_STATE_MEMLEN, F_CLAMP = TXL_STATE_CLAMP,
       F_SAME = TXL_STATE_SAME, F_MAXSEG = TXL_STATE_MAXSEG,
       F_MLEN = TXL_STATE_MLEN, F_HASLAST = TXL_STATE_HASLAST,
       F_SEG = TXL_STATE_SEG, F_NPEND = TXL_STATE_NPEND,
       F_PREC = TXL_STATE_N_FIELDS, F_SHUF, F_NSECT };

static void
sha256(const guint8 *data, gsize len, guint8 *out)
{
  GChecksum *cs = g_checksum_new(G_CHECKSUM_SHA256);
  g_checksum_update(cs, data, len);
  gsize n = DIGEST;
  g_checksum_get_digest(cs, out, &n);
  g_checksum_free(cs);
}

static gsize
sections_size(GHashTable *sections, guint *count, GError **error)
{
  gsize total = 0;
  *count = 0;
  if (!sections)
    return 0;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, sections);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    gsize nl = strlen(k);
    if (nl == 0 || nl > MAX_NAME || ++*count > MAX_SECTIONS) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "snapshot section names are 1..%d bytes, at most %d "
                  "sections", MAX_NAME, MAX_SECTIONS);
      return G_MAXSIZE;
    }
    total += 4 + nl + 8 + g_bytes_get_size(v);
  }
  return total;
}

/* The payload goes through one streaming zstd context piece by piece, so
 * that a large section (every open session's memory) is not copied into
 * a contiguous payload first: the peak is the pieces plus the output. */
typedef struct {
  ZSTD_CCtx *cc;
  ZSTD_outBuffer out;
  const char *err; /* the first failure, NULL: none */
  guint64 fed;     /* input bytes so far */
} Zout;

static void
zout_feed(Zout *z, const void *data, gsize n, ZSTD_EndDirective end)
{
  ZSTD_inBuffer in = { data, n, 0 };
  z->fed += n;
  while (!z->err) {
    size_t r = ZSTD_compressStream2(z->cc, &z->out, &in, end);
    if (ZSTD_isError(r)) {
      z->err = ZSTD_getErrorName(r);
      return;
    }
    if (end == ZSTD_e_end ? r == 0 : in.pos == in.size)
      return;
    if (z->out.pos == z->out.size) { /* cannot happen within the bound */
      z->err = "the output does not fit its bound";
      return;
    }
  }
}

static void
zout_emit(gpointer ctx, const void *data, gsize n)
{
  if (n)
    zout_feed(ctx, data, n, ZSTD_e_continue);
}

static void
feed_section_head(Zout *z, const char *name, gsize n)
{
  gsize nl = strlen(name);
  guint8 head[4 + MAX_NAME + 8];
  TxlWriter w = { head };
  txl_w_u32(&w, (guint32)nl);
  txl_w_raw(&w, name, nl);
  txl_w_u64(&w, n);
  zout_feed(z, head, (gsize)(w.p - head), ZSTD_e_continue);
}

/* Sorted by name so that the same state always gives the same bytes; the
 * producer's section takes its place among them. */
static void
feed_sections(GHashTable *sections, const TxlSectionProducer *prod, Zout *z)
{
  GList *keys = sections ? g_hash_table_get_keys(sections) : NULL;
  if (prod)
    keys = g_list_prepend(keys, (gpointer)prod->name);
  keys = g_list_sort(keys, (GCompareFunc)strcmp);
  for (GList *l = keys; l; l = l->next) {
    if (prod && l->data == (gpointer)prod->name) {
      feed_section_head(z, prod->name, prod->size);
      guint64 before = z->fed;
      prod->feed(prod->data, zout_emit, z);
      if (z->fed - before != prod->size && !z->err)
        z->err = "a section's producer gave another size than announced";
      continue;
    }
    gsize n;
    const guint8 *d = g_bytes_get_data(g_hash_table_lookup(sections, l->data),
                                       &n);
    feed_section_head(z, l->data, n);
    if (n)
      zout_feed(z, d, n, ZSTD_e_continue);
  }
  g_list_free(keys);
}

gboolean
txl_scorer_save_full(TxlScorer *sc, const char *path,
                     const TxlSnapshotOptions *opts, GHashTable *sections,
                     gsize *file_bytes, GError **error)
{
  /* the section that makes a file a sessions snapshot is only written by
   * txl_sessions_save(): a scorer's file must never pass for one */
  if (sections && g_hash_table_contains(sections, TXL_SESSIONS_SECTION)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "the snapshot section name \"%s\" is reserved for "
                "txlsessions snapshots", TXL_SESSIONS_SECTION);
    return FALSE;
  }
  return txl_snapshot_save_stream(sc, path, opts, sections, file_bytes, error);
}

gboolean
txl_snapshot_save_stream(TxlScorer *sc, const char *path,
                         const TxlSnapshotOptions *opts, GHashTable *sections,
                         gsize *file_bytes, GError **error)
{
  return txl_snapshot_save_stream_with(sc, path, opts, sections, NULL,
                                       file_bytes, error);
}

GHashTable *
txl_sections_copy(GHashTable *sections)
{
  GHashTable *all = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                          (GDestroyNotify)g_bytes_unref);
  if (sections) {
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, sections);
    while (g_hash_table_iter_next(&it, &k, &v))
      g_hash_table_insert(all, g_strdup(k), g_bytes_ref(v));
  }
  return all;
}

gboolean
txl_snapshot_save_stream_with(TxlScorer *sc, const char *path,
                              const TxlSnapshotOptions *opts,
                              GHashTable *sections,
                              const TxlSectionProducer *prod,
                              gsize *file_bytes, GError **error)
{
  TxlSnapshotOptions so = TXL_SNAPSHOT_OPTIONS_DEFAULT;
  if (opts)
    so = *opts;
  if ((so.precision != TXL_SNAPSHOT_F32 && so.precision != TXL_SNAPSHOT_F16 &&
       so.precision != TXL_SNAPSHOT_BF16) || so.level < 0 || so.level > 19) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "snapshot options: precision %d or zstd level %d out of range",
                (int)so.precision, so.level);
    return FALSE;
  }
  guint nsect;
  gsize sbytes = sections_size(sections, &nsect, error);
  if (sbytes == G_MAXSIZE)
    return FALSE;
  if (prod) {
    gsize nl = strlen(prod->name);
    if (nl == 0 || nl > MAX_NAME || nsect + 1 > MAX_SECTIONS ||
        (sections && g_hash_table_contains(sections, prod->name))) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "snapshot section \"%s\": bad name or given twice",
                  prod->name);
      return FALSE;
    }
    nsect++;
    sbytes += 4 + nl + 8 + prod->size;
  }
  /* the file codes the scorer's state bytes: its fields go to the
   * header, its floats through the codec, its pending tokens as they are */
  gsize slen = txl_scorer_state_get_size(sc);
  guint8 *sb = g_malloc(slen);
  txl_scorer_state_get_data(sc, sb, slen);
  gint32 f[N_INTS];
  gint64 seen;
  txl_scorer_state_parse(sb, slen, f, &seen, NULL);
  int npend = f[F_NPEND];
  gsize nf = (slen - TXL_STATE_HEADER) / 4 - (gsize)npend;
  gsize w = txl_snapcodec_width(so.precision);
  gsize raw = nf * w + (gsize)npend * 4 + sbytes;
  guint8 *coded = g_malloc(nf * w + (gsize)npend * 4 + 1);
  txl_le_f32_inplace(sb + TXL_STATE_HEADER, nf); /* back to host floats */
  txl_snapcodec_encode((const float *)(const void *)(sb + TXL_STATE_HEADER),
                       nf, so.precision, so.shuffle, coded);
  memcpy(coded + nf * w, sb + TXL_STATE_HEADER + 4 * nf, (gsize)npend * 4);
  g_free(sb);
  guint8 *p = coded + nf * w + (gsize)npend * 4;
  /* the bound is reserved, not touched: only the compressed bytes become
   * resident */
  gsize bound = ZSTD_compressBound(raw);
  gsize total = HEADER_SIZE + bound + DIGEST;
  guint8 *file = g_malloc(total);
  Zout z = { ZSTD_createCCtx(), { file + HEADER_SIZE, bound, 0 }, NULL, 0 };
  if (!z.cc)
    z.err = "out of memory";
  if (!z.err) {
    ZSTD_CCtx_setParameter(z.cc, ZSTD_c_compressionLevel,
                           so.level ? so.level : 3);
    ZSTD_CCtx_setPledgedSrcSize(z.cc, raw); /* the loader checks it */
    zout_feed(&z, coded, (gsize)(p - coded), ZSTD_e_continue);
  }
  g_free(coded);
  feed_sections(sections, prod, &z);
  zout_feed(&z, NULL, 0, ZSTD_e_end);
  gsize comp = z.out.pos;
  ZSTD_freeCCtx(z.cc);
  if (z.err) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: compression failed: %s",
                path, z.err);
    g_free(file);
    return FALSE;
  }
  const TxlModel *model = txl_stream_model(txl_scorer_stream(sc));
  TxlWriter hw = { file };
  txl_w_raw(&hw, MAGIC, 8);
  txl_w_u32(&hw, VERSION);
  txl_w_u32(&hw, HEADER_SIZE);
  txl_w_raw(&hw, txl_model_id(model), 64);
  txl_w_raw(&hw, txl_model_vocab_id(model), 64);
  f[F_PREC] = (gint32)so.precision;
  f[F_SHUF] = so.shuffle ? 1 : 0;
  f[F_NSECT] = (gint32)nsect;
  for (int i = 0; i < N_INTS; i++)
    txl_w_u32(&hw, (guint32)f[i]);
  txl_w_u64(&hw, (guint64)seen);
  txl_w_u64(&hw, sbytes);
  txl_w_u64(&hw, raw);
  txl_w_u64(&hw, comp);
  sha256(file, HEADER_SIZE + comp, file + HEADER_SIZE + comp);
  gboolean ok = txl_snapfile_write_atomic(path, file,
                                          HEADER_SIZE + comp + DIGEST, error);
  g_free(file);
  if (ok && file_bytes)
    *file_bytes = HEADER_SIZE + comp + DIGEST;
  return ok;
}

gboolean
txl_scorer_save(TxlScorer *sc, const char *path, GError **error)
{
  return txl_scorer_save_full(sc, path, NULL, NULL, NULL, error);
}

static gboolean
bad(GError **error, const char *path, const char *what)
{
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT, "%s: %s", path, what);
  return FALSE;
}

/* The file, its header fields, checked as far as they can be without a
 * model: magic, version, checksum, sizes. */
typedef struct {
  guint8 *file;
  gsize len;
  char model[65], vocab[65];
  gint32 f[N_INTS];
  gint64 seen;
  guint64 sbytes, raw, comp;
} Parsed;

/* Bytes a stream with these settings takes: memory rows, position table,
 * attention scores, per-segment scratch and the output layer's scratch;
 * an estimate of what txl_stream_new() allocates, in doubles so that no
 * header value can overflow it. */
static double
stream_cost(const TxlConfig *c, double mem_len, double seg, gboolean hidden)
{
  double d = c->d_model, HD = (double)c->n_head * c->d_head, K = mem_len + seg;
  double rows = (double)c->n_layer * K * (hidden ? d : 2 * HD);
  double qr = hidden ? K : seg;
  double scratch = (double)c->n_head * seg * K + qr * (d + 3 * HD) +
                   seg * (3 * d + HD + c->d_inner + c->d_embed + c->n_token) +
                   K * d + (hidden ? K * HD : 0);
  return 4 * (rows + scratch);
}

/* What restoring with model m may take at most: a stream at the model's
 * own settings (either memory kind) with a full memory, three times over
 * for the payload, its decoded copy and what is built from it, plus the
 * budget (or 16 times the compressed payload when that is larger: what
 * the file itself can justify). */
static double
allowed_bytes(const TxlModel *m, guint64 comp, guint64 budget)
{
  double extra = MAX((double)budget, 16.0 * (double)comp);
  if (!m)
    return extra;
  const TxlConfig *c = txl_model_config(m);
  double d = c->d_model, HD = (double)c->n_head * c->d_head;
  double state = 4 * ((double)c->n_layer * c->mem_len * MAX(d, 2 * HD) + d) +
                 4.0 * c->tgt_len;
  return MAX(stream_cost(c, c->mem_len, c->tgt_len, FALSE),
             stream_cost(c, c->mem_len, c->tgt_len, TRUE)) +
         3 * state + extra;
}

/* Refuses a header asking for more than allowed_bytes(), before anything
 * of its size is allocated (a checksum only proves that the file is what
 * someone wrote). */
static gboolean
check_budget(const char *path, const TxlModel *m, const Parsed *ps,
             GError **error)
{
  guint64 budget;
  if (!txl_snapshot_budget(&budget, error))
    return FALSE;
  const gint32 *f = ps->f;
  double need = 3.0 * (double)ps->raw;
  if (m)
    need += stream_cost(txl_model_config(m), MAX(f[F_MEMLEN], 0),
                        MAX(f[F_MAXSEG], 0), f[F_KIND] == TXL_MEMORY_HIDDEN);
  double allowed = allowed_bytes(m, ps->comp, budget);
  if (need <= allowed)
    return TRUE;
  g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
              "%s: restoring this snapshot would take about %.0f MB (its "
              "header declares mem_len %d, segment %d and %" G_GUINT64_FORMAT
              " bytes of state), more than the %.0f MB allowed: %s the "
              "budget of %" G_GUINT64_FORMAT " MiB. Raise TXL_MEMORY_LIMIT "
              "(e.g. TXL_MEMORY_LIMIT=%" G_GUINT64_FORMAT "G) if the file is "
              "trusted", path, need / 1e6, f[F_MEMLEN], f[F_MAXSEG], ps->raw,
              allowed / 1e6, m ? "what the model implies plus" : "",
              budget >> 20, (guint64)MIN(need / 1073741824.0 + 1, 1e9));
  return FALSE;
}

static void
read_header(Parsed *ps, const guint8 *head)
{
  TxlReader r;
  txl_reader_init_data(&r, head + 16, HEADER_SIZE - 16);
  memcpy(ps->model, txl_get_raw(&r, 64), 64);
  memcpy(ps->vocab, txl_get_raw(&r, 64), 64);
  for (int i = 0; i < N_INTS; i++)
    ps->f[i] = (gint32)txl_get_u32(&r);
  ps->seen = (gint64)txl_get_u64(&r);
  ps->sbytes = txl_get_u64(&r);
  ps->raw = txl_get_u64(&r);
  ps->comp = txl_get_u64(&r);
}

/* Reads a snapshot: only a regular file; the header first, and the rest
 * only once its sizes agree with the file's and fit the budget (m: the
 * model it is loaded with, NULL when there is none). */
static gboolean
read_file(const char *path, const TxlModel *m, Parsed *ps, GError **error)
{
  guint64 size;
  int fd = txl_snapfile_open(path, &size, error);
  if (fd < 0)
    return FALSE;
  guint8 head[HEADER_SIZE];
  gboolean ok = FALSE;
  gsize hn = (gsize)MIN(size, (guint64)HEADER_SIZE);
  if (!txl_snapfile_read(fd, 0, head, hn, path, error))
    goto out;
  if (hn < 16 || memcmp(head, MAGIC, 8) != 0) {
    bad(error, path, hn >= 8 && memcmp(head, MAGIC, 8) == 0
                         ? "truncated snapshot"
                         : "not a txl snapshot (bad magic)");
    goto out;
  }
  guint32 version = txl_le_get32(head + 8), hsize = txl_le_get32(head + 12);
  if (version != VERSION || hsize != HEADER_SIZE) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "%s: snapshot format version %u (header %u bytes); this "
                "reader knows version %u", path, version, hsize, VERSION);
    goto out;
  }
  if (size < HEADER_SIZE + DIGEST) {
    bad(error, path, "truncated snapshot");
    goto out;
  }
  read_header(ps, head);
  if (ps->comp != size - HEADER_SIZE - DIGEST) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: checksum mismatch: the snapshot is corrupt or truncated "
                "(%" G_GUINT64_FORMAT " bytes of payload, its header "
                "declares %" G_GUINT64_FORMAT ")", path,
                size - HEADER_SIZE - DIGEST, ps->comp);
    goto out;
  }
  if (!check_budget(path, m, ps, error))
    goto out;
  ps->len = (gsize)size;
  if (!(ps->file = g_try_malloc(ps->len))) {
    bad(error, path, "not enough memory to read the snapshot");
    goto out;
  }
  ok = txl_snapfile_read(fd, 0, ps->file, ps->len, path, error);
out:
  close(fd);
  return ok;
}

static gboolean
parse(const char *path, const TxlModel *m, Parsed *ps, GError **error)
{
  memset(ps, 0, sizeof *ps);
  if (!read_file(path, m, ps, error))
    return FALSE;
  const guint8 *file = ps->file;
  gsize len = ps->len;
  guint8 digest[DIGEST];
  sha256(file, len - DIGEST, digest);
  if (memcmp(digest, file + len - DIGEST, DIGEST) != 0)
    return bad(error, path,
               "checksum mismatch: the snapshot is corrupt or truncated");
  const gint32 *f = ps->f;
  /* one zstd frame, declaring exactly the size the header does */
  if (ZSTD_findFrameCompressedSize(file + HEADER_SIZE, ps->comp) != ps->comp ||
      ZSTD_getFrameContentSize(file + HEADER_SIZE, ps->comp) != ps->raw)
    return bad(error, path, "payload size does not match the header");
  if ((f[F_KIND] != TXL_MEMORY_KV && f[F_KIND] != TXL_MEMORY_HIDDEN) ||
      f[F_SEG] < 1 || f[F_NPEND] < 0 || f[F_NPEND] > f[F_SEG] ||
      f[F_MLEN] < 0 || f[F_MLEN] > f[F_MEMLEN] || ps->seen < 0 ||
      f[F_PREC] < TXL_SNAPSHOT_F32 || f[F_PREC] > TXL_SNAPSHOT_BF16 ||
      f[F_SHUF] < 0 || f[F_SHUF] > 1 || f[F_NSECT] < 0 ||
      f[F_NSECT] > MAX_SECTIONS || ps->sbytes > ps->raw)
    return bad(error, path, "inconsistent header fields");
  /* everything the header implies is checked before anything is
   * allocated: a checksum only proves the file is what was written */
  if (f[F_MEMLEN] < 0 || f[F_MEMLEN] > (1 << 20) || f[F_MAXSEG] < 1 ||
      f[F_MAXSEG] > (1 << 20) || f[F_SEG] > f[F_MAXSEG] ||
      (gint64)f[F_MAXSEG] * ((gint64)f[F_MEMLEN] + f[F_MAXSEG]) > (1 << 28) ||
      f[F_CLAMP] < 0 || f[F_CLAMP] > (1 << 20) || f[F_SAME] < 0 ||
      f[F_SAME] > 1 || f[F_HASLAST] < 0 || f[F_HASLAST] > 1 ||
      f[F_NLAYER] < 1 || f[F_NLAYER] > 4096 || f[F_DMODEL] < 1 ||
      f[F_DMODEL] > (1 << 20) || f[F_HD] < 1 || f[F_HD] > (1 << 20))
    return bad(error, path, "stream lengths out of range");
  guint64 width = f[F_KIND] == TXL_MEMORY_HIDDEN ? (guint64)f[F_DMODEL]
                                                 : 2 * (guint64)f[F_HD];
  guint64 nf = (guint64)f[F_NLAYER] * f[F_MLEN] * width + f[F_DMODEL];
  if (ps->raw != nf * txl_snapcodec_width(f[F_PREC]) +
                     (guint64)f[F_NPEND] * 4 + ps->sbytes)
    return bad(error, path, "payload size does not match the header");
  return TRUE;
}

static guint8 *
decompress(const char *path, const Parsed *ps, GError **error)
{
  guint8 *payload = g_try_malloc(ps->raw ? ps->raw : 1);
  if (!payload) {
    bad(error, path, "not enough memory for the state");
    return NULL;
  }
  gsize got = ZSTD_decompress(payload, ps->raw, ps->file + HEADER_SIZE,
                              ps->comp);
  if (ZSTD_isError(got) || got != ps->raw) {
    g_free(payload);
    bad(error, path, "the compressed state does not decompress");
    return NULL;
  }
  return payload;
}

static GHashTable *
read_sections(const char *path, GBytes *payload, gsize off, gsize n,
              int count, GError **error)
{
  /* the sessions section is a view of the payload, not a copy: it is
   * nearly all of it, and txl_sessions_load() drops it once read */
  GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                        (GDestroyNotify)g_bytes_unref);
  const guint8 *base = g_bytes_get_data(payload, NULL);
  TxlReader r;
  txl_reader_init_data(&r, base + off, n);
  for (int i = 0; i < count; i++) {
    guint32 nl = txl_get_u32(&r);
    if (!r.ok || nl == 0 || nl > MAX_NAME)
      goto fail;
    const guint8 *np = txl_get_raw(&r, nl);
    gsize len;
    const guint8 *d = txl_get_blob(&r, &len, txl_reader_left(&r));
    if (!r.ok)
      goto fail;
    char *name = g_strndup((const char *)np, nl);
    if (strlen(name) != nl || g_hash_table_contains(t, name)) {
      g_free(name);
      goto fail;
    }
    /* the others are copied, so that a table kept for later (an
     * element's neighbours fetch theirs at start) does not hold the
     * whole payload */
    g_hash_table_insert(t, name, strcmp(name, TXL_SESSIONS_SECTION) == 0
                                     ? g_bytes_new_from_bytes(
                                           payload, (gsize)(d - base), len)
                                     : g_bytes_new(d, len));
  }
  if (txl_reader_done(&r))
    return t;
fail:
  g_hash_table_unref(t);
  bad(error, path, "malformed sections");
  return NULL;
}

static TxlScorer *
load_impl(TxlModel *m, const char *path, TxlScoreFunc func, gpointer data,
          GHashTable **sections, gboolean want_sessions, GError **error)
{
  Parsed ps;
  TxlScorer *sc = NULL;
  guint8 *payload = NULL;
  GBytes *pb = NULL;
  GHashTable *sect = NULL;
  guint8 *state = NULL;
  if (!parse(path, m, &ps, error))
    goto out;
  const gint32 *f = ps.f;
  const TxlConfig *c = txl_model_config(m);
  if (memcmp(ps.model, txl_model_id(m), 64) != 0) {
    bad(error, path, "made with another model (model id differs)");
    goto out;
  }
  if (memcmp(ps.vocab, txl_model_vocab_id(m), 64) != 0) {
    bad(error, path, "made with another vocabulary");
    goto out;
  }
  if (f[F_NLAYER] != c->n_layer || f[F_DMODEL] != c->d_model ||
      f[F_HD] != c->n_head * c->d_head) {
    bad(error, path, "dimensions differ from the model's");
    goto out;
  }
  if (!(payload = decompress(path, &ps, error)))
    goto out;
  pb = g_bytes_new_take(payload, ps.raw ? ps.raw : 1);
  g_clear_pointer(&ps.file, g_free); /* the compressed bytes are done */
  gsize w = txl_snapcodec_width(f[F_PREC]);
  gsize tail = (gsize)f[F_NPEND] * 4 + ps.sbytes;
  gsize nf = (ps.raw - tail) / w;
  if (!(sect = read_sections(path, pb, nf * w + f[F_NPEND] * 4, ps.sbytes,
                             f[F_NSECT], error)))
    goto out;
  /* one stream or many sessions: each loader takes only its own kind */
  if (g_hash_table_contains(sect, TXL_SESSIONS_SECTION) != want_sessions) {
    bad(error, path, want_sessions
        ? "not a txlsessions snapshot: it holds one stream (continue it with "
          "txlmodel or `txl score`)"
        : "a txlsessions snapshot (the memories of many sessions): continue "
          "it with txlsessions or txl_sessions_load(), not as one stream");
    goto out;
  }
  /* the scorer's state bytes, decoded from the file: txl_scorer_state_set_data
   * checks every value (finite memory, ids in the vocabulary) before it
   * changes anything (the last hidden row counts only when there is one) */
  gsize slen = TXL_STATE_HEADER + 4 * (nf + (gsize)f[F_NPEND]);
  if (!(state = g_try_malloc(slen))) {
    bad(error, path, "not enough memory for the state");
    goto out;
  }
  txl_scorer_state_header(state, f, ps.seen);
  txl_snapcodec_decode(payload, nf, f[F_PREC], f[F_SHUF], NULL,
                       (float *)(void *)(state + TXL_STATE_HEADER));
  txl_le_f32_inplace(state + TXL_STATE_HEADER, nf);
  memcpy(state + TXL_STATE_HEADER + 4 * nf, payload + nf * w,
         (gsize)f[F_NPEND] * 4);
  TxlStreamOptions o = { f[F_MEMLEN], f[F_CLAMP], f[F_SAME], f[F_MAXSEG],
                         (TxlMemoryKind)f[F_KIND] };
  sc = txl_scorer_new(m, &o, f[F_SEG], func, data, error);
  if (!sc)
    goto out;
  if (!txl_scorer_state_set_data(sc, state, slen, error)) {
    g_prefix_error(error, "%s: ", path);
    goto fail;
  }
  if (sections)
    *sections = g_steal_pointer(&sect);
  goto out;
fail:
  g_clear_pointer(&sc, txl_scorer_free);
out:
  g_free(state);
  if (pb)
    g_bytes_unref(pb); /* the sections handed out keep it alive */
  else
    g_free(payload);
  g_clear_pointer(&sect, g_hash_table_unref);
  g_free(ps.file);
  return sc;
}

TxlScorer *
txl_scorer_load_full(TxlModel *m, const char *path, TxlScoreFunc func,
                     gpointer data, GHashTable **sections, GError **error)
{
  return load_impl(m, path, func, data, sections, FALSE, error);
}

TxlScorer *
txl_snapshot_load_sessions(TxlModel *m, const char *path,
                           GHashTable **sections, GError **error)
{
  return load_impl(m, path, NULL, NULL, sections, TRUE, error);
}

TxlScorer *
txl_scorer_load(TxlModel *m, const char *path, TxlScoreFunc func,
                gpointer data, GError **error)
{
  return txl_scorer_load_full(m, path, func, data, NULL, error);
}

static const char *const precision_names[] = { "f32", "f16", "bf16" };

gboolean
txl_snapshot_describe(const char *path, GString *out, GError **error)
{
  Parsed ps;
  gboolean ok = FALSE;
  guint8 *payload = NULL;
  GBytes *pb = NULL;
  GHashTable *sect = NULL;
  if (!parse(path, NULL, &ps, error) || !(payload = decompress(path, &ps, error)))
    goto out;
  pb = g_bytes_new_take(payload, ps.raw ? ps.raw : 1);
  const gint32 *f = ps.f;
  gsize tail = (gsize)f[F_NPEND] * 4 + ps.sbytes;
  if (!(sect = read_sections(path, pb, (ps.raw - tail) + f[F_NPEND] * 4,
                             ps.sbytes, f[F_NSECT], error)))
    goto out;
  g_string_append_printf(out,
      "{\"format_version\": %u, \"model_id\": \"%s\", \"vocab_id\": \"%s\", "
      "\"n_layer\": %d, \"d_model\": %d, \"heads_x_d_head\": %d, "
      "\"memory\": \"%s\", \"mem_len\": %d, \"clamp_len\": %d, "
      "\"same_length\": %s, \"max_segment\": %d, \"mem_used\": %d, "
      "\"segment\": %d, \"pending_tokens\": %d, \"tokens_seen\": %"
      G_GINT64_FORMAT ", \"precision\": \"%s\", \"shuffle\": %s, "
      "\"sections\": {", VERSION, ps.model, ps.vocab, f[F_NLAYER],
      f[F_DMODEL], f[F_HD], f[F_KIND] == TXL_MEMORY_HIDDEN ? "hidden" : "kv",
      f[F_MEMLEN], f[F_CLAMP], f[F_SAME] ? "true" : "false", f[F_MAXSEG],
      f[F_MLEN], f[F_SEG], f[F_NPEND], ps.seen, precision_names[f[F_PREC]],
      f[F_SHUF] ? "true" : "false");
  GList *keys = g_list_sort(g_hash_table_get_keys(sect), (GCompareFunc)strcmp);
  for (GList *l = keys; l; l = l->next) {
    if (l != keys)
      g_string_append(out, ", ");
    txl_json_append_string(out, l->data, strlen(l->data));
    g_string_append_printf(out, ": %zu",
        g_bytes_get_size(g_hash_table_lookup(sect, l->data)));
  }
  g_list_free(keys);
  /* who wrote it (null: a file from before writers were recorded) */
  GBytes *wb = g_hash_table_lookup(sect, TXL_SNAPSHOT_WRITER_SECTION);
  g_string_append(out, "}, \"writer\": ");
  if (wb) {
    gsize wn;
    const char *wd = g_bytes_get_data(wb, &wn);
    txl_json_append_string(out, wd ? wd : "", wn);
  } else {
    g_string_append(out, "null");
  }
  g_string_append_printf(out, ", \"state_bytes\": %" G_GUINT64_FORMAT
      ", \"file_bytes\": %zu, \"compression_ratio\": %.3f, "
      "\"checksum\": \"ok\"}\n", ps.raw, ps.len,
      ps.len ? (double)ps.raw / ps.len : 0.0);
  ok = TRUE;
out:
  g_clear_pointer(&sect, g_hash_table_unref);
  if (pb)
    g_bytes_unref(pb);
  else
    g_free(payload);
  g_free(ps.file);
  return ok;
}
