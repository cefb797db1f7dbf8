/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Scoring txl eval's validation and test sessions (eval.h): every session
 * in its own stream (TxlSessions), or all lines in one stream with
 * --single-stream, and a session's score of each kind from its lines. */
#include "eval.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const eval_agg_names[EVAL_N_AGG] = { "max-line", "max-line-sum",
                                                 "max-token", "mean" };

int
eval_agg_index(const char *name)
{
  for (int i = 0; i < EVAL_N_AGG; i++)
    if (!strcmp(name, eval_agg_names[i]))
      return i;
  return -1;
}

static double
agg_value(int agg, double nll, gint64 tokens, double max_line_mean,
          double max_line_sum, double max_token, double end_nll,
          gboolean with_end)
{
  double v;
  switch (agg) {
  case 0: v = max_line_mean; break;
  case 1: v = max_line_sum; break;
  case 2: v = max_token; break;
  default:
    if (with_end && isfinite(end_nll))
      return (nll + end_nll) / (tokens + 1);
    return tokens ? nll / tokens : 0;
  }
  if (with_end && isfinite(end_nll))
    v = MAX(v, end_nll);
  return v;
}

double
eval_session_score(const EvalSession *s, int agg, gboolean with_end)
{
  return agg_value(agg, s->nll, s->tokens, s->max_line_mean,
                   s->max_line_sum, s->max_token, s->end_nll, with_end);
}

double
eval_line_score(const Eval *ev, gint64 i, int agg)
{
  switch (agg) {
  case 1: return ev->l_sum[i];
  case 2: return ev->l_max[i];
  default: return ev->l_mean[i];
  }
}

static void
on_line(const TxlSessionLine *l, gpointer p)
{
  Eval *ev = p;
  gint64 i = g_array_index(ev->push_line, gint64, l->line - 1);
  /* a broken score is +inf, never a quiet one (NaN means not scored) */
  ev->l_sum[i] = l->nonfinite ? INFINITY : l->nll;
  ev->l_worst[i] = l->worst;
  ev->l_mean[i] = l->tokens ? l->nll / l->tokens : 0;
  ev->l_max[i] = l->max_token;
  ev->l_tok[i] = l->tokens;
}

static void
on_end(const TxlSessionResult *r, gpointer p)
{
  Eval *ev = p;
  EvalSession *s = g_hash_table_lookup(ev->by_key, r->key);
  if (!s)
    return; /* single stream: the one session "" */
  s->parts++;
  s->nll += r->nonfinite ? INFINITY : r->nll; /* broken: never quiet */
  s->tokens += r->tokens;
  s->max_line_mean = MAX(s->max_line_mean, r->max_line_mean);
  s->max_line_sum = MAX(s->max_line_sum, r->max_line_sum);
  s->max_token = MAX(s->max_token, r->max_token);
  if (isfinite(r->end_nll))
    s->end_nll = isfinite(s->end_nll) ? MAX(s->end_nll, r->end_nll)
                                      : r->end_nll;
}

/* One stream: a session's scores are those of its lines. */
static void
sessions_from_lines(Eval *ev)
{
  for (gint64 i = 0; i < ev->n_lines; i++) {
    gint64 si = ev->line_sess[i];
    if (si < 0 || isnan(ev->l_sum[i]))
      continue;
    EvalSession *s = ev->sess->pdata[si];
    s->parts = 1;
    s->max_line_mean = MAX(s->max_line_mean, ev->l_mean[i]);
    s->max_line_sum = MAX(s->max_line_sum, ev->l_sum[i]);
    s->max_token = MAX(s->max_token, ev->l_max[i]);
    s->nll += ev->l_sum[i];
    s->tokens += ev->l_tok[i];
  }
}

/* Whether line i is one this call scores (EvalScoring.fold). */
static gboolean
scored_here(const Eval *ev, gint64 i, int fold)
{
  if (fold < 0)
    return eval_line_in(ev, i, SPLIT_CALIB) || eval_line_in(ev, i, SPLIT_TEST);
  return eval_line_in(ev, i, SPLIT_TRAIN) &&
         ((EvalSession *)ev->sess->pdata[ev->line_sess[i]])->fold == fold;
}

gboolean
eval_score(Eval *ev, TxlModel *m, const EvalScoring *sc, double *secs,
           gint64 *n_scored, guint64 *evicted, GError **error)
{
  if (!ev->l_mean) {
    ev->l_mean = g_new(double, ev->n_lines);
    ev->l_sum = g_new(double, ev->n_lines);
    ev->l_worst = g_new0(double, ev->n_lines);
    ev->l_max = g_new(double, ev->n_lines);
    ev->l_tok = g_new0(int, ev->n_lines);
    for (gint64 i = 0; i < ev->n_lines; i++)
      ev->l_mean[i] = ev->l_sum[i] = ev->l_max[i] = NAN;
  }
  g_array_set_size(ev->push_line, 0); /* push numbers start again */
  TxlSessionOptions so = TXL_SESSION_OPTIONS_DEFAULT;
  so.key_regex = sc->key_re;
  so.key_group = sc->key_group;
  so.score_end = sc->end && sc->key_re;
  so.prime = TRUE;
  so.max_bytes = sc->max_bytes;
  TxlSessions *ss = txl_sessions_new(m, &so, on_line, on_end, ev, error);
  if (!ss)
    return FALSE;
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = TRUE;
  gint64 n = 0;
  for (gint64 i = 0; i < ev->n_lines && ok; i++) {
    if (!scored_here(ev, i, sc->fold))
      continue;
    g_array_append_val(ev->push_line, i);
    ok = txl_sessions_push_line(ss, ev->line_ptr[i], ev->line_len[i],
                                error) > 0;
    n++;
    if (n % 20000 == 0)
      fprintf(stderr, "txl eval: scored %" G_GINT64_FORMAT " lines "
              "(%.0f lines/s, %u open sessions)\n", n,
              n / ((g_get_monotonic_time() - t0) / 1e6), txl_sessions_count(ss));
  }
  ok = ok && txl_sessions_finish(ss, error);
  *secs = (g_get_monotonic_time() - t0) / 1e6;
  *n_scored = n;
  *evicted = txl_sessions_ended(ss, TXL_SESSION_END_EVICTED);
  txl_sessions_free(ss);
  if (ok && !sc->key_re)
    sessions_from_lines(ev);
  return ok;
}
