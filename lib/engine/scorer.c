/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cuts a token stream into segments the way the official evaluation does:
 * inputs t0..t(N-1) predict t1..tN, then inputs tN..t(2N-1), and so on.
 * A segment runs once its last target has arrived, so results never depend
 * on how the tokens were handed over. */
#include "freeeach.h"
#include "model_internal.h"
#include "stream_state.h"

#include <string.h>

struct _TxlScorer {
  TxlStream *stream;
  int n_token;
  int seg;
  int32_t *pend; /* seg + 1 tokens: the inputs and one more */
  int npend;
  float *lp;
  gint64 seen;   /* tokens pushed so far */
  TxlScoreFunc func;
  gpointer data;
};

TxlScorer *
txl_scorer_new(TxlModel *m, const TxlStreamOptions *opts, int segment,
               TxlScoreFunc func, gpointer data, GError **error)
{
  TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
  if (opts)
    o = *opts;
  int seg = segment > 0 ? segment : m->cfg.tgt_len;
  o.max_segment = seg;
  TxlStream *st = txl_stream_new(m, &o, error);
  if (!st)
    return NULL;
  TxlScorer *s = g_new0(TxlScorer, 1);
  s->stream = st;
  s->n_token = m->cfg.n_token;
  s->seg = seg;
  s->pend = g_new(int32_t, seg + 1);
  s->lp = g_new(float, seg);
  s->func = func;
  s->data = data;
  return s;
}

void
txl_scorer_free(TxlScorer *s)
{
  if (!s)
    return;
  txl_stream_free(s->stream);
  txl_free_each(g_free, s->pend, s->lp, s);
}

static gboolean
run(TxlScorer *s, int n, GError **error)
{
  if (!txl_stream_forward(s->stream, s->pend, n, s->pend + 1, s->lp, error))
    return FALSE;
  gint64 first = s->seen - s->npend + 1; /* stream position of pend[1] */
  for (int i = 0; i < n; i++)
    s->func(first + i, s->pend[i + 1], s->lp[i], s->data);
  memmove(s->pend, s->pend + n, sizeof(int32_t) * (s->npend - n));
  s->npend -= n;
  return TRUE;
}

gboolean
txl_scorer_push(TxlScorer *s, const int32_t *tokens, gsize n, GError **error)
{
  const int n_token = s->n_token;
  for (gsize i = 0; i < n; i++) {
    /* checked here so a bad id is refused before it joins a segment */
    if (tokens[i] < 0 || tokens[i] >= n_token) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "token %" G_GINT64_FORMAT " has id %d, outside the "
                  "vocabulary [0, %d)", s->seen, tokens[i], n_token);
      return FALSE;
    }
    s->pend[s->npend++] = tokens[i];
    s->seen++;
    if (s->npend == s->seg + 1 && !run(s, s->seg, error))
      return FALSE;
  }
  return TRUE;
}

gboolean
txl_scorer_finish(TxlScorer *s, GError **error)
{
  if (s->npend >= 2 && !run(s, s->npend - 1, error))
    return FALSE;
  return TRUE;
}

gint64
txl_scorer_tokens_seen(const TxlScorer *s)
{
  return s->seen;
}

int
txl_scorer_pending_count(const TxlScorer *s)
{
  return s->npend;
}

gboolean
txl_scorer_set_model(TxlScorer *s, TxlModel *m, GError **error)
{
  return txl_stream_set_model(s->stream, m, error);
}

TxlStream *
txl_scorer_stream(TxlScorer *s)
{
  return s->stream;
}

int
txl_scorer_segment(const TxlScorer *s)
{
  return s->seg;
}

const int32_t *
txl_scorer_pending(const TxlScorer *s, int *n)
{
  *n = s->npend;
  return s->pend;
}

gboolean
txl_scorer_check_pending(const TxlScorer *s, const int32_t *pend, int npend,
                         gint64 seen, GError **error)
{
  /* a full segment and its next token never wait: run() takes them */
  if (npend < 0 || npend > s->seg || seen < npend) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%d pending tokens after %" G_GINT64_FORMAT " do not fit "
                "segments of %d", npend, seen, s->seg);
    return FALSE;
  }
  for (int i = 0; i < npend; i++) {
    if (pend[i] < 0 || pend[i] >= s->n_token) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "pending token %d has id %d, outside the vocabulary", i,
                  pend[i]);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
txl_scorer_restore(TxlScorer *s, const int32_t *pend, int npend, gint64 seen,
                   GError **error)
{
  if (!txl_scorer_check_pending(s, pend, npend, seen, error))
    return FALSE;
  memcpy(s->pend, pend, sizeof(int32_t) * npend);
  s->npend = npend;
  s->seen = seen;
  return TRUE;
}

TxlScorer *
txl_scorer_wrap(TxlStream *st, gint64 seen)
{
  TxlScorer *s = g_new0(TxlScorer, 1);
  s->stream = st;
  s->n_token = txl_stream_model(st)->cfg.n_token;
  s->seg = txl_stream_max_segment(st);
  s->pend = g_new(int32_t, s->seg + 1);
  s->seen = seen;
  return s;
}

void
txl_scorer_unwrap(TxlScorer *s)
{
  s->stream = NULL;
  txl_scorer_free(s);
}

TxlStream *
txl_scorer_steal_stream(TxlScorer *s)
{
  TxlStream *st = g_steal_pointer(&s->stream);
  txl_scorer_free(s);
  return st;
}
