/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A line's cost under the model file alone (reference.h). */
#include "reference.h"
#include "freeeach.h"
#include "jsonstr.h"

#include <math.h>

struct _TxlLineRef {
  TxlStream *stream; /* holds the model */
  int seg;        /* the stream's largest segment */
  int n_token;
  GArray *in;     /* int32_t: the primer, then the line */
  guint n_primer;
  float *lp;
  /* A line's cost is a function of its ids alone, and logs repeat their
   * line shapes (fields are placeholders): costs already computed are
   * kept, ids -> double, within TXL_LINE_REF_CACHE_* (emptied when full,
   * so a log whose shapes change refills it with its new ones). */
  GHashTable *cache;
  gsize cache_bytes;
  guint64 hits, calls;
};

static void
collect(int32_t id, gint64 line, gsize a, gsize b, gpointer data)
{
  (void)line, (void)a, (void)b;
  g_array_append_val((GArray *)data, id);
}

TxlLineRef *
txl_line_ref_new(TxlModel *model, GError **error)
{
  TxlStreamOptions o = txl_stream_options_default();
  TxlStream *st = txl_stream_new(model, &o, error);
  if (!st)
    return NULL;
  TxlLineRef *r = g_new0(TxlLineRef, 1);
  r->stream = st;
  r->seg = txl_stream_max_segment(st);
  r->n_token = txl_model_config(model)->n_token;
  r->in = g_array_new(FALSE, FALSE, sizeof(int32_t));
  r->lp = g_new(float, r->seg);
  r->cache = g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
                                   (GDestroyNotify)g_bytes_unref, g_free);
  /* the tokens of a line end, as TxlSessions primes a session: the line
   * is scored as the start of a line; without a tokenizer (ids given
   * directly) its first token is scored after nothing but itself */
  const TxlTokenizer *tok = txl_model_tokenizer(model);
  if (tok && txl_tokenizer_type(tok) != TXL_TOKENIZER_NONE) {
    TxlEncoder *enc = txl_encoder_new(tok, collect, r->in);
    txl_encoder_push(enc, "\n", 1);
    txl_encoder_free(enc);
  }
  r->n_primer = r->in->len;
  return r;
}

/* How many costs were found kept, as a debug message at the end
 * (G_MESSAGES_DEBUG=txl shows it: docs/learning.md#bounds). */
static void
report(const TxlLineRef *r)
{
  if (r->calls)
    g_log("txl", G_LOG_LEVEL_DEBUG, "line reference: %" G_GUINT64_FORMAT
          " of %" G_GUINT64_FORMAT " lines' costs were kept", r->hits,
          r->calls);
}

void
txl_line_ref_free(TxlLineRef *r)
{
  if (!r)
    return;
  report(r);
  txl_stream_free(r->stream);
  g_hash_table_unref(r->cache);
  g_array_unref(r->in);
  txl_free_each(g_free, r->lp, r);
}

/* The cost of in[0..total) from an empty memory: the line's tokens, those
 * from n_primer on, summed. */
static double
forward(TxlLineRef *r)
{
  const int32_t *in = (const int32_t *)r->in->data;
  gsize total = r->in->len;
  txl_stream_reset(r->stream);
  double sum = 0.0;
  /* inputs in[i..], targets in[i+1..]: the primer's own tokens after its
   * first are targets too, but only the line's are summed (without a
   * primer the line's first token is context, not scored) */
  for (gsize i = 0; i + 1 < total;) {
    int k = (int)MIN((gsize)r->seg, total - 1 - i);
    if (!txl_stream_forward(r->stream, in + i, k, in + i + 1, r->lp, NULL))
      return NAN;
    for (int j = 0; j < k; j++)
      if (i + 1 + (gsize)j >= r->n_primer)
        sum -= r->lp[j];
    i += (gsize)k;
  }
  return isfinite(sum) ? sum : NAN;
}

double
txl_line_ref_nll(TxlLineRef *r, const int32_t *ids, gsize n)
{
  if (n == 0)
    return NAN;
  for (gsize i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= r->n_token)
      return NAN;
  r->calls++;
  gsize size = n * sizeof(int32_t);
  gboolean keep = n <= TXL_LINE_REF_CACHE_LINE;
  if (keep) {
    /* looked up over the caller's ids; copied only when kept */
    GBytes *probe = g_bytes_new_static(ids, size);
    const double *known = g_hash_table_lookup(r->cache, probe);
    g_bytes_unref(probe);
    if (known) {
      r->hits++;
      return *known;
    }
  }
  g_array_set_size(r->in, r->n_primer);
  g_array_append_vals(r->in, ids, (guint)n);
  double nll = forward(r);
  if (!keep || isnan(nll))
    return nll;
  if (g_hash_table_size(r->cache) >= TXL_LINE_REF_CACHE_LINES ||
      r->cache_bytes + size > TXL_LINE_REF_CACHE_BYTES) {
    g_hash_table_remove_all(r->cache);
    r->cache_bytes = 0;
  }
  g_hash_table_insert(r->cache, g_bytes_new(ids, size),
                      g_memdup2(&nll, sizeof nll));
  r->cache_bytes += size;
  return nll;
}

guint64
txl_line_ref_hits(const TxlLineRef *r)
{
  return r->hits;
}

double
txl_line_judged(const TxlLineScore *s, double ref_nll)
{
  double worst = txl_line_worst(s);
  if (isnan(ref_nll) || !isfinite(worst) || s->norm_bytes == 0)
    return worst;
  return worst - TXL_LINE_REF_WEIGHT * ref_nll / G_LN2 /
                     (double)s->norm_bytes;
}

void
txl_line_append_ref_json(GString *o, const TxlLineScore *s, double ref_nll)
{
  if (isnan(ref_nll))
    return;
  g_string_append(o, ", \"ref_bpb\": ");
  txl_json_append_double(o, "%.6f",
                         ref_nll / G_LN2 / (double)MAX(s->norm_bytes, 1));
}
