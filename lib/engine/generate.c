/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "generate.h"
#include "freeeach.h"
#include "model_internal.h"
#include "stream_state.h"

#include <math.h>
#include <string.h>

struct _TxlGenerator {
  TxlStream *s;
  TxlSampler *smp;
  float *lp; /* the next token's log-probabilities, n_token of them */
  gint64 fed; /* tokens through the memory, sampled ones included */
};

TxlGenerator *
txl_generator_new(TxlModel *m, const TxlStreamOptions *so,
                  const TxlSamplerOptions *sampler, GError **error)
{
  TxlGenerator *g = g_new0(TxlGenerator, 1);
  int n = txl_model_config(m)->n_token;
  if (!(g->s = txl_stream_new(m, so, error)) ||
      !(g->smp = txl_sampler_new(sampler, n, error))) {
    txl_generator_free(g);
    return NULL;
  }
  g->lp = g_new(float, n);
  return g;
}

void
txl_generator_free(TxlGenerator *g)
{
  if (!g)
    return;
  txl_stream_free(g->s);
  txl_sampler_free(g->smp);
  txl_free_each(g_free, g->lp, g);
}

gboolean
txl_generator_feed(TxlGenerator *g, const int32_t *ids, gsize n,
                   GError **error)
{
  /* no targets: only the memory and the next distribution matter */
  gsize seg = (gsize)txl_stream_max_segment(g->s);
  for (gsize at = 0; at < n; at += seg) {
    if (!txl_stream_forward(g->s, ids + at, (int)MIN(seg, n - at), NULL,
                            NULL, error))
      return FALSE;
    g->fed += (gint64)MIN(seg, n - at);
  }
  return TRUE;
}

gboolean
txl_generator_next(TxlGenerator *g, int32_t *id, GError **error)
{
  if (!txl_stream_next_logprobs(g->s, g->lp, error))
    return FALSE;
  /* a distribution with NaN or +inf in it samples nonsense: weights that
   * are finite can still overflow the arithmetic (txl score reports the
   * same as scores that were not finite) */
  int n = txl_model_config(txl_stream_model(g->s))->n_token;
  for (int i = 0; i < n; i++)
    if (isnan(g->lp[i]) || g->lp[i] == INFINITY) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "the model's next-token distribution is not finite (NaN "
                  "or infinite: its weights or its arithmetic overflowed)");
      return FALSE;
    }
  *id = txl_sampler_sample(g->smp, g->lp);
  if (!txl_stream_forward(g->s, id, 1, NULL, NULL, error))
    return FALSE;
  g->fed++;
  return TRUE;
}

gboolean
txl_generator_continue(TxlGenerator *g, const TxlTokenizer *tok,
                       const TxlGenerateLimits *lim, GByteArray *out,
                       TxlTextFunc func, gpointer data, GError **error)
{
  const gsize start = out->len;
  const gsize stop_len = lim->stop ? strlen(lim->stop) : 0;
  const int eos = lim->stop_at_eos ? txl_tokenizer_eos_id(tok) : -1;
  for (int i = 0; i < lim->max_tokens; i++) {
    int32_t id;
    if (!txl_generator_next(g, &id, error))
      return FALSE;
    if (id == eos)
      break;
    guint before = out->len;
    if (!txl_tokenizer_decode(tok, &id, 1, out, error))
      return FALSE;
    if (func)
      func(out->data + before, out->len - before, data);
    /* only this continuation's text counts towards the stop string */
    if (stop_len && out->len - start >= stop_len &&
        memcmp(out->data + out->len - stop_len, lim->stop, stop_len) == 0)
      break;
  }
  return TRUE;
}

gboolean
txl_generator_save(TxlGenerator *g, const char *path,
                   const TxlSnapshotOptions *opts, GHashTable *sections,
                   gsize *file_bytes, GError **error)
{
  GHashTable *all = txl_sections_copy(sections);
  guint8 st[8];
  gsize stn = txl_sampler_state_get_data(g->smp, st, sizeof st);
  g_hash_table_insert(all, g_strdup("sampler"), g_bytes_new(st, stn));
  TxlScorer *w = txl_scorer_wrap(g->s, g->fed);
  gboolean ok = txl_scorer_save_full(w, path, opts, all, file_bytes, error);
  txl_scorer_unwrap(w);
  g_hash_table_unref(all);
  return ok;
}

TxlGenerator *
txl_generator_load(TxlModel *m, const char *path,
                   const TxlSamplerOptions *sampler, GHashTable **sections,
                   GError **error)
{
  GHashTable *sect = NULL;
  TxlScorer *sc = txl_scorer_load_full(m, path, NULL, NULL, &sect, error);
  if (!sc)
    return NULL;
  GBytes *rng = g_hash_table_lookup(sect, "sampler");
  if (!rng || g_bytes_get_size(rng) != 8 ||
      txl_scorer_pending_count(sc) != 0 ||
      txl_stream_max_segment(txl_scorer_stream(sc)) <= 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: not a generation snapshot (no sampler state)", path);
    txl_scorer_free(sc);
    g_hash_table_unref(sect);
    return NULL;
  }
  int n = txl_model_config(m)->n_token;
  TxlGenerator *g = g_new0(TxlGenerator, 1);
  if (!(g->smp = txl_sampler_new(sampler, n, error))) {
    txl_scorer_free(sc);
    g_hash_table_unref(sect);
    g_free(g);
    return NULL;
  }
  g->fed = txl_scorer_tokens_seen(sc);
  g->s = txl_scorer_steal_stream(sc);
  g->lp = g_new(float, n);
  /* the size was checked above: this cannot fail */
  txl_sampler_state_set_data(g->smp, g_bytes_get_data(rng, NULL), 8, NULL);
  g_hash_table_remove(sect, "sampler");
  if (sections)
    *sections = sect;
  else
    g_hash_table_unref(sect);
  return g;
}
