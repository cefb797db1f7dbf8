/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Scored tokens -> scored lines (lines.h).  Every user of a line's scores
 * goes through here, so `txl score`, the elements, TxlSessions and
 * `txl eval`'s calibration agree bit for bit on what a line costs. */
#include "lines.h"
#include "jsonstr.h"

#include <math.h>
#include <string.h>

void
txl_line_acc_init(TxlLineAcc *a)
{
  memset(a, 0, sizeof *a);
}

/* The ring's k-th oldest slot. */
static guint32
slot(const TxlLineAcc *a, guint32 k)
{
  return (a->win_head + k) % (TXL_LINE_WINDOW_BYTES + 1);
}

void
txl_line_acc_add(TxlLineAcc *a, double nll, guint norm_bytes)
{
  TxlLineScore *s = &a->s;
  guint b = MAX(norm_bytes, 1u);
  s->tokens++;
  s->norm_bytes += b;
  if (!isfinite(nll)) {
    /* counted, kept out of every sum: one NaN would otherwise turn the
     * line's numbers into NaN, which compares false with any threshold */
    s->nonfinite++;
    return;
  }
  s->nll += nll;
  s->max_token = MAX(s->max_token, nll);
  /* the window: the shortest run of the line's latest tokens that holds
   * at least TXL_LINE_WINDOW_BYTES normalised bytes.  After the pops the
   * tokens behind the oldest hold fewer than that, each at least one
   * byte, so the ring never needs more than WINDOW + 1 slots. */
  guint32 k = slot(a, a->win_n);
  a->win_nll[k] = (float)nll;
  a->win_b[k] = b;
  a->win_n++;
  a->win_bytes += b;
  while (a->win_n > 1 &&
         a->win_bytes - a->win_b[a->win_head] >= TXL_LINE_WINDOW_BYTES) {
    a->win_bytes -= a->win_b[a->win_head];
    a->win_head = slot(a, 1);
    a->win_n--;
  }
  if (a->win_bytes < TXL_LINE_WINDOW_BYTES)
    return;
  /* summed afresh, oldest first: no running difference to drift, so a
   * resumed line computes exactly what an uninterrupted one does */
  double sum = 0.0;
  for (guint32 i = 0; i < a->win_n; i++)
    sum += a->win_nll[slot(a, i)];
  double w = sum / G_LN2 / (double)a->win_bytes;
  s->window = MAX(s->window, w);
}

guint
txl_token_norm_bytes(const TxlTokenizer *tok, int32_t id)
{
  if (!tok)
    return 1;
  gsize len = 0;
  const char *sym = txl_tokenizer_symbol(tok, id, &len);
  if (!sym)
    return 1;
  switch (txl_tokenizer_type(tok)) {
  case TXL_TOKENIZER_WORD:
    /* a word and the one separator the model sees after it; <eos> is the
     * line end */
    return id == txl_tokenizer_eos_id(tok) ? 1u : (guint)MIN(len + 1, G_MAXUINT32);
  case TXL_TOKENIZER_BPE:
    return (guint)CLAMP(len, 1, G_MAXUINT32);
  default:
    return 1;
  }
}

/* The rule every per-unit line score follows before its own division: a
 * line without tokens has none (NAN), one with a non-finite token score is
 * infinitely surprising.  FALSE when the score is an ordinary number. */
static gboolean
special_score(const TxlLineScore *s, double *v)
{
  *v = s->tokens <= 0 ? NAN : INFINITY;
  return s->tokens <= 0 || s->nonfinite;
}

double
txl_line_mean_nll(const TxlLineScore *s)
{
  double v;
  return special_score(s, &v) ? v : s->nll / (double)s->tokens;
}

double
txl_line_bpb(const TxlLineScore *s)
{
  double v;
  if (special_score(s, &v))
    return v;
  return s->norm_bytes ? s->nll / G_LN2 / (double)s->norm_bytes : 0.0;
}

double
txl_line_worst(const TxlLineScore *s)
{
  double bpb = txl_line_bpb(s);
  if (!isfinite(bpb))
    return bpb;
  return MAX(bpb, s->window);
}

gboolean
txl_line_flag(const TxlLineScore *s, double threshold)
{
  if (s->tokens <= 0)
    return FALSE;
  double w = txl_line_worst(s);
  return !isfinite(w) || w > threshold;
}

/* ---- snapshot fields ----------------------------------------------------- */

void
txl_line_score_put(GByteArray *b, const TxlLineScore *s)
{
  txl_put_u64(b, (guint64)s->tokens);
  txl_put_u64(b, s->norm_bytes);
  txl_put_f64(b, s->nll);
  txl_put_f64(b, s->max_token);
  txl_put_f64(b, s->window);
  txl_put_u32(b, s->nonfinite);
}

gboolean
txl_line_score_get(TxlReader *r, TxlLineScore *s)
{
  s->tokens = (gint64)txl_get_u64(r);
  s->norm_bytes = txl_get_u64(r);
  s->nll = txl_get_f64(r);
  s->max_token = txl_get_f64(r);
  s->window = txl_get_f64(r);
  s->nonfinite = txl_get_u32(r);
  /* sums of finite costs: anything else was not written by
   * txl_line_acc_add */
  if (s->tokens < 0 || s->nonfinite > (guint64)s->tokens ||
      s->norm_bytes < (guint64)s->tokens || !isfinite(s->nll) ||
      !isfinite(s->max_token) || !isfinite(s->window))
    r->ok = FALSE;
  return r->ok;
}

void
txl_line_acc_put(GByteArray *b, const TxlLineAcc *a)
{
  txl_line_score_put(b, &a->s);
  txl_put_u32(b, a->win_n);
  for (guint32 i = 0; i < a->win_n; i++) {
    guint32 k = slot(a, i);
    guint32 bits;
    memcpy(&bits, &a->win_nll[k], 4);
    txl_put_u32(b, bits);
    txl_put_u32(b, a->win_b[k]);
  }
}

gboolean
txl_line_acc_get(TxlReader *r, TxlLineAcc *a)
{
  txl_line_acc_init(a);
  if (!txl_line_score_get(r, &a->s))
    return FALSE;
  guint32 n = txl_get_u32(r);
  if (n > TXL_LINE_WINDOW_BYTES + 1 || n > (guint64)a->s.tokens) {
    r->ok = FALSE;
    return FALSE;
  }
  /* saved oldest first: restored from slot 0 */
  guint64 bytes = 0;
  for (guint32 i = 0; i < n && r->ok; i++) {
    guint32 bits = txl_get_u32(r);
    memcpy(&a->win_nll[i], &bits, 4);
    a->win_b[i] = txl_get_u32(r);
    if (!isfinite(a->win_nll[i]) || a->win_b[i] == 0)
      r->ok = FALSE;
    bytes += a->win_b[i];
  }
  a->win_n = n;
  a->win_bytes = bytes;
  /* what add() leaves: the tokens behind the oldest under a window */
  if (n > 1 && bytes - a->win_b[0] >= TXL_LINE_WINDOW_BYTES)
    r->ok = FALSE;
  return r->ok;
}

/* ---- state as bytes ------------------------------------------------------ */

gsize
txl_line_acc_state_get_size(const TxlLineAcc *a)
{
  GByteArray *b = g_byte_array_new();
  txl_line_acc_put(b, a);
  gsize n = b->len;
  g_byte_array_unref(b);
  return n;
}

gsize
txl_line_acc_state_get_data(const TxlLineAcc *a, guint8 *dst, gsize size)
{
  GByteArray *b = g_byte_array_new();
  txl_line_acc_put(b, a);
  gsize n = b->len;
  if (dst && size >= n)
    memcpy(dst, b->data, n);
  g_byte_array_unref(b);
  return dst && size >= n ? n : 0;
}

gboolean
txl_line_acc_state_set_data(TxlLineAcc *a, const guint8 *src, gsize size,
                            GError **error)
{
  TxlReader r;
  txl_reader_init_data(&r, src, size);
  TxlLineAcc t; /* a refusal leaves a as it was */
  if (!txl_line_acc_get(&r, &t) || !txl_reader_done(&r)) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_FORMAT,
                        "line state: malformed");
    return FALSE;
  }
  *a = t;
  return TRUE;
}

/* ---- JSON ---------------------------------------------------------------- */

void
txl_line_append_json(GString *o, const TxlLineScore *s)
{
  double mean = txl_line_mean_nll(s);
  g_string_append_printf(o, "\"norm_bytes\": %" G_GUINT64_FORMAT ", \"nll\": ",
                         s->norm_bytes);
  txl_json_append_double(o, "%.6f", mean);
  g_string_append(o, ", \"ppl\": ");
  txl_json_append_double(o, "%.6g", exp(mean));
  g_string_append(o, ", \"bpb\": ");
  txl_json_append_double(o, "%.6f", txl_line_bpb(s));
  g_string_append(o, ", \"worst\": ");
  txl_json_append_double(o, "%.6f", txl_line_worst(s));
}
