/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A scorer's state as bytes (docs/api.md, "State as bytes"): its stream's
 * memory and the tokens waiting for their segment, over a caller's buffer,
 * as llama.h's llama_state_get_size/get_data/set_data do.  Snapshot files
 * (lib/state/snapshot.c) are written on top of these bytes.  Layout
 * (little endian):
 *
 *   "TXLS", u32 version; i32 n_layer, d_model, n_head x d_head, memory
 *   kind, mem_len, clamp_len, same_length, max_segment, memory used,
 *   has_last, segment, pending; i64 tokens seen (STATE_HEADER bytes)
 *   f32 memory: every layer's rows (keys then values, or hidden states),
 *     then the last hidden row (zeros when there is none)
 *   i32 pending tokens
 *
 * Set checks every field against the scorer it is given (its model and
 * settings) and every value (finite floats, ids in the vocabulary) before
 * it changes anything; it allocates nothing beyond the bytes' own size. */
#include "stream_state.h"
#include "bytes.h"

#include <math.h>
#include <string.h>

#define STATE_MAGIC "TXLS"
#define STATE_VERSION 1u

static void
fields_of(TxlScorer *sc, gint32 *f)
{
  TxlStream *st = txl_scorer_stream(sc);
  const TxlConfig *c = txl_model_config(txl_stream_model(st));
  TxlStreamOptions o;
  txl_stream_get_options(st, &o);
  int npend;
  txl_scorer_pending(sc, &npend);
  gint32 v[TXL_STATE_N_FIELDS] = {
    c->n_layer, c->d_model, c->n_head * c->d_head, (gint32)o.memory,
    o.mem_len, o.clamp_len, o.same_length, o.max_segment,
    txl_stream_mem_used(st), 0, txl_scorer_segment(sc), npend };
  memcpy(f, v, sizeof v);
}

gsize
txl_scorer_state_get_size(TxlScorer *sc)
{
  TxlStream *st = txl_scorer_stream(sc);
  int npend;
  txl_scorer_pending(sc, &npend);
  return TXL_STATE_HEADER +
         4 * (txl_stream_state_floats(st, txl_stream_mem_used(st)) +
              (gsize)npend);
}

gsize
txl_scorer_state_get_data(TxlScorer *sc, guint8 *dst, gsize size)
{
  gsize len = txl_scorer_state_get_size(sc);
  if (!dst || size < len)
    return 0;
  TxlStream *st = txl_scorer_stream(sc);
  gint32 f[TXL_STATE_N_FIELDS];
  fields_of(sc, f);
  gsize nf = txl_stream_state_floats(st, f[TXL_STATE_MLEN]);
  int mlen;
  gboolean has_last;
  /* exported where it goes when the buffer is aligned for floats */
  gboolean direct = ((guintptr)(dst + TXL_STATE_HEADER) % sizeof(float)) == 0;
  float *fl = direct ? (float *)(void *)(dst + TXL_STATE_HEADER)
                     : g_new(float, nf);
  txl_stream_state_export(st, fl, &mlen, &has_last);
  gsize dm = (gsize)f[TXL_STATE_DMODEL];
  if (!has_last) /* not a state, only scratch: stored as zeros */
    memset(fl + nf - dm, 0, sizeof(float) * dm);
  if (!direct) {
    memcpy(dst + TXL_STATE_HEADER, fl, 4 * nf);
    g_free(fl);
  }
  txl_le_f32_inplace(dst + TXL_STATE_HEADER, nf);
  f[TXL_STATE_HASLAST] = has_last;
  txl_scorer_state_header(dst, f, txl_scorer_tokens_seen(sc));
  int npend;
  const int32_t *pend = txl_scorer_pending(sc, &npend);
  guint8 *pp = dst + TXL_STATE_HEADER + 4 * nf;
  for (int i = 0; i < npend; i++)
    txl_le_put32(pp + 4 * i, (guint32)pend[i]);
  return len;
}

void
txl_scorer_state_header(guint8 *dst, const gint32 *f, gint64 seen)
{
  TxlWriter w = { dst };
  txl_w_raw(&w, STATE_MAGIC, 4);
  txl_w_u32(&w, STATE_VERSION);
  for (int i = 0; i < TXL_STATE_N_FIELDS; i++)
    txl_w_u32(&w, (guint32)f[i]);
  txl_w_u64(&w, (guint64)seen);
}

gboolean
txl_scorer_state_parse(const guint8 *src, gsize size, gint32 *f,
                       gint64 *seen, GError **error)
{
  if (!src || size < TXL_STATE_HEADER || memcmp(src, STATE_MAGIC, 4) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "scorer state: %s", size < TXL_STATE_HEADER && src &&
                size >= 4 && memcmp(src, STATE_MAGIC, 4) == 0
                ? "truncated" : "not a scorer state (bad magic)");
    return FALSE;
  }
  guint32 version = txl_le_get32(src + 4);
  if (version != STATE_VERSION) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "scorer state: version %u; this reader knows version %u",
                version, STATE_VERSION);
    return FALSE;
  }
  for (int i = 0; i < TXL_STATE_N_FIELDS; i++)
    f[i] = (gint32)txl_le_get32(src + 8 + 4 * i);
  *seen = (gint64)txl_le_get64(src + 8 + 4 * TXL_STATE_N_FIELDS);
  return TRUE;
}

static gboolean
bad_state(GError **error, const char *what)
{
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT, "scorer state: %s", what);
  return FALSE;
}

/* The fields against the scorer that is to take them. */
static gboolean
check_fields(TxlScorer *sc, const gint32 *f, gint64 seen, gsize size,
             gsize *nf, GError **error)
{
  gint32 own[TXL_STATE_N_FIELDS];
  fields_of(sc, own);
  if (f[TXL_STATE_NLAYER] != own[TXL_STATE_NLAYER] ||
      f[TXL_STATE_DMODEL] != own[TXL_STATE_DMODEL] ||
      f[TXL_STATE_HD] != own[TXL_STATE_HD])
    return bad_state(error, "dimensions differ from the model's");
  for (int i = TXL_STATE_KIND; i <= TXL_STATE_SAME; i++)
    if (f[i] != own[i])
      return bad_state(error, "made with other stream settings (memory "
                              "kind, mem_len, clamp_len or same_length)");
  if (f[TXL_STATE_SEG] != own[TXL_STATE_SEG] ||
      f[TXL_STATE_MAXSEG] < f[TXL_STATE_SEG])
    return bad_state(error, "made with another segment length");
  if (f[TXL_STATE_MLEN] < 0 || f[TXL_STATE_MLEN] > own[TXL_STATE_MEMLEN] ||
      f[TXL_STATE_HASLAST] < 0 || f[TXL_STATE_HASLAST] > 1 ||
      f[TXL_STATE_NPEND] < 0 || f[TXL_STATE_NPEND] > f[TXL_STATE_SEG] ||
      seen < f[TXL_STATE_NPEND])
    return bad_state(error, "inconsistent fields");
  *nf = txl_stream_state_floats(txl_scorer_stream(sc), f[TXL_STATE_MLEN]);
  if (size != TXL_STATE_HEADER + 4 * (*nf + (gsize)f[TXL_STATE_NPEND]))
    return bad_state(error, "its size does not match its fields");
  return TRUE;
}

/* Every float finite, the last hidden row only when there is one: a
 * memory holding NaN or infinity would make every later score NaN. */
static gboolean
check_floats(const float *fl, gsize nf, gsize dm, gboolean has_last,
             GError **error)
{
  gsize n = nf - (has_last ? 0 : MIN(nf, dm));
  for (gsize i = 0; i < n; i++) {
    if (!isfinite(fl[i])) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "the memory holds a value that is not a finite number "
                  "(%g at float %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT "): "
                  "refused, a stream continued from it would score NaN",
                  (double)fl[i], i, nf);
      return FALSE;
    }
  }
  return TRUE;
}

/* A scorer's bytes into sc.  bare: sc only wraps a bare stream, which has
 * no place for tokens waiting for their segment, so bytes with any are
 * refused, first: that says more than the checks against sc would. */
static gboolean
set_data(TxlScorer *sc, const guint8 *src, gsize size, gboolean bare,
         GError **error)
{
  gint32 f[TXL_STATE_N_FIELDS];
  gint64 seen;
  gsize nf;
  if (!txl_scorer_state_parse(src, size, f, &seen, error))
    return FALSE;
  if (bare && (f[TXL_STATE_NPEND] != 0 || seen != 0)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "state bytes of a scorer with %d pending tokens after %"
                G_GINT64_FORMAT ": a bare stream takes only a stream's "
                "(txl_stream_state_get_data)", f[TXL_STATE_NPEND], seen);
    return FALSE;
  }
  if (!check_fields(sc, f, seen, size, &nf, error))
    return FALSE;
  const guint8 *fp = src + TXL_STATE_HEADER;
  /* read in place where the host's floats are these bytes */
  gboolean direct = G_BYTE_ORDER == G_LITTLE_ENDIAN &&
                    ((guintptr)fp % sizeof(float)) == 0;
  float *copy = NULL;
  if (!direct) {
    if (!(copy = g_try_new(float, MAX(nf, 1))))
      return bad_state(error, "not enough memory");
    for (gsize i = 0; i < nf; i++) {
      guint32 u = txl_le_get32(fp + 4 * i);
      memcpy(copy + i, &u, 4);
    }
  }
  const float *fl = direct ? (const float *)(const void *)fp : copy;
  int npend = f[TXL_STATE_NPEND];
  int32_t *pend = g_new(int32_t, npend + 1);
  for (int i = 0; i < npend; i++)
    pend[i] = (int32_t)txl_le_get32(fp + 4 * nf + 4 * (gsize)i);
  /* everything is checked before the import, which then cannot fail */
  gboolean ok = check_floats(fl, nf, (gsize)f[TXL_STATE_DMODEL],
                             f[TXL_STATE_HASLAST] != 0, error) &&
                txl_scorer_check_pending(sc, pend, npend, seen, error) &&
                txl_stream_state_import(txl_scorer_stream(sc), fl,
                                        f[TXL_STATE_MLEN],
                                        f[TXL_STATE_HASLAST] != 0, error) &&
                txl_scorer_restore(sc, pend, npend, seen, error);
  g_free(pend);
  g_free(copy);
  return ok;
}

gboolean
txl_scorer_state_set_data(TxlScorer *sc, const guint8 *src, gsize size,
                          GError **error)
{
  return set_data(sc, src, size, FALSE, error);
}

/* ---- a bare stream ---------------------------------------------------- *
 * The same bytes as a scorer over the stream with nothing pending and no
 * tokens counted: a stream's state is its scorer's without the scorer. */

gsize
txl_stream_state_get_size(TxlStream *st)
{
  TxlScorer *sc = txl_scorer_wrap(st, 0);
  gsize n = txl_scorer_state_get_size(sc);
  txl_scorer_unwrap(sc);
  return n;
}

gsize
txl_stream_state_get_data(TxlStream *st, guint8 *dst, gsize size)
{
  TxlScorer *sc = txl_scorer_wrap(st, 0);
  gsize n = txl_scorer_state_get_data(sc, dst, size);
  txl_scorer_unwrap(sc);
  return n;
}

gboolean
txl_stream_state_set_data(TxlStream *st, const guint8 *src, gsize size,
                          GError **error)
{
  TxlScorer *sc = txl_scorer_wrap(st, 0);
  gboolean ok = set_data(sc, src, size, TRUE, error);
  txl_scorer_unwrap(sc);
  return ok;
}
