#include "generate.h"

#include <string.h>

struct _TxlGenerator {
  TxlStream *s;
  TxlSampler *smp;
  float *lp;
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
  g_free(g->lp);
  g_free(g);
}

gboolean
txl_generator_feed(TxlGenerator *g, const int32_t *ids, gsize n,
                   GError **error)
{
  /* no targets: only the memory and the next distribution matter */
  gsize seg = (gsize)txl_stream_max_segment(g->s);
  for (gsize at = 0; at < n; at += seg)
    if (!txl_stream_forward(g->s, ids + at, (int)MIN(seg, n - at), NULL,
                            NULL, error))
      return FALSE;
  return TRUE;
}

gboolean
txl_generator_next(TxlGenerator *g, int32_t *id, GError **error)
{
  if (!txl_stream_next_logprobs(g->s, g->lp, error))
    return FALSE;
  *id = txl_sampler_sample(g->smp, g->lp);
  return txl_stream_forward(g->s, id, 1, NULL, NULL, error);
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
