/* Scorer snapshots.  Layout (little endian):
 *
 *   header (HEADER_SIZE bytes): magic "TXLSNAP1", u32 version, u32 header
 *     size, model id and vocabulary id (64 hex chars each), then i32 fields
 *     n_layer, d_model, HD, memory kind, mem_len, clamp_len, same_length,
 *     max_segment, mem used, has_last, segment, pending; i64 tokens seen;
 *     u64 raw and compressed payload sizes
 *   payload: zstd frame of [state floats][pending tokens]
 *   trailer: SHA-256 of header and payload (32 bytes)
 *
 * The checksum is verified first, so a flipped bit anywhere is caught
 * before a single field is believed; every field is then checked against
 * the model and the sizes it implies. */
#include "model_internal.h"
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define MAGIC "TXLSNAP1"
#define VERSION 1u
#define N_INTS 12
#define HEADER_SIZE (8 + 4 + 4 + 64 + 64 + 4 * N_INTS + 8 + 8 + 8)
#define DIGEST 32

enum { F_NLAYER, F_DMODEL, F_HD, F_KIND, F_MEMLEN, F_CLAMP, F_SAME, F_MAXSEG,
       F_MLEN, F_HASLAST, F_SEG, F_NPEND };

static void
put32(guint8 **p, guint32 v)
{
  v = GUINT32_TO_LE(v);
  memcpy(*p, &v, 4);
  *p += 4;
}

static void
put64(guint8 **p, guint64 v)
{
  v = GUINT64_TO_LE(v);
  memcpy(*p, &v, 8);
  *p += 8;
}

static guint32
get32(const guint8 **p)
{
  guint32 v;
  memcpy(&v, *p, 4);
  *p += 4;
  return GUINT32_FROM_LE(v);
}

static guint64
get64(const guint8 **p)
{
  guint64 v;
  memcpy(&v, *p, 8);
  *p += 8;
  return GUINT64_FROM_LE(v);
}

static void
sha256(const guint8 *data, gsize len, guint8 *out)
{
  GChecksum *cs = g_checksum_new(G_CHECKSUM_SHA256);
  g_checksum_update(cs, data, len);
  gsize n = DIGEST;
  g_checksum_get_digest(cs, out, &n);
  g_checksum_free(cs);
}

/* temporary file beside the target, fsync, rename: a crash at any point
 * leaves the previous snapshot whole */
static gboolean
write_atomic(const char *path, const guint8 *data, gsize len, GError **error)
{
  g_autofree char *tmp = g_strconcat(path, ".XXXXXX", NULL);
  int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot create: %s", tmp,
                g_strerror(errno));
    return FALSE;
  }
  gsize done = 0;
  while (done < len) {
    ssize_t w = write(fd, data + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    done += (gsize)w;
  }
  int e = errno;
  gboolean ok = done == len && fsync(fd) == 0;
  if (!ok && done == len)
    e = errno;
  close(fd);
  if (ok && g_rename(tmp, path) != 0) {
    e = errno;
    ok = FALSE;
  }
  if (!ok) {
    g_unlink(tmp);
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot write: %s", path,
                g_strerror(e));
    return FALSE;
  }
  /* the rename itself must reach the disk */
  g_autofree char *dir = g_path_get_dirname(path);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return TRUE;
}

gboolean
txl_scorer_save(TxlScorer *sc, const char *path, GError **error)
{
  TxlStream *st = txl_scorer_stream(sc);
  TxlStreamOptions o;
  txl_stream_get_options(st, &o);
  int mlen_now = txl_stream_mem_used(st);
  gsize nf = txl_stream_state_floats(st, mlen_now);
  int npend;
  const int32_t *pend = txl_scorer_pending(sc, &npend);
  gsize raw = nf * 4 + (gsize)npend * 4;
  guint8 *payload = g_malloc(raw);
  int mlen;
  gboolean has_last;
  txl_stream_state_export(st, (float *)payload, &mlen, &has_last);
  memcpy(payload + nf * 4, pend, (gsize)npend * 4);
  gsize bound = ZSTD_compressBound(raw);
  gsize total = HEADER_SIZE + bound + DIGEST;
  guint8 *file = g_malloc(total);
  gsize comp = ZSTD_compress(file + HEADER_SIZE, bound, payload, raw, 3);
  g_free(payload);
  if (ZSTD_isError(comp)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: compression failed: %s",
                path, ZSTD_getErrorName(comp));
    g_free(file);
    return FALSE;
  }
  const TxlModel *model = txl_stream_model(st);
  const TxlConfig *c = txl_model_config(model);
  guint8 *p = file;
  memcpy(p, MAGIC, 8);
  p += 8;
  put32(&p, VERSION);
  put32(&p, HEADER_SIZE);
  memcpy(p, txl_model_id(model), 64);
  p += 64;
  memcpy(p, txl_model_vocab_id(model), 64);
  p += 64;
  gint32 f[N_INTS] = { c->n_layer, c->d_model, c->n_head * c->d_head,
                       (gint32)o.memory, o.mem_len, o.clamp_len,
                       o.same_length, o.max_segment, mlen, has_last,
                       txl_scorer_segment(sc), npend };
  for (int i = 0; i < N_INTS; i++)
    put32(&p, (guint32)f[i]);
  put64(&p, (guint64)txl_scorer_tokens_seen(sc));
  put64(&p, raw);
  put64(&p, comp);
  sha256(file, HEADER_SIZE + comp, file + HEADER_SIZE + comp);
  gboolean ok = write_atomic(path, file, HEADER_SIZE + comp + DIGEST, error);
  g_free(file);
  return ok;
}

static gboolean
bad(GError **error, const char *path, const char *what)
{
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT, "%s: %s", path, what);
  return FALSE;
}

TxlScorer *
txl_scorer_load(TxlModel *m, const char *path, TxlScoreFunc func,
                gpointer data, GError **error)
{
  g_autofree guint8 *file = NULL;
  gsize len = 0;
  GError *e = NULL;
  if (!g_file_get_contents(path, (char **)&file, &len, &e)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s", e->message);
    g_error_free(e);
    return NULL;
  }
  if (len < HEADER_SIZE + DIGEST || memcmp(file, MAGIC, 8) != 0) {
    bad(error, path, len >= 8 && memcmp(file, MAGIC, 8) == 0
                       ? "truncated snapshot"
                       : "not a txl snapshot (bad magic)");
    return NULL;
  }
  const guint8 *p = file + 8;
  guint32 version = get32(&p), hsize = get32(&p);
  if (version != VERSION || hsize != HEADER_SIZE) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "%s: snapshot format version %u (header %u bytes); this "
                "reader knows version %u", path, version, hsize, VERSION);
    return NULL;
  }
  guint8 digest[DIGEST];
  sha256(file, len - DIGEST, digest);
  if (memcmp(digest, file + len - DIGEST, DIGEST) != 0) {
    bad(error, path, "checksum mismatch: the snapshot is corrupt or truncated");
    return NULL;
  }
  const TxlConfig *c = txl_model_config(m);
  if (memcmp(p, txl_model_id(m), 64) != 0) {
    bad(error, path, "made with another model (model id differs)");
    return NULL;
  }
  p += 64;
  if (memcmp(p, txl_model_vocab_id(m), 64) != 0) {
    bad(error, path, "made with another vocabulary");
    return NULL;
  }
  p += 64;
  gint32 f[N_INTS];
  for (int i = 0; i < N_INTS; i++)
    f[i] = (gint32)get32(&p);
  gint64 seen = (gint64)get64(&p);
  guint64 raw = get64(&p), comp = get64(&p);
  if (f[F_NLAYER] != c->n_layer || f[F_DMODEL] != c->d_model ||
      f[F_HD] != c->n_head * c->d_head) {
    bad(error, path, "dimensions differ from the model's");
    return NULL;
  }
  if (comp != len - HEADER_SIZE - DIGEST ||
      (f[F_KIND] != TXL_MEMORY_KV && f[F_KIND] != TXL_MEMORY_HIDDEN) ||
      f[F_SEG] < 1 || f[F_NPEND] < 0 || f[F_NPEND] > f[F_SEG] ||
      f[F_MLEN] < 0 || f[F_MLEN] > f[F_MEMLEN] || seen < 0) {
    bad(error, path, "inconsistent header fields");
    return NULL;
  }
  /* everything the header implies is checked before anything is
   * allocated: a checksum only proves the file is what was written */
  if (f[F_MEMLEN] < 0 || f[F_MEMLEN] > (1 << 20) || f[F_MAXSEG] < 1 ||
      f[F_MAXSEG] > (1 << 20) || f[F_SEG] > f[F_MAXSEG] ||
      (gint64)f[F_MAXSEG] * ((gint64)f[F_MEMLEN] + f[F_MAXSEG]) > (1 << 28) ||
      f[F_CLAMP] < 0 || f[F_CLAMP] > (1 << 20) || f[F_SAME] < 0 ||
      f[F_SAME] > 1 || f[F_HASLAST] < 0 || f[F_HASLAST] > 1) {
    bad(error, path, "stream lengths out of range");
    return NULL;
  }
  guint64 width = f[F_KIND] == TXL_MEMORY_HIDDEN ? (guint64)c->d_model
                                                 : 2 * (guint64)f[F_HD];
  guint64 want = ((guint64)c->n_layer * f[F_MLEN] * width + c->d_model) * 4 +
                 (guint64)f[F_NPEND] * 4;
  if (raw != want) {
    bad(error, path, "payload size does not match the header");
    return NULL;
  }
  TxlStreamOptions o = { f[F_MEMLEN], f[F_CLAMP], f[F_SAME], f[F_MAXSEG],
                         (TxlMemoryKind)f[F_KIND] };
  TxlScorer *sc = txl_scorer_new(m, &o, f[F_SEG], func, data, error);
  if (!sc)
    return NULL;
  TxlStream *st = txl_scorer_stream(sc);
  gsize nf = txl_stream_state_floats(st, f[F_MLEN]);
  if (raw != nf * 4 + (guint64)f[F_NPEND] * 4 ||
      ZSTD_getFrameContentSize(file + HEADER_SIZE, comp) != raw) {
    bad(error, path, "payload size does not match the header");
    txl_scorer_free(sc);
    return NULL;
  }
  guint8 *payload = g_malloc(raw ? raw : 1);
  gsize got = ZSTD_decompress(payload, raw, file + HEADER_SIZE, comp);
  gboolean ok = !ZSTD_isError(got) && got == raw;
  if (!ok)
    bad(error, path, "the compressed state does not decompress");
  ok = ok && txl_stream_state_import(st, (const float *)payload, f[F_MLEN],
                                     f[F_HASLAST] != 0, error) &&
       txl_scorer_restore(sc, (const int32_t *)(payload + nf * 4),
                          f[F_NPEND], seen, error);
  g_free(payload);
  if (!ok) {
    txl_scorer_free(sc);
    return NULL;
  }
  return sc;
}

gboolean
txl_snapshot_describe(const char *path, GString *out, GError **error)
{
  g_autofree guint8 *file = NULL;
  gsize len = 0;
  GError *e = NULL;
  if (!g_file_get_contents(path, (char **)&file, &len, &e)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s", e->message);
    g_error_free(e);
    return FALSE;
  }
  if (len < HEADER_SIZE + DIGEST || memcmp(file, MAGIC, 8) != 0)
    return bad(error, path, len >= 8 && memcmp(file, MAGIC, 8) == 0
                              ? "truncated snapshot"
                              : "not a txl snapshot (bad magic)");
  const guint8 *p = file + 8;
  guint32 version = get32(&p), hsize = get32(&p);
  if (version != VERSION || hsize != HEADER_SIZE) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "%s: snapshot format version %u; this reader knows %u", path,
                version, VERSION);
    return FALSE;
  }
  guint8 digest[DIGEST];
  sha256(file, len - DIGEST, digest);
  if (memcmp(digest, file + len - DIGEST, DIGEST) != 0)
    return bad(error, path,
               "checksum mismatch: the snapshot is corrupt or truncated");
  char model[65] = { 0 }, vocab[65] = { 0 };
  memcpy(model, p, 64);
  memcpy(vocab, p + 64, 64);
  p += 128;
  gint32 f[N_INTS];
  for (int i = 0; i < N_INTS; i++)
    f[i] = (gint32)get32(&p);
  gint64 seen = (gint64)get64(&p);
  guint64 raw = get64(&p), comp = get64(&p);
  if (comp != len - HEADER_SIZE - DIGEST ||
      ZSTD_getFrameContentSize(file + HEADER_SIZE, comp) != raw)
    return bad(error, path, "payload size does not match the header");
  guint8 *payload = g_malloc(raw ? raw : 1);
  gsize got = ZSTD_decompress(payload, raw, file + HEADER_SIZE, comp);
  g_free(payload);
  if (ZSTD_isError(got) || got != raw)
    return bad(error, path, "the compressed state does not decompress");
  g_string_append_printf(out,
      "{\"format_version\": %u, \"model_id\": \"%s\", \"vocab_id\": \"%s\", "
      "\"n_layer\": %d, \"d_model\": %d, \"heads_x_d_head\": %d, "
      "\"memory\": \"%s\", \"mem_len\": %d, \"clamp_len\": %d, "
      "\"same_length\": %s, \"max_segment\": %d, \"mem_used\": %d, "
      "\"segment\": %d, \"pending_tokens\": %d, \"tokens_seen\": %"
      G_GINT64_FORMAT ", \"state_bytes\": %" G_GUINT64_FORMAT
      ", \"file_bytes\": %zu, \"compression_ratio\": %.3f, "
      "\"checksum\": \"ok\"}\n", version, model, vocab, f[F_NLAYER],
      f[F_DMODEL], f[F_HD], f[F_KIND] == TXL_MEMORY_HIDDEN ? "hidden" : "kv",
      f[F_MEMLEN], f[F_CLAMP], f[F_SAME] ? "true" : "false", f[F_MAXSEG],
      f[F_MLEN], f[F_SEG], f[F_NPEND], seen, raw, len,
      len ? (double)raw / len : 0.0);
  return TRUE;
}
