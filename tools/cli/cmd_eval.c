/* txl eval: log anomaly detection measured against session labels.
 *
 *   txl eval LOG --labels LABELS.csv -o DIR [--key REGEX] [options]
 *
 * Sessions (a key found in each line by a regex, e.g. an HDFS block id)
 * are ordered by their first line.  The first --train-fraction of them is
 * the training part: its normal sessions (the only labels ever read for
 * it) are split in time order into training sessions and the last
 * --calib-fraction, the normal validation sessions.  A model is trained
 * (txl train, BPE with --normalize) on the training sessions' lines,
 * grouped by session, each session followed by an empty line.  Then every
 * validation and test session is scored in its own stream (TxlSessions):
 * the threshold comes from the validation sessions' scores alone (by
 * default 1.5 x the highest, --margin 0.5, the rule chosen on a development
 * split of the training part, docs/anomaly.md), and the
 * test sessions' labels are read only to compute precision, recall, F1 and
 * AUROC.  --session-rule censored takes the threshold from the validation
 * sessions as seen at the split (their lines before the first test line).
 * Writes DIR/summary.json, DIR/sessions.csv, DIR/scores.svg (and
 * DIR/model.gguf unless --model is given). */
#include "cmd.h"
#include "eval_dev.h"
#include "jsonstr.h"
#include "train_run.h"
#include "txl.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SPLIT_TRAIN, SPLIT_CALIB, SPLIT_TEST, SPLIT_DROPPED, SPLIT_UNLABELLED };
static const char *split_names[] = { "train", "calibration", "test",
                                     "dropped", "unlabelled" };

/* score kinds, as in TxlSessionScore */
#define N_AGG 4
static const char *agg_names[N_AGG] = { "max-line", "max-line-sum",
                                        "max-token", "mean" };

/* One part of a session as TxlSessions reported it: a session that pauses
 * longer than its idle timeout ends, and its key starts a new part. */
typedef struct {
  int reason; /* TxlSessionEnd */
  gint64 lines, tokens;
  double nll, max_line_mean, max_line_sum, max_token, end_nll;
} Part;

enum { STATUS_ENDED, STATUS_OPEN, STATUS_SPLIT };
static const char *status_names[] = { "ended", "open", "split" };

typedef struct {
  char *key;
  int label; /* 0 normal, 1 anomaly, -1 unknown */
  int split;
  gint64 first_line, n_lines;
  /* merged over the session's parts (a session evicted and reopened) */
  int parts;
  double nll;
  gint64 tokens;
  double max_line_mean, max_line_sum, max_token, end_nll;
  gint64 last_line;
  GArray *parts_a; /* Part, in the order they ended (live rule) */
  /* the live rule's verdict: the part with the highest score / threshold */
  double rule_score, rule_thr;
  int status;
} Sess;

typedef struct {
  char *log_path, *labels_path, *out_dir, *key_re, *model_path;
  int key_group;
  double train_fraction, calib_fraction;
  char *score, *rule;
  double quantile, margin, threshold;
  char *margin_s;      /* "auto" or a number */
  gboolean margin_auto; /* the log-normal tail of the validation scores */
  gboolean margin_tail; /* that tail alone, no floor at the rule's value */
  gboolean margin_dev;  /* the factor from a development split */
  char *dev_model;      /* its model, trained earlier */
  char *dev_anchor;     /* "median" (default) or "max" */
  gboolean anchor_median; /* the factor multiplies the validation median */
  gboolean trim_validation; /* leave out sessions above 3 x the median */
  char *outliers;           /* "drop" (default) or "keep" */
  double fpr;           /* its false-alarm rate */
  gboolean end, single_stream, keep_text, censor;
  char *session_rule;   /* "whole" (default), "live" or "censored" */
  gboolean live;
  gboolean censored;    /* calibrate on validation sessions cut at the split */
  char *time_format;    /* strptime format of a line's timestamp; "": lines */
  char *lines_out;
  gint64 max_bytes_mib;
  /* training */
  int vocab, layers, d_model, heads, d_head, d_inner, mem_len, segment, batch;
  gint64 steps, seed;
  double lr, dropout, time_limit;
} Opts;

typedef struct {
  const Opts *o;
  GPtrArray *sess;       /* Sess* in order of first line */
  GHashTable *by_key;    /* key -> Sess* */
  gint64 *line_sess;     /* per log line: session index, -1 none */
  const char **line_ptr; /* per log line: its text */
  gsize *line_len;
  gint64 n_lines;
  gint64 cut;            /* first line of the test part: training and
                          * validation see only the lines before it */
  /* per scored line, indexed by push number */
  GArray *push_line;     /* gint64 log line of push n (n - 1) */
  double *l_mean, *l_sum, *l_max; /* per log line; NAN when not scored */
  double *l_worst; /* the line's worst part, bits per byte (lib/anomaly/lines.h) */
  int *l_tok;
  /* the live rule */
  double *line_time;     /* per log line: its clock value */
  gboolean time_clock;   /* log time (else the line number) */
  gint64 time_parsed;    /* lines whose timestamp parsed */
  double *idle_after;    /* T(k) for k = 1..n_idle */
  guint n_idle;
  double thr_end;        /* ended sessions, with the end marker */
  double *thr_open;      /* open sessions of k lines, k = 1..n_open */
  guint n_open;
} Eval;

/* Whether line i takes part.  Sessions are the unit of the split, so a
 * training-part session brings all its lines; with --censor only those
 * logged before the first test session, as a model trained at that
 * moment would have seen them.  Test sessions are followed to the end. */
static gboolean
line_in(const Eval *ev, gint64 i, int split)
{
  gint64 si = ev->line_sess[i];
  if (si < 0 || ((Sess *)ev->sess->pdata[si])->split != split)
    return FALSE;
  return split == SPLIT_TEST || !ev->o->censor || i < ev->cut;
}

/* ---- input ----------------------------------------------------------- */

static gboolean
parse_label(const char *v, int *out)
{
  static const char *anom[] = { "anomaly", "anomalous", "abnormal", "1",
                                "true", "yes" };
  static const char *norm[] = { "normal", "0", "false", "no" };
  for (gsize i = 0; i < G_N_ELEMENTS(anom); i++)
    if (!g_ascii_strcasecmp(v, anom[i]))
      return *out = 1, TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS(norm); i++)
    if (!g_ascii_strcasecmp(v, norm[i]))
      return *out = 0, TRUE;
  return FALSE;
}

static GHashTable *
read_labels(const char *path, GError **error)
{
  g_autofree char *text = NULL;
  gsize len;
  GError *e = NULL;
  if (!g_file_get_contents(path, &text, &len, &e)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "labels: %s", e->message);
    g_error_free(e);
    return NULL;
  }
  GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  char **rows = g_strsplit(text, "\n", -1);
  int n = 0;
  for (int i = 0; rows[i]; i++) {
    char *row = g_strstrip(rows[i]);
    if (!*row)
      continue;
    char *comma = strrchr(row, ',');
    if (!comma) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "%s:%d: expected KEY,LABEL", path, i + 1);
      goto fail;
    }
    *comma = '\0';
    char *key = g_strstrip(row), *val = g_strstrip(comma + 1);
    int label;
    if (!parse_label(val, &label)) {
      if (n == 0 && i == 0)
        continue; /* a header such as BlockId,Label */
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "%s:%d: label '%s' is neither normal (Normal, 0, false) "
                  "nor anomalous (Anomaly, 1, true)", path, i + 1, val);
      goto fail;
    }
    g_hash_table_replace(h, g_strdup(key), GINT_TO_POINTER(label + 1));
    n++;
  }
  g_strfreev(rows);
  if (n == 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "%s: no KEY,LABEL rows", path);
    g_hash_table_destroy(h);
    return NULL;
  }
  return h;
fail:
  g_strfreev(rows);
  g_hash_table_destroy(h);
  return NULL;
}

/* ---- metrics --------------------------------------------------------- */

typedef struct {
  double threshold;
  gint64 tp, fp, fn, tn;
  double precision, recall, f1, auroc;
  gint64 n, n_anom;
} Metrics;

static int
cmp_pair(const void *a, const void *b)
{
  const double *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* scores[i], labels[i] in {0, 1}; AUROC by ranks with ties averaged. */
static void
metrics(const double *scores, const int *labels, gsize n, double thr,
        Metrics *m)
{
  memset(m, 0, sizeof *m);
  m->threshold = thr;
  m->n = n;
  double *p = g_new(double, 2 * MAX(n, 1));
  for (gsize i = 0; i < n; i++) {
    gboolean flag = scores[i] > thr;
    if (labels[i]) {
      m->n_anom++;
      flag ? m->tp++ : m->fn++;
    } else {
      flag ? m->fp++ : m->tn++;
    }
    p[2 * i] = scores[i];
    p[2 * i + 1] = labels[i];
  }
  qsort(p, n, 2 * sizeof(double), cmp_pair);
  double rank_sum = 0;
  for (gsize i = 0; i < n;) {
    gsize j = i;
    while (j < n && p[2 * j] == p[2 * i])
      j++;
    double r = (i + 1 + j) / 2.0; /* average 1-based rank of the tie */
    for (gsize k = i; k < j; k++)
      if (p[2 * k + 1] > 0.5)
        rank_sum += r;
    i = j;
  }
  g_free(p);
  double na = m->n_anom, nn = (double)n - na;
  m->auroc = na > 0 && nn > 0 ? (rank_sum - na * (na + 1) / 2) / (na * nn)
                              : NAN;
  m->precision = m->tp + m->fp ? (double)m->tp / (m->tp + m->fp) : 0;
  m->recall = m->tp + m->fn ? (double)m->tp / (m->tp + m->fn) : 0;
  m->f1 = m->precision + m->recall > 0
            ? 2 * m->precision * m->recall / (m->precision + m->recall)
            : 0;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The (1 - fpr) quantile of a log-normal fitted (maximum likelihood: mean
 * and standard deviation of the logarithms) to the positive scores. */
static double
lognormal_tail(const double *v, gsize n, double fpr)
{
  double s1 = 0, s2 = 0;
  gsize k = 0;
  for (gsize i = 0; i < n; i++)
    if (v[i] > 0) {
      double x = log(v[i]);
      s1 += x;
      s2 += x * x;
      k++;
    }
  if (k < 2)
    return 0;
  double mu = s1 / k, sd = sqrt(MAX(0.0, (s2 - s1 * s1 / k) / (k - 1)));
  /* z with P(Z > z) = fpr, by bisection on the normal tail */
  double lo = 0, hi = 40;
  for (int it = 0; it < 200; it++) {
    double mid = 0.5 * (lo + hi);
    if (0.5 * erfc(mid / G_SQRT2) > fpr)
      lo = mid;
    else
      hi = mid;
  }
  return exp(mu + 0.5 * (lo + hi) * sd);
}

/* The threshold from normal validation scores only.  --margin auto (the
 * default): the rule's value (the highest score, or a quantile), raised to
 * the (1 - --fpr) quantile of a log-normal fitted to the validation scores
 * when that lies higher; --margin tail: that quantile alone, also where it
 * lies below the rule's value; a number M: the rule's value x (1 + M). */
static double
calibrate(const Opts *o, double *v, gsize n, gboolean sessions)
{
  if (o->threshold > 0)
    return o->threshold;
  if (n == 0)
    return INFINITY;
  qsort(v, n, sizeof(double), cmp_double);
  if (sessions && o->trim_validation) {
    /* the sessions far above the rest (the warning's criterion) do not
     * take part: a few odd normal sessions would carry the maximum */
    double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    while (n > 1 && v[n - 1] > 3.0 * med)
      n--;
  }
  double base;
  if (o->anchor_median) {
    base = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  } else if (!strcmp(o->rule, "max")) {
    base = v[n - 1];
  } else { /* quantile, interpolated */
    double pos = o->quantile * (n - 1);
    gsize i = (gsize)pos;
    base = i + 1 < n ? v[i] + (pos - i) * (v[i + 1] - v[i]) : v[n - 1];
  }
  if (o->margin_tail)
    return lognormal_tail(v, n, o->fpr);
  if (o->margin_auto)
    return MAX(base, lognormal_tail(v, n, o->fpr));
  return base * (1.0 + o->margin);
}

/* ---- scoring --------------------------------------------------------- */

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

static double
sess_score(const Sess *s, int agg, gboolean with_end)
{
  return agg_value(agg, s->nll, s->tokens, s->max_line_mean,
                   s->max_line_sum, s->max_token, s->end_nll, with_end);
}

static double
part_score(const Part *p, int agg, gboolean with_end)
{
  return agg_value(agg, p->nll, p->tokens, p->max_line_mean,
                   p->max_line_sum, p->max_token, p->end_nll, with_end);
}

static double
line_score(const Eval *ev, gint64 i, int agg)
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
  Sess *s = g_hash_table_lookup(ev->by_key, r->key);
  if (!s)
    return; /* single stream: the one session "" */
  if (s->parts_a) {
    Part pt = { r->reason, r->lines, r->tokens, r->nll, r->max_line_mean,
                r->max_line_sum, r->max_token, r->end_nll };
    g_array_append_val(s->parts_a, pt);
  }
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

static gboolean
score_lines(Eval *ev, TxlModel *m, double *secs, gint64 *n_scored,
            guint64 *evicted, GError **error)
{
  const Opts *o = ev->o;
  TxlSessionOptions so = TXL_SESSION_OPTIONS_DEFAULT;
  so.key_regex = o->single_stream ? NULL : o->key_re;
  so.key_group = o->key_group;
  so.score_end = (o->end || o->live) && !o->single_stream;
  so.prime = TRUE;
  so.max_bytes = (guint64)o->max_bytes_mib << 20;
  if (o->live) {
    so.idle_after = ev->idle_after;
    so.n_idle_after = ev->n_idle;
    so.finish_open = TRUE;
  }
  TxlSessions *ss = txl_sessions_new(m, &so, on_line, on_end, ev, error);
  if (!ss)
    return FALSE;
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = TRUE;
  gint64 n = 0;
  for (gint64 i = 0; i < ev->n_lines && ok; i++) {
    if (!line_in(ev, i, SPLIT_CALIB) && !line_in(ev, i, SPLIT_TEST))
      continue;
    g_array_append_val(ev->push_line, i);
    if (o->live)
      ok = txl_sessions_set_time(ss, ev->line_time[i], error);
    ok = ok && txl_sessions_push_line(ss, ev->line_ptr[i], ev->line_len[i],
                                      error) > 0;
    /* a validation session is complete: it ends after its last line */
    if (ok && o->live && line_in(ev, i, SPLIT_CALIB)) {
      Sess *vs = ev->sess->pdata[ev->line_sess[i]];
      if (vs->last_line == i)
        ok = txl_sessions_end(ss, vs->key, error);
    }
    n++;
    if (n % 20000 == 0)
      fprintf(stderr, "txl eval: scored %" G_GINT64_FORMAT " lines "
              "(%.0f lines/s, %u open sessions)\n", n,
              n / ((g_get_monotonic_time() - t0) / 1e6), txl_sessions_count(ss));
  }
  /* the end of the recording: the clock at its last line, then the
   * sessions still open are reported open */
  if (ok && o->live)
    ok = txl_sessions_set_time(ss, ev->line_time[ev->n_lines - 1], error);
  ok = ok && txl_sessions_finish(ss, error);
  *secs = (g_get_monotonic_time() - t0) / 1e6;
  *n_scored = n;
  *evicted = txl_sessions_ended(ss, TXL_SESSION_END_EVICTED);
  txl_sessions_free(ss);
  if (ok && o->single_stream) {
    /* one stream: a session's scores are those of its lines */
    for (gint64 i = 0; i < ev->n_lines; i++) {
      gint64 si = ev->line_sess[i];
      if (si < 0 || isnan(ev->l_sum[i]))
        continue;
      Sess *s = ev->sess->pdata[si];
      s->parts = 1;
      s->max_line_mean = MAX(s->max_line_mean, ev->l_mean[i]);
      s->max_line_sum = MAX(s->max_line_sum, ev->l_sum[i]);
      s->max_token = MAX(s->max_token, ev->l_max[i]);
      s->nll += ev->l_sum[i];
      s->tokens += ev->l_tok[i];
    }
  }
  return ok;
}

/* ---- the censored rule ------------------------------------------------ */

/* The normal validation sessions as a detector would see them at the cut
 * (the first line of the first test session, the end of the training and
 * validation period): each session's score over its lines logged before
 * the cut only, so that sessions still in progress there are truncated the
 * way test sessions are by the end of the recording.  No end marker: a cut
 * session has not ended.  Fills v (one value per validation session with
 * at least one line before the cut) and returns their number; *n_cut
 * counts the sessions that the cut truncated. */
static gsize
censored_scores(const Eval *ev, int agg, double *v, gsize *n_cut)
{
  guint n = ev->sess->len;
  double *nll = g_new0(double, MAX(n, 1)), *mlm = g_new0(double, MAX(n, 1));
  double *mls = g_new0(double, MAX(n, 1)), *mt = g_new0(double, MAX(n, 1));
  gint64 *tok = g_new0(gint64, MAX(n, 1)), *cnt = g_new0(gint64, MAX(n, 1));
  for (gint64 i = 0; i < ev->cut && i < ev->n_lines; i++) {
    gint64 si = ev->line_sess[i];
    if (si < 0 || ((Sess *)ev->sess->pdata[si])->split != SPLIT_CALIB ||
        isnan(ev->l_sum[i]))
      continue;
    cnt[si]++;
    nll[si] += ev->l_sum[i];
    tok[si] += ev->l_tok[i];
    if (ev->l_tok[i] > 0) {
      mlm[si] = MAX(mlm[si], ev->l_mean[i]);
      mls[si] = MAX(mls[si], ev->l_sum[i]);
      mt[si] = MAX(mt[si], ev->l_max[i]);
    }
  }
  gsize k = 0;
  *n_cut = 0;
  for (guint j = 0; j < n; j++) {
    Sess *s = ev->sess->pdata[j];
    if (s->split != SPLIT_CALIB || cnt[j] == 0)
      continue;
    v[k++] = agg_value(agg, nll[j], tok[j], mlm[j], mls[j], mt[j], NAN, FALSE);
    *n_cut += cnt[j] < s->n_lines;
  }
  g_free(nll);
  g_free(mlm);
  g_free(mls);
  g_free(mt);
  g_free(tok);
  g_free(cnt);
  return k;
}

/* ---- the live rule ---------------------------------------------------- */

#define MAX_TABLE 4096 /* longest idle and threshold tables, in lines */

/* Each line's clock value: its timestamp (--time-format, read with
 * strptime at the start of the line, as UTC seconds; a line without one
 * keeps the time before it; the clock never goes back), or its line number
 * where fewer than half of the lines have a timestamp. */
static void
line_clock(Eval *ev)
{
  const char *fmt = ev->o->time_format;
  ev->line_time = g_new(double, MAX(ev->n_lines, 1));
  double t = NAN;
  gint64 parsed = 0;
  for (gint64 i = 0; i < ev->n_lines && fmt[0]; i++) {
    char buf[128];
    gsize n = MIN(ev->line_len[i], sizeof buf - 1);
    memcpy(buf, ev->line_ptr[i], n);
    buf[n] = '\0';
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (strptime(buf, fmt, &tm)) {
      double v = (double)timegm(&tm);
      if (isnan(t) || v > t)
        t = v;
      if (parsed++ == 0) /* lines before the first timestamp take it */
        for (gint64 j = 0; j < i; j++)
          ev->line_time[j] = t;
    }
    ev->line_time[i] = t;
  }
  ev->time_parsed = parsed;
  ev->time_clock = fmt[0] && parsed * 2 >= ev->n_lines;
  if (!ev->time_clock)
    for (gint64 i = 0; i < ev->n_lines; i++)
      ev->line_time[i] = (double)(i + 1);
}

/* The validation sessions' scored lines, in order (one GArray of line
 * indices per validation session), and every session's last pushed line. */
static GPtrArray *
validation_lines(Eval *ev)
{
  GPtrArray *per = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
  gint64 *idx = g_new(gint64, MAX(ev->sess->len, 1));
  for (guint k = 0; k < ev->sess->len; k++) {
    Sess *s = ev->sess->pdata[k];
    idx[k] = -1;
    s->last_line = -1;
    if (s->split == SPLIT_CALIB) {
      idx[k] = per->len;
      g_ptr_array_add(per, g_array_new(FALSE, FALSE, sizeof(gint64)));
    }
  }
  for (gint64 i = 0; i < ev->n_lines; i++) {
    if (line_in(ev, i, SPLIT_CALIB)) {
      g_array_append_val((GArray *)per->pdata[idx[ev->line_sess[i]]], i);
      ((Sess *)ev->sess->pdata[ev->line_sess[i]])->last_line = i;
    } else if (line_in(ev, i, SPLIT_TEST)) {
      ((Sess *)ev->sess->pdata[ev->line_sess[i]])->last_line = i;
    }
  }
  g_free(idx);
  return per;
}

/* T(k): the longest pause a normal validation session made after one of
 * its first k lines (a running maximum over the positions), for k = 1 up
 * to the longest validation session; longer sessions take the last. */
static void
idle_schedule(Eval *ev, GPtrArray *val)
{
  guint K = 1;
  for (guint j = 0; j < val->len; j++)
    K = MAX(K, ((GArray *)val->pdata[j])->len);
  K = MIN(K, MAX_TABLE);
  double *per = g_new0(double, K + 1);
  for (guint j = 0; j < val->len; j++) {
    GArray *a = val->pdata[j];
    for (guint c = 1; c < a->len; c++) {
      double g = ev->line_time[g_array_index(a, gint64, c)] -
                 ev->line_time[g_array_index(a, gint64, c - 1)];
      guint pos = MIN(c, K); /* the gap after line c */
      per[pos] = MAX(per[pos], g);
    }
  }
  ev->n_idle = K;
  ev->idle_after = g_new(double, K);
  double m = 0;
  for (guint k = 1; k <= K; k++) {
    m = MAX(m, per[k]);
    ev->idle_after[k - 1] = m;
  }
  g_free(per);
}

/* The live rule's thresholds for one score kind: ended sessions (with the
 * end marker) against the complete validation sessions; open sessions of k
 * lines against every validation session's first min(k, its length)
 * lines.  Both by calibrate(), i.e. the same --threshold-rule and
 * --margin. */
static void
live_calibrate(Eval *ev, GPtrArray *val, int agg, double *thr_end,
               double *thr_open)
{
  const Opts *o = ev->o;
  guint nv = val->len, K = ev->n_open;
  double *v = g_new(double, MAX(nv, 1) * (gsize)MAX(K, 1));
  double *cal = g_new(double, MAX(nv, 1));
  gsize nc = 0;
  for (guint k = 0; k < ev->sess->len; k++) {
    Sess *s = ev->sess->pdata[k];
    if (s->split == SPLIT_CALIB)
      cal[nc++] = sess_score(s, agg, TRUE);
  }
  *thr_end = calibrate(o, cal, nc, TRUE);
  for (guint j = 0; j < nv; j++) {
    GArray *a = val->pdata[j];
    double nll = 0, mlm = 0, mls = 0, mt = 0, x = 0;
    gint64 tok = 0;
    guint c = 0;
    for (; c < a->len && c < K; c++) {
      gint64 i = g_array_index(a, gint64, c);
      if (!isnan(ev->l_sum[i])) {
        nll += ev->l_sum[i];
        tok += ev->l_tok[i];
        if (ev->l_tok[i] > 0) {
          mlm = MAX(mlm, ev->l_mean[i]);
          mls = MAX(mls, ev->l_sum[i]);
          mt = MAX(mt, ev->l_max[i]);
        }
      }
      x = agg_value(agg, nll, tok, mlm, mls, mt, NAN, FALSE);
      v[(gsize)c * nv + j] = x;
    }
    for (; c < K; c++) /* a complete session, at every longer k */
      v[(gsize)c * nv + j] = x;
  }
  for (guint k = 0; k < K; k++)
    thr_open[k] = calibrate(o, v + (gsize)k * nv, nv, TRUE);
  g_free(v);
  g_free(cal);
}

/* A test session under the live rule: each part is judged against the
 * threshold that applies to it (ended: thr_end with the end marker; open
 * or evicted: thr_open at its length, without); the session's value is the
 * largest score / threshold, flagged above 1. */
static double
live_value(const Eval *ev, Sess *s, int agg, double thr_end,
           const double *thr_open, gboolean keep)
{
  double best = -INFINITY, bs = 0, bt = 0;
  int status = STATUS_OPEN;
  for (guint p = 0; s->parts_a && p < s->parts_a->len; p++) {
    const Part *pt = &g_array_index(s->parts_a, Part, p);
    gboolean ended = pt->reason == TXL_SESSION_END_CLOSED ||
                     pt->reason == TXL_SESSION_END_IDLE;
    double sc = part_score(pt, agg, ended);
    double t = ended ? thr_end
                     : thr_open[MIN((guint64)MAX(pt->lines, 1), ev->n_open) - 1];
    double r = sc / MAX(t, 1e-12);
    if (r > best) {
      best = r;
      bs = sc;
      bt = t;
    }
    status = ended ? STATUS_ENDED : STATUS_OPEN;
  }
  if (s->parts_a && s->parts_a->len > 1)
    status = STATUS_SPLIT;
  if (keep) {
    s->rule_score = bs;
    s->rule_thr = bt;
    s->status = status;
  }
  return isfinite(best) ? best : 0;
}

static void
append_list(GString *g, const double *v, guint n, const char *sep)
{
  for (guint k = 0; k < n; k++)
    g_string_append_printf(g, "%s%.6g", k ? sep : "", v[k]);
}

/* ---- training -------------------------------------------------------- */

static gboolean
write_sessions_text(Eval *ev, int split, const char *path, gint64 *n_out,
                    GError **error)
{
  FILE *f = fopen(path, "wb");
  if (!f) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "cannot write %s: %s", path,
                g_strerror(errno));
    return FALSE;
  }
  gint64 n = 0;
  if (ev->o->single_stream) {
    /* the lines as they came, interleaved */
    for (gint64 i = 0; i < ev->n_lines; i++) {
      if (line_in(ev, i, split)) {
        fwrite(ev->line_ptr[i], 1, ev->line_len[i], f);
        fputc('\n', f);
        n++;
      }
    }
  } else {
    /* grouped: each session's lines in order, then an empty line */
    GPtrArray *per = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    for (guint k = 0; k < ev->sess->len; k++)
      g_ptr_array_add(per, g_array_new(FALSE, FALSE, sizeof(gint64)));
    for (gint64 i = 0; i < ev->n_lines; i++)
      if (line_in(ev, i, split))
        g_array_append_val((GArray *)per->pdata[ev->line_sess[i]], i);
    for (guint k = 0; k < ev->sess->len; k++) {
      GArray *a = per->pdata[k];
      if (!a->len)
        continue;
      for (guint j = 0; j < a->len; j++) {
        gint64 i = g_array_index(a, gint64, j);
        fwrite(ev->line_ptr[i], 1, ev->line_len[i], f);
        fputc('\n', f);
        n++;
      }
      fputc('\n', f); /* the primer before a session's first line */
    }
    g_ptr_array_free(per, TRUE);
  }
  *n_out = n;
  if (fclose(f) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "cannot write %s: %s", path,
                g_strerror(errno));
    return FALSE;
  }
  return TRUE;
}

/* Trains the model as `txl train --tokenizer bpe --normalize` would, with
 * this command's model options and validation on val_txt. */
static int
run_train(const Opts *o, const char *model, const char *train_txt,
          const char *val_txt)
{
  TrainOptions t;
  train_options_init(&t);
  char *inputs[] = { (char *)train_txt, NULL };
  t.inputs = inputs;
  t.n_inputs = 1;
  t.output = (char *)model;
  t.val_path = (char *)val_txt;
  t.val_fraction = 0.0;
  t.tokenizer = (char *)"bpe";
  t.normalize = TRUE;
  t.vocab = o->vocab;
  t.layers = o->layers;
  t.d_model = o->d_model;
  t.heads = o->heads;
  t.d_head = o->d_head;
  t.d_inner = o->d_inner;
  t.mem_len = o->mem_len;
  t.segment = o->segment;
  t.batch = o->batch;
  t.steps = o->steps;
  t.warmup = (int)MIN(100, o->steps / 10);
  t.lr = o->lr;
  t.dropout = o->dropout;
  t.seed = o->seed;
  t.eval_every = 0;
  t.eval_tokens = 20000;
  t.checkpoint_every = 0;
  t.log_every = 100;
  t.time_limit_min = o->time_limit > 0 ? o->time_limit : 0;
  g_autoptr(GError) err = NULL;
  if (!train_options_check(&t, &err)) {
    fprintf(stderr, "txl train: %s\n", err->message);
    return 2;
  }
  return train_run(&t);
}

/* ---- output ---------------------------------------------------------- */

static void
json_metrics(GString *j, const char *name, const Metrics *m)
{
  /* a threshold from non-finite scores is null: summary.json stays JSON */
  g_string_append_printf(j, "\"%s\": {\"threshold\": ", name);
  txl_json_append_double(j, "%.6g", m->threshold);
  g_string_append_printf(j,
    ", \"n\": %" G_GINT64_FORMAT
    ", \"anomalous\": %" G_GINT64_FORMAT ", \"tp\": %" G_GINT64_FORMAT
    ", \"fp\": %" G_GINT64_FORMAT ", \"fn\": %" G_GINT64_FORMAT
    ", \"tn\": %" G_GINT64_FORMAT ", \"precision\": %.4f, \"recall\": %.4f"
    ", \"f1\": %.4f, \"auroc\": %.4f}", m->n, m->n_anom,
    m->tp, m->fp, m->fn, m->tn, m->precision, m->recall, m->f1,
    isnan(m->auroc) ? -1.0 : m->auroc);
}

/* Histograms of normal and anomalous test session scores, on a log count
 * axis, with the threshold. */
static gboolean
write_svg(const char *path, const double *sc, const int *lab, gsize n,
          double thr, const char *title, GError **error)
{
  double lo = INFINITY, hi = -INFINITY;
  for (gsize i = 0; i < n; i++) {
    lo = MIN(lo, sc[i]);
    hi = MAX(hi, sc[i]);
  }
  if (isfinite(thr)) {
    lo = MIN(lo, thr);
    hi = MAX(hi, thr);
  }
  if (!(hi > lo)) {
    lo -= 1;
    hi += 1;
  }
  const int B = 60;
  int cnt[2][60] = { { 0 } };
  int tot[2] = { 0, 0 };
  for (gsize i = 0; i < n; i++) {
    int b = (int)((sc[i] - lo) / (hi - lo) * B);
    cnt[lab[i]][CLAMP(b, 0, B - 1)]++;
    tot[lab[i]]++;
  }
  int maxc = 1;
  for (int k = 0; k < 2; k++)
    for (int b = 0; b < B; b++)
      maxc = MAX(maxc, cnt[k][b]);
  const double W = 720, H = 360, L = 60, R = 20, T = 40, Bm = 50;
  const double pw = W - L - R, ph = H - T - Bm, ymax = log10(maxc + 1.0);
  GString *s = g_string_new(NULL);
  g_string_append_printf(s,
    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
    "font-family=\"sans-serif\" font-size=\"12\">\n"
    "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
    "<text x=\"%g\" y=\"20\" font-size=\"14\">", W, H, L);
  g_autofree char *esc = g_markup_escape_text(title, -1);
  g_string_append(s, esc);
  g_string_append(s, "</text>\n");
  const char *col[2] = { "#1f77b4", "#d62728" };
  for (int k = 0; k < 2; k++)
    for (int b = 0; b < B; b++) {
      if (!cnt[k][b])
        continue;
      double h = log10(cnt[k][b] + 1.0) / ymax * ph;
      g_string_append_printf(s,
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
        "fill=\"%s\" fill-opacity=\"0.55\"/>\n", L + b * pw / B,
        T + ph - h, pw / B, h, col[k]);
    }
  g_string_append_printf(s,
    "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n"
    "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n",
    L, T + ph, L + pw, T + ph, L, T, L, T + ph);
  for (int t = 0; t <= 5; t++) {
    double v = lo + (hi - lo) * t / 5, x = L + pw * t / 5;
    g_string_append_printf(s, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%.3g</text>\n",
                           x, T + ph + 16, v);
  }
  for (int c = 1; c <= maxc; c *= 10) {
    double y = T + ph - log10(c + 1.0) / ymax * ph;
    g_string_append_printf(s, "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n",
                           L - 4, y + 4, c);
  }
  g_string_append_printf(s,
    "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">session score (nats)</text>\n"
    "<text x=\"14\" y=\"%g\" transform=\"rotate(-90 14 %g)\" text-anchor=\"middle\">sessions (log scale)</text>\n",
    L + pw / 2, H - 10, T + ph / 2, T + ph / 2);
  if (isfinite(thr)) {
    double x = L + (thr - lo) / (hi - lo) * pw;
    g_string_append_printf(s,
      "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"black\" "
      "stroke-dasharray=\"5,4\"/>\n<text x=\"%.1f\" y=\"%g\">threshold %.3g</text>\n",
      x, T, x, T + ph, x + 4, T + 12, thr);
  }
  g_string_append_printf(s,
    "<rect x=\"%g\" y=\"%g\" width=\"12\" height=\"12\" fill=\"%s\" fill-opacity=\"0.55\"/>"
    "<text x=\"%g\" y=\"%g\">normal (%d)</text>\n"
    "<rect x=\"%g\" y=\"%g\" width=\"12\" height=\"12\" fill=\"%s\" fill-opacity=\"0.55\"/>"
    "<text x=\"%g\" y=\"%g\">anomalous (%d)</text>\n</svg>\n",
    L + pw - 150, T, col[0], L + pw - 134, T + 10, tot[0],
    L + pw - 150, T + 18, col[1], L + pw - 134, T + 28, tot[1]);
  gboolean ok = g_file_set_contents(path, s->str, s->len, error);
  g_string_free(s, TRUE);
  return ok;
}

/* ---- main ------------------------------------------------------------ */

static int
agg_index(const char *name)
{
  for (int i = 0; i < N_AGG; i++)
    if (!strcmp(name, agg_names[i]))
      return i;
  return -1;
}

static void
opts_free(Opts *o)
{
  g_free(o->labels_path);
  g_free(o->out_dir);
  g_free(o->key_re);
  g_free(o->model_path);
  g_free(o->score);
  g_free(o->rule);
  g_free(o->margin_s);
  g_free(o->lines_out);
  g_free(o->session_rule);
  g_free(o->time_format);
  g_free(o->dev_model);
  g_free(o->dev_anchor);
  g_free(o->outliers);
}

/* --margin dev: the same evaluation, nested, on what was known when the
 * test part began (the lines before its first line, the training part's
 * labels), in DIR/dev; its test sessions choose the factor. */
static gboolean
run_dev(const Eval *ev, const char *text, const Opts *o, EvalDevChoice *ch,
        GError **error)
{
  g_autofree char *dir = g_build_filename(o->out_dir, "dev", NULL);
  g_autofree char *log = g_build_filename(dir, "dev.log", NULL);
  g_autofree char *lab = g_build_filename(dir, "labels.csv", NULL);
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "cannot create %s: %s", dir,
                g_strerror(errno));
    return FALSE;
  }
  gsize cut_at = (gsize)(ev->line_ptr[ev->cut] - text);
  if (!g_file_set_contents(log, text, (gssize)cut_at, error))
    return FALSE;
  GString *l = g_string_new("key,label\n");
  for (guint k = 0; k < ev->sess->len; k++) {
    const Sess *s = ev->sess->pdata[k];
    if (s->split == SPLIT_TRAIN || s->split == SPLIT_CALIB ||
        s->split == SPLIT_DROPPED)
      g_string_append_printf(l, "%s,%d\n", s->key, s->label);
  }
  gboolean ok = g_file_set_contents(lab, l->str, (gssize)l->len, error);
  g_string_free(l, TRUE);
  if (!ok)
    return FALSE;
  GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
#define ARG(...) g_ptr_array_add(a, g_strdup_printf(__VA_ARGS__))
  ARG("eval"); ARG("%s", log);
  ARG("--labels"); ARG("%s", lab);
  ARG("-o"); ARG("%s", dir);
  ARG("--margin"); ARG("0");
  ARG("--threshold-rule"); ARG("max");
  ARG("--validation-outliers"); ARG(o->trim_validation ? "drop" : "keep");
  ARG("--key"); ARG("%s", o->key_re);
  ARG("--key-group"); ARG("%d", o->key_group);
  ARG("--score"); ARG("%s", o->score);
  ARG("--train-fraction"); ARG("%.17g", o->train_fraction);
  ARG("--calib-fraction"); ARG("%.17g", o->calib_fraction);
  ARG("--max-session-mib"); ARG("%" G_GINT64_FORMAT, o->max_bytes_mib);
  ARG("--vocab"); ARG("%d", o->vocab);
  ARG("--layers"); ARG("%d", o->layers);
  ARG("--d-model"); ARG("%d", o->d_model);
  ARG("--heads"); ARG("%d", o->heads);
  ARG("--d-head"); ARG("%d", o->d_head);
  ARG("--d-inner"); ARG("%d", o->d_inner);
  ARG("--mem-len"); ARG("%d", o->mem_len);
  ARG("--segment"); ARG("%d", o->segment);
  ARG("--batch"); ARG("%d", o->batch);
  ARG("--steps"); ARG("%" G_GINT64_FORMAT, o->steps);
  ARG("--lr"); ARG("%.17g", o->lr);
  ARG("--dropout"); ARG("%.17g", o->dropout);
  ARG("--seed"); ARG("%" G_GINT64_FORMAT, o->seed);
  if (o->time_limit > 0) {
    ARG("--time-limit"); ARG("%.17g", o->time_limit);
  }
  if (o->end)
    ARG("--end");
  if (o->single_stream)
    ARG("--single-stream");
  if (o->censor)
    ARG("--censor");
  if (o->dev_model) {
    ARG("--model"); ARG("%s", o->dev_model);
  }
#undef ARG
  int argc = (int)a->len;
  char **argv = g_new0(char *, argc + 1);
  memcpy(argv, a->pdata, sizeof(char *) * argc); /* parsing may reorder */
  fprintf(stderr, "txl eval: --margin dev: the development split, %"
          G_GINT64_FORMAT " lines before the first test session, in %s\n",
          ev->cut, dir);
  int rc = txl_cmd_eval(argc, argv);
  g_free(argv);
  g_ptr_array_free(a, TRUE);
  if (rc != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "the development run failed (see above)");
    return FALSE;
  }
  g_autofree char *csv = g_build_filename(dir, "sessions.csv", NULL);
  GArray *sc = g_array_new(FALSE, FALSE, sizeof(double));
  GArray *lb = g_array_new(FALSE, FALSE, sizeof(int));
  double vmax = 0, vmed = 0;
  ok = eval_dev_read(csv, sc, lb, &vmax, &vmed, o->trim_validation, error) &&
       eval_dev_choose((const double *)sc->data, (const int *)lb->data,
                       sc->len, o->anchor_median ? vmed : vmax, ch, error);
  ch->vmax = vmax;
  ch->vmedian = vmed;
  g_array_unref(sc);
  g_array_unref(lb);
  return ok;
}

int
txl_cmd_eval(int argc, char **argv)
{
  Opts o = {
    .key_re = NULL, .key_group = 0, .train_fraction = 0.5,
    .calib_fraction = 0.2, .quantile = 0.995, .margin = 0.0, .fpr = 1e-3,
    .max_bytes_mib = 1024, .vocab = 1024, .layers = 2, .d_model = 128,
    .heads = 4, .d_head = 32, .d_inner = 512, .mem_len = 128, .segment = 64,
    .batch = 16, .steps = 1000, .seed = 1, .lr = 1e-3, .dropout = 0.1,
  };
  GOptionEntry entries[] = {
    { "labels", 'l', 0, G_OPTION_ARG_FILENAME, &o.labels_path, "CSV of KEY,LABEL (Normal/Anomaly or 0/1; a header row is skipped) (required)", "FILE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &o.out_dir, "Directory for summary.json, sessions.csv, scores.svg, model.gguf (required)", "DIR" },
    { "key", 'k', 0, G_OPTION_ARG_STRING, &o.key_re, "Regex whose match is a line's session key (default: HDFS block id blk_-?[0-9]+)", "REGEX" },
    { "key-group", 0, 0, G_OPTION_ARG_INT, &o.key_group, "Capture group of the key (default 0: the whole match)", "N" },
    { "train-fraction", 0, 0, G_OPTION_ARG_DOUBLE, &o.train_fraction, "Sessions (by first line) in the training part (default 0.5)", "F" },
    { "calib-fraction", 0, 0, G_OPTION_ARG_DOUBLE, &o.calib_fraction, "Last fraction of the training part's normal sessions kept for the threshold (default 0.2)", "F" },
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &o.model_path, "Score with this model instead of training one (it must have been trained on the training part)", "MODEL" },
    { "score", 0, 0, G_OPTION_ARG_STRING, &o.score, "Session score: mean (default: mean NLL per token), max-line, max-line-sum, max-token", "KIND" },
    { "threshold-rule", 0, 0, G_OPTION_ARG_STRING, &o.rule, "max (default: the highest normal validation score) or quantile", "RULE" },
    { "quantile", 0, 0, G_OPTION_ARG_DOUBLE, &o.quantile, "Quantile for --threshold-rule quantile (default 0.995)", "Q" },
    { "margin", 0, 0, G_OPTION_ARG_STRING, &o.margin_s, "A number M: the rule's value x (1 + M) (default 0.5, chosen on a development split of the training part); dev: the factor chosen anew on a development split of this log's training part (the lines before the first test session, the same protocol, every threshold tried; DIR/dev); auto: the rule's value, or the (1 - fpr) quantile of a log-normal fitted to the normal validation scores where higher; tail: that log-normal quantile alone, even below the rule's value", "M|auto|tail|dev" },
    { "validation-outliers", 0, 0, G_OPTION_ARG_STRING, &o.outliers, "drop (default): normal validation sessions scoring above 3 x their median do not take part in the session threshold (a few odd ones would carry the maximum; txl eval names them); keep: every one does", "drop|keep" },
    { "dev-anchor", 0, 0, G_OPTION_ARG_STRING, &o.dev_anchor, "With --margin dev: the validation statistic the factor multiplies, median (default: robust to one odd validation session) or max", "median|max" },
    { "dev-model", 0, 0, G_OPTION_ARG_FILENAME, &o.dev_model, "With --margin dev: score the development split with this model (trained earlier by --margin dev, DIR/dev/model.gguf) instead of training one", "MODEL" },
    { "fpr", 0, 0, G_OPTION_ARG_DOUBLE, &o.fpr, "False-alarm rate of --margin auto's and tail's log-normal tail (default 0.001)", "P" },
    { "threshold", 0, 0, G_OPTION_ARG_DOUBLE, &o.threshold, "A fixed threshold instead of calibration", "X" },
    { "session-rule", 0, 0, G_OPTION_ARG_STRING, &o.session_rule, "censored: the threshold from the normal validation sessions as seen at the split (scored on their lines before the first test session's first line, so those in progress are cut short, as test sessions are by the end of the log); live: sessions idle longer than any normal validation session paused at their length have ended and are scored with the end marker against complete sessions; those still open at the end of the log against normal sessions' first as many lines; whole (default): every session whole, one threshold (docs/anomaly.md)", "RULE" },
    { "time-format", 0, 0, G_OPTION_ARG_STRING, &o.time_format, "strptime format of the timestamp at the start of a line, the live rule's clock (default the HDFS '%y%m%d %H%M%S'; \"\": the line number, also used when fewer than half of the lines have one)", "FMT" },
    { "end", 0, 0, G_OPTION_ARG_NONE, &o.end, "Also score each session's end (an empty line after its last) and count it in the session score", NULL },
    { "single-stream", 0, 0, G_OPTION_ARG_NONE, &o.single_stream, "One stream over the interleaved lines instead of one per session", NULL },
    { "max-session-mib", 0, 0, G_OPTION_ARG_INT64, &o.max_bytes_mib, "Memory bound on open sessions' state in MiB, 0 = none (default 1024)", "N" },
    { "lines", 0, 0, G_OPTION_ARG_FILENAME, &o.lines_out, "Write every scored line's scores as JSON Lines to FILE", "FILE" },
    { "censor", 0, 0, G_OPTION_ARG_NONE, &o.censor, "Train and calibrate only on lines logged before the first test session (default: all lines of the training part's sessions)", NULL },
    { "keep-text", 0, 0, G_OPTION_ARG_NONE, &o.keep_text, "Keep the training text files in DIR", NULL },
    { "vocab", 0, 0, G_OPTION_ARG_INT, &o.vocab, "BPE vocabulary (default 1024)", "N" },
    { "layers", 0, 0, G_OPTION_ARG_INT, &o.layers, "Layers (default 2)", "N" },
    { "d-model", 0, 0, G_OPTION_ARG_INT, &o.d_model, "Hidden size (default 128)", "N" },
    { "heads", 0, 0, G_OPTION_ARG_INT, &o.heads, "Heads (default 4)", "N" },
    { "d-head", 0, 0, G_OPTION_ARG_INT, &o.d_head, "Head size (default 32)", "N" },
    { "d-inner", 0, 0, G_OPTION_ARG_INT, &o.d_inner, "Feed-forward size (default 512)", "N" },
    { "mem-len", 0, 0, G_OPTION_ARG_INT, &o.mem_len, "Memory length (default 128)", "N" },
    { "segment", 0, 0, G_OPTION_ARG_INT, &o.segment, "Segment length (default 64)", "N" },
    { "batch", 0, 0, G_OPTION_ARG_INT, &o.batch, "Training streams (default 16)", "N" },
    { "steps", 0, 0, G_OPTION_ARG_INT64, &o.steps, "Training steps (default 1000)", "N" },
    { "lr", 0, 0, G_OPTION_ARG_DOUBLE, &o.lr, "Peak learning rate (default 1e-3)", "LR" },
    { "dropout", 0, 0, G_OPTION_ARG_DOUBLE, &o.dropout, "Dropout (default 0.1)", "P" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &o.seed, "Seed (default 1)", "N" },
    { "time-limit", 0, 0, G_OPTION_ARG_DOUBLE, &o.time_limit, "Stop training after this many minutes", "MIN" },
    { NULL },
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("LOG");
  g_option_context_set_summary(ctx,
    "Train on the normal sessions of the first part of a labelled log,\n"
    "calibrate a threshold on held-out normal sessions, score the rest one\n"
    "stream per session, and report precision, recall, F1 and AUROC per\n"
    "session and per line (docs/anomaly.md).");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) err = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
    fprintf(stderr, "txl eval: %s\n", err->message);
    return opts_free(&o), 2;
  }
  if (argc != 2 || !o.labels_path || !o.out_dir) {
    fprintf(stderr, "txl eval: need one LOG, --labels FILE and -o DIR "
                    "(txl eval --help)\n");
    return opts_free(&o), 2;
  }
  o.log_path = argv[1];
  if (!o.key_re)
    o.key_re = g_strdup("blk_-?[0-9]+");
  if (!o.score)
    o.score = g_strdup("mean");
  if (!o.rule)
    o.rule = g_strdup("max");
  if (!o.session_rule)
    o.session_rule = g_strdup("whole");
  if (!o.time_format)
    o.time_format = g_strdup("%y%m%d %H%M%S");
  if (strcmp(o.session_rule, "live") && strcmp(o.session_rule, "whole") &&
      strcmp(o.session_rule, "censored")) {
    fprintf(stderr, "txl eval: --session-rule takes whole, censored or live, not "
                    "'%s'\n", o.session_rule);
    return opts_free(&o), 2;
  }
  o.live = !strcmp(o.session_rule, "live") && !o.single_stream;
  o.censored = !strcmp(o.session_rule, "censored");
  if (o.censored && (o.end || o.censor)) {
    fprintf(stderr, "txl eval: --session-rule censored cuts the validation "
                    "sessions itself and scores no end marker: not with "
                    "--end or --censor\n");
    return opts_free(&o), 2;
  }
  if (!o.margin_s) {
    o.margin = 0.5; /* chosen on a development split (docs/anomaly.md) */
  } else if (!strcmp(o.margin_s, "auto")) {
    o.margin_auto = TRUE;
  } else if (!strcmp(o.margin_s, "tail")) {
    o.margin_tail = TRUE;
  } else if (!strcmp(o.margin_s, "dev")) {
    o.margin_dev = TRUE;
  } else {
    char *endp = NULL;
    o.margin = g_ascii_strtod(o.margin_s, &endp);
    if (!endp || *endp || endp == o.margin_s) {
      fprintf(stderr, "txl eval: --margin takes auto, tail, dev or a number, not '%s'\n",
              o.margin_s);
      return opts_free(&o), 2;
    }
  }
  if (o.margin_dev && (o.live || o.censored || o.threshold > 0 ||
                       strcmp(o.rule, "max"))) {
    fprintf(stderr, "txl eval: --margin dev is a factor of the highest "
                    "validation score of whole sessions: not with "
                    "--session-rule live or censored, --threshold or "
                    "--threshold-rule quantile\n");
    return opts_free(&o), 2;
  }
  if ((o.dev_model || o.dev_anchor) && !o.margin_dev) {
    fprintf(stderr, "txl eval: --dev-model and --dev-anchor go with --margin "
                    "dev\n");
    return opts_free(&o), 2;
  }
  if (o.dev_anchor && strcmp(o.dev_anchor, "median") &&
      strcmp(o.dev_anchor, "max")) {
    fprintf(stderr, "txl eval: --dev-anchor takes median or max, not '%s'\n",
            o.dev_anchor);
    return opts_free(&o), 2;
  }
  if (o.outliers && strcmp(o.outliers, "drop") && strcmp(o.outliers, "keep")) {
    fprintf(stderr, "txl eval: --validation-outliers takes drop or keep, not "
                    "'%s'\n", o.outliers);
    return opts_free(&o), 2;
  }
  o.trim_validation = !o.outliers || !strcmp(o.outliers, "drop");
  o.anchor_median = o.margin_dev && (!o.dev_anchor ||
                                     !strcmp(o.dev_anchor, "median"));
  int agg = agg_index(o.score);
  if (agg < 0) {
    fprintf(stderr, "txl eval: --score takes max-line, max-line-sum, "
                    "max-token or mean, not '%s'\n", o.score);
    return opts_free(&o), 2;
  }
  if (strcmp(o.rule, "max") && strcmp(o.rule, "quantile")) {
    fprintf(stderr, "txl eval: --threshold-rule takes max or quantile, not "
                    "'%s'\n", o.rule);
    return opts_free(&o), 2;
  }
  if (!(o.train_fraction > 0 && o.train_fraction < 1) ||
      !(o.calib_fraction > 0 && o.calib_fraction < 1) ||
      !(o.quantile > 0 && o.quantile <= 1) || o.margin < 0 ||
      !(o.fpr > 0 && o.fpr < 0.5) ||
      o.max_bytes_mib < 0 || o.threshold < 0) {
    fprintf(stderr, "txl eval: --train-fraction and --calib-fraction take "
                    "numbers in (0, 1), --quantile in (0, 1], --fpr in "
                    "(0, 0.5), --margin, "
                    "--threshold and --max-session-mib non-negative ones\n");
    return opts_free(&o), 2;
  }
  GError *e = NULL;
  GRegex *re = g_regex_new(o.key_re, G_REGEX_OPTIMIZE, 0, &e);
  if (!re) {
    fprintf(stderr, "txl eval: bad --key regex '%s': %s\n", o.key_re,
            e->message);
    g_error_free(e);
    return opts_free(&o), 2;
  }
  if (o.key_group < 0 || o.key_group > g_regex_get_capture_count(re)) {
    fprintf(stderr, "txl eval: --key-group %d: the regex has %d capture "
                    "groups\n", o.key_group, g_regex_get_capture_count(re));
    g_regex_unref(re);
    return opts_free(&o), 2;
  }

  int rc = 1;
  Eval ev = { .o = &o };
  ev.sess = g_ptr_array_new();
  ev.by_key = g_hash_table_new(g_str_hash, g_str_equal);
  ev.push_line = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_autofree char *text = NULL;
  gsize text_len = 0;
  GHashTable *labels = NULL;
  TxlModel *model = NULL;
  g_autofree char *model_file = NULL, *train_txt = NULL, *calib_txt = NULL;
  g_autofree double *sc = NULL, *lsc = NULL, *cal = NULL;
  g_autofree int *lab = NULL, *llab = NULL;
  FILE *lines_f = NULL;
  GPtrArray *val_lines = NULL;
  double *thr_open_a = NULL;

  if (!(labels = read_labels(o.labels_path, &err)))
    goto out;
  if (!g_file_get_contents(o.log_path, &text, &text_len, &e)) {
    g_set_error(&err, TXL_ERROR, TXL_ERROR_IO, "%s", e->message);
    g_error_free(e);
    goto out;
  }
  if (text_len == 0) {
    g_set_error(&err, TXL_ERROR, TXL_ERROR_INVALID, "%s is empty",
                o.log_path);
    goto out;
  }
  if (g_mkdir_with_parents(o.out_dir, 0755) != 0) {
    g_set_error(&err, TXL_ERROR, TXL_ERROR_IO, "cannot create %s: %s",
                o.out_dir, g_strerror(errno));
    goto out;
  }

  /* lines, keys, sessions in order of their first line */
  {
    gint64 cap = 1024;
    ev.line_ptr = g_new(const char *, cap);
    ev.line_len = g_new(gsize, cap);
    ev.line_sess = g_new(gint64, cap);
    gint64 no_key = 0, unlabelled = 0;
    for (gsize at = 0; at < text_len;) {
      const char *nl = memchr(text + at, '\n', text_len - at);
      gsize end = nl ? (gsize)(nl - text) : text_len;
      gsize len = end - at;
      if (len > 0 && text[at + len - 1] == '\r')
        len--;
      if (ev.n_lines == cap) {
        cap *= 2;
        ev.line_ptr = g_renew(const char *, ev.line_ptr, cap);
        ev.line_len = g_renew(gsize, ev.line_len, cap);
        ev.line_sess = g_renew(gint64, ev.line_sess, cap);
      }
      gint64 i = ev.n_lines++;
      ev.line_ptr[i] = text + at;
      ev.line_len[i] = len;
      ev.line_sess[i] = -1;
      GMatchInfo *mi = NULL;
      if (g_regex_match_full(re, text + at, len, 0, 0, &mi, NULL)) {
        char *key = g_match_info_fetch(mi, o.key_group);
        Sess *s = key ? g_hash_table_lookup(ev.by_key, key) : NULL;
        if (key && !s) {
          s = g_new0(Sess, 1);
          s->key = key;
          key = NULL;
          s->end_nll = NAN;
          s->first_line = i;
          gpointer lv = g_hash_table_lookup(labels, s->key);
          s->label = lv ? GPOINTER_TO_INT(lv) - 1 : -1;
          unlabelled += !lv;
          g_hash_table_insert(ev.by_key, s->key, s);
          g_ptr_array_add(ev.sess, s);
          s->split = (gint64)ev.sess->len; /* its index + 1, for now */
        }
        g_free(key);
        if (s) {
          ev.line_sess[i] = s->split - 1;
          s->n_lines++;
        }
      } else {
        no_key++;
      }
      g_match_info_free(mi);
      at = end + 1;
    }
    if (ev.sess->len < 4) {
      g_set_error(&err, TXL_ERROR, TXL_ERROR_INVALID,
                  "%s: the key regex '%s' finds %u session%s in %"
                  G_GINT64_FORMAT " lines: too few to train and test on",
                  o.log_path, o.key_re, ev.sess->len,
                  ev.sess->len == 1 ? "" : "s", ev.n_lines);
      goto out;
    }
    if (unlabelled == (gint64)ev.sess->len) {
      GHashTableIter it;
      gpointer k0 = NULL;
      g_hash_table_iter_init(&it, labels);
      g_hash_table_iter_next(&it, &k0, NULL);
      g_set_error(&err, TXL_ERROR, TXL_ERROR_INVALID,
                  "no session has a label: the key regex finds keys like "
                  "'%s', the labels file has keys like '%s' (--key, "
                  "--key-group)", ((Sess *)ev.sess->pdata[0])->key,
                  (char *)k0);
      goto out;
    }
    fprintf(stderr, "txl eval: %" G_GINT64_FORMAT " lines, %u sessions, %"
            G_GINT64_FORMAT " lines without a key, %" G_GINT64_FORMAT
            " sessions without a label (left out)\n", ev.n_lines,
            ev.sess->len, no_key, unlabelled);
  }

  /* the split: first train_fraction of the sessions; of its normal ones
   * the last calib_fraction calibrate */
  gint64 n_train_part = (gint64)(o.train_fraction * ev.sess->len);
  gint64 n_norm = 0, counts[5] = { 0 };
  for (gint64 k = 0; k < n_train_part; k++)
    n_norm += ((Sess *)ev.sess->pdata[k])->label == 0;
  gint64 n_fit = n_norm - (gint64)ceil(o.calib_fraction * n_norm), seen = 0;
  for (guint k = 0; k < ev.sess->len; k++) {
    Sess *s = ev.sess->pdata[k];
    if (s->label < 0)
      s->split = SPLIT_UNLABELLED;
    else if ((gint64)k >= n_train_part)
      s->split = SPLIT_TEST;
    else if (s->label == 1)
      s->split = SPLIT_DROPPED; /* anomalies of the training part: unused */
    else
      s->split = seen++ < n_fit ? SPLIT_TRAIN : SPLIT_CALIB;
    counts[s->split]++;
  }
  if (counts[SPLIT_TRAIN] < 1 || counts[SPLIT_CALIB] < 1 ||
      counts[SPLIT_TEST] < 1) {
    g_set_error(&err, TXL_ERROR, TXL_ERROR_INVALID,
                "need at least one training, one validation and one test "
                "session (have %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                ", %" G_GINT64_FORMAT ")", counts[SPLIT_TRAIN],
                counts[SPLIT_CALIB], counts[SPLIT_TEST]);
    goto out;
  }
  fprintf(stderr, "txl eval: sessions: %" G_GINT64_FORMAT " train (normal), %"
          G_GINT64_FORMAT " validation (normal), %" G_GINT64_FORMAT
          " test, %" G_GINT64_FORMAT " anomalous ones of the training part "
          "left out\n", counts[SPLIT_TRAIN], counts[SPLIT_CALIB],
          counts[SPLIT_TEST], counts[SPLIT_DROPPED]);

  ev.cut = ((Sess *)ev.sess->pdata[n_train_part])->first_line;

  EvalDevChoice dev = { 0 };
  if (o.margin_dev) {
    if (!run_dev(&ev, text, &o, &dev, &err))
      goto out;
    o.margin = dev.factor - 1.0;
    fprintf(stderr, "txl eval: --margin dev: on %" G_GINT64_FORMAT
            " development test sessions (%" G_GINT64_FORMAT " anomalous) "
            "the best F1 %.4f holds for thresholds in [%.6g, %.6g); their "
            "middle %.6g is %.6g x the development validation %s "
            "%.6g\n", dev.n, dev.n_anom, dev.f1, dev.lo, dev.hi,
            dev.threshold, dev.factor, o.anchor_median ? "median" : "maximum",
            dev.anchor);
  }

  /* the live rule: the clock and the idle timeouts, from the validation
   * sessions' timestamps alone */
  if (o.live) {
    line_clock(&ev);
    val_lines = validation_lines(&ev);
    idle_schedule(&ev, val_lines);
    ev.n_open = ev.n_idle;
    for (guint k = 0; k < ev.sess->len; k++) {
      Sess *s = ev.sess->pdata[k];
      if (s->split == SPLIT_TEST)
        s->parts_a = g_array_new(FALSE, FALSE, sizeof(Part));
    }
    fprintf(stderr, "txl eval: live rule: clock %s (%" G_GINT64_FORMAT
            " of %" G_GINT64_FORMAT " lines with a timestamp '%s'); idle "
            "timeouts T(k) for k = 1..%u lines: %g .. %g\n",
            ev.time_clock ? "log time, s" : "line number", ev.time_parsed,
            ev.n_lines, o.time_format, ev.n_idle, ev.idle_after[0],
            ev.idle_after[ev.n_idle - 1]);
  }

  /* training */
  double train_s = 0;
  if (o.model_path) {
    model_file = g_strdup(o.model_path);
  } else {
    model_file = g_build_filename(o.out_dir, "model.gguf", NULL);
    train_txt = g_build_filename(o.out_dir, "train.txt", NULL);
    calib_txt = g_build_filename(o.out_dir, "validation.txt", NULL);
    gint64 n1, n2;
    if (!write_sessions_text(&ev, SPLIT_TRAIN, train_txt, &n1, &err) ||
        !write_sessions_text(&ev, SPLIT_CALIB, calib_txt, &n2, &err))
      goto out;
    fprintf(stderr, "txl eval: training on %" G_GINT64_FORMAT " lines (%s)\n",
            n1, o.single_stream ? "interleaved" : "grouped by session");
    gint64 t0 = g_get_monotonic_time();
    int trc = run_train(&o, model_file, train_txt, calib_txt);
    train_s = (g_get_monotonic_time() - t0) / 1e6;
    if (!o.keep_text) {
      g_remove(train_txt);
      g_remove(calib_txt);
    }
    if (trc != 0) {
      g_set_error_literal(&err, TXL_ERROR, TXL_ERROR_INVALID,
                          "training failed (see above)");
      goto out;
    }
  }
  if (!(model = txl_model_load(model_file, &err)))
    goto out;
  if (txl_tokenizer_type(txl_model_tokenizer(model)) == TXL_TOKENIZER_NONE) {
    g_set_error(&err, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "%s has no tokenizer", model_file);
    goto out;
  }

  /* scoring: validation and test sessions, each in its own stream */
  ev.l_mean = g_new(double, ev.n_lines);
  ev.l_sum = g_new(double, ev.n_lines);
  ev.l_worst = g_new0(double, ev.n_lines);
  ev.l_max = g_new(double, ev.n_lines);
  ev.l_tok = g_new0(int, ev.n_lines);
  for (gint64 i = 0; i < ev.n_lines; i++)
    ev.l_mean[i] = ev.l_sum[i] = ev.l_max[i] = NAN;
  double score_s;
  gint64 n_scored;
  guint64 evicted;
  if (!score_lines(&ev, model, &score_s, &n_scored, &evicted, &err))
    goto out;
  double lps = n_scored / MAX(score_s, 1e-9);
  fprintf(stderr, "txl eval: scored %" G_GINT64_FORMAT " lines in %.1f s "
          "(%.0f lines/s, %" G_GUINT64_FORMAT " sessions evicted)\n",
          n_scored, score_s, lps, evicted);

  /* thresholds from the validation sessions and lines, metrics on test */
  gsize n_cal = counts[SPLIT_CALIB], n_test = counts[SPLIT_TEST];
  cal = g_new(double, MAX(n_cal, 1));
  sc = g_new(double, n_test);
  lab = g_new(int, n_test);
  Metrics sess_m, line_m;
  GString *abl = g_string_new(NULL);
  double thr = 0;
  double line_bpb_thr = 0;
  gsize n_cal_used = 0, n_cal_cut = 0;
  if (o.live) {
    ev.thr_open = g_new(double, ev.n_open);
    thr_open_a = g_new(double, ev.n_open);
    for (int a = 0; a < N_AGG; a++) {
      double te;
      live_calibrate(&ev, val_lines, a, &te, thr_open_a);
      gsize nt = 0;
      for (guint k = 0; k < ev.sess->len; k++) {
        Sess *s = ev.sess->pdata[k];
        if (s->split == SPLIT_TEST) {
          sc[nt] = live_value(&ev, s, a, te, thr_open_a, a == agg);
          lab[nt++] = s->label;
        }
      }
      Metrics m;
      metrics(sc, lab, nt, 1.0, &m);
      if (a == agg) {
        sess_m = m;
        thr = 1.0;
        ev.thr_end = te;
        memcpy(ev.thr_open, thr_open_a, sizeof(double) * ev.n_open);
      }
      g_string_append_printf(abl, "%s{\"score\": \"%s\", \"rule\": \"live\""
                             ", \"threshold_ended\": %.6g, ",
                             abl->len ? ", " : "", agg_names[a], te);
      json_metrics(abl, "session", &m);
      g_string_append(abl, "}");
      fprintf(stderr, "txl eval:   %-13s live     ended %8.4f  open %.4f..%.4f"
              "  P %.3f  R %.3f  F1 %.3f  AUROC %.4f%s\n", agg_names[a], te,
              thr_open_a[0], thr_open_a[ev.n_open - 1], m.precision,
              m.recall, m.f1, m.auroc, a == agg ? "  <- chosen" : "");
    }
  }
  for (int a = 0; a < N_AGG; a++)
    for (int with_end = 1; with_end >= 0; with_end--) {
      if (with_end && (!(o.end || o.live) || o.single_stream))
        continue;
      gsize nc = 0, nt = 0, ncut = 0;
      if (o.censored)
        nc = censored_scores(&ev, a, cal, &ncut);
      for (guint k = 0; k < ev.sess->len; k++) {
        Sess *s = ev.sess->pdata[k];
        if (s->split == SPLIT_CALIB && !o.censored)
          cal[nc++] = sess_score(s, a, with_end);
        else if (s->split == SPLIT_TEST) {
          sc[nt] = sess_score(s, a, with_end);
          lab[nt++] = s->label;
        }
      }
      double t = calibrate(&o, cal, nc, TRUE);
      Metrics m;
      metrics(sc, lab, nt, t, &m);
      gboolean chosen = !o.live && a == agg &&
                        with_end == !(!o.end || o.single_stream);
      if (chosen) {
        sess_m = m;
        thr = t;
        n_cal_used = nc;
        n_cal_cut = ncut;
      }
      g_string_append_printf(abl, "%s{\"score\": \"%s\", \"rule\": "
                             "\"%s\", \"end\": %s, ",
                             abl->len ? ", " : "", agg_names[a],
                             o.censored ? "censored" : "whole",
                             with_end ? "true" : "false");
      json_metrics(abl, "session", &m);
      g_string_append(abl, "}");
      fprintf(stderr, "txl eval:   %-13s %-8s end %-3s threshold %8.4f  P %.3f  "
              "R %.3f  F1 %.3f  AUROC %.4f%s\n", agg_names[a],
              o.censored ? "censored" : "whole", with_end ? "yes" : "no", t, m.precision, m.recall, m.f1,
              m.auroc, chosen ? "  <- chosen" : "");
    }
  /* the chosen kind again, so that sc/lab hold it for the outputs */
  {
    gboolean with_end = !(!o.end || o.single_stream);
    gsize nt = 0;
    for (guint k = 0; k < ev.sess->len; k++) {
      Sess *s = ev.sess->pdata[k];
      if (s->split == SPLIT_TEST) {
        sc[nt] = o.live ? live_value(&ev, s, agg, ev.thr_end, ev.thr_open,
                                     TRUE)
                        : sess_score(s, agg, with_end);
        lab[nt++] = s->label;
      }
    }
  }
  /* lines: a line's label is its session's */
  {
    gsize nc = 0, nt = 0;
    GArray *lc = g_array_new(FALSE, FALSE, sizeof(double));
    lsc = g_new(double, ev.n_lines);
    llab = g_new(int, ev.n_lines);
    for (gint64 i = 0; i < ev.n_lines; i++) {
      gint64 si = ev.line_sess[i];
      if (si < 0 || isnan(ev.l_sum[i]))
        continue;
      Sess *s = ev.sess->pdata[si];
      double v = line_score(&ev, i, agg);
      if (s->split == SPLIT_CALIB) {
        g_array_append_val(lc, v);
        nc++;
      } else if (s->split == SPLIT_TEST) {
        lsc[nt] = v;
        llab[nt++] = s->label;
      }
    }
    double lt = calibrate(&o, (double *)lc->data, nc, FALSE);
    metrics(lsc, llab, nt, lt, &line_m);
    g_array_free(lc, TRUE);
    /* the same rule in txlsink's unit, bits per byte with the line end,
     * for the calibration the model file carries */
    GArray *lb = g_array_new(FALSE, FALSE, sizeof(double));
    for (gint64 i = 0; i < ev.n_lines; i++) {
      gint64 si = ev.line_sess[i];
      if (si < 0 || isnan(ev.l_sum[i]) ||
          ((Sess *)ev.sess->pdata[si])->split != SPLIT_CALIB)
        continue;
      double v = ev.l_worst[i]; /* what txlsink and txl score compare */
      g_array_append_val(lb, v);
    }
    line_bpb_thr = o.threshold > 0 ? 0.0
                   : calibrate(&o, (double *)lb->data, lb->len, FALSE);
    if (!isfinite(line_bpb_thr))
      line_bpb_thr = 0.0;
    g_array_free(lb, TRUE);
  }

  /* One odd normal validation session can carry a maximum-based threshold
   * far from the rest (docs/anomaly.md: HDFS at other split points); it
   * shows without test labels, so say so. */
  double val_max = NAN, val_med = NAN;
  const char *val_max_key = NULL;
  if (!o.live) {
    GArray *vv = g_array_new(FALSE, FALSE, sizeof(double));
    gboolean we = !(!o.end || o.single_stream);
    for (guint k = 0; k < ev.sess->len; k++) {
      Sess *s = ev.sess->pdata[k];
      if (s->split != SPLIT_CALIB)
        continue;
      double v = sess_score(s, agg, we);
      g_array_append_val(vv, v);
      if (!(v <= val_max)) {
        val_max = v;
        val_max_key = s->key;
      }
    }
    val_med = eval_median((double *)vv->data, vv->len);
    g_array_free(vv, TRUE);
    if (val_med > 0 && val_max > 3.0 * val_med)
      fprintf(stderr, "txl eval: warning: the highest normal validation "
              "score (%.4g, session %s) is %.1f x their median (%.4g): "
              "%s; look at such sessions (sessions.csv, split calibration)\n",
              val_max, val_max_key, val_max / val_med, val_med,
              o.trim_validation ? "the sessions above 3 x the median are "
              "left out of the threshold (--validation-outliers keep: not)"
              : "it decides a threshold based on the maximum");
  }
  char margin_txt[64] = "";
  if (o.margin_dev)
    g_snprintf(margin_txt, sizeof margin_txt, " (margin dev: x %.4g)",
               dev.factor);
  else if (o.margin > 0)
    g_snprintf(margin_txt, sizeof margin_txt, " (margin %g)", o.margin);
  printf("txl eval: %s, %" G_GINT64_FORMAT " test sessions (%" G_GINT64_FORMAT
         " anomalous), score %s%s, threshold %s%s%s\n", o.log_path,
         sess_m.n, sess_m.n_anom, o.score,
         o.live ? ", live rule (session threshold: score / its threshold)"
         : o.censored ? ", validation sessions censored at the split"
         : (!o.end || o.single_stream) ? "" : " with the end marker",
         o.threshold > 0 ? "fixed" : o.anchor_median ? "median" : o.rule,
         o.threshold > 0 ? "" : o.margin_auto ? " (margin auto)"
         : o.margin_tail ? " (margin tail)" : margin_txt,
         o.single_stream ? ", single stream" : "");
  printf("  %-8s %10s %10s %9s %9s %9s %9s %8s\n", "level", "threshold",
         "flagged", "precision", "recall", "F1", "AUROC", "n");
  const Metrics *ms[2] = { &sess_m, &line_m };
  const char *lv[2] = { "session", "line" };
  for (int k = 0; k < 2; k++)
    printf("  %-8s %10.4f %10" G_GINT64_FORMAT " %9.4f %9.4f %9.4f %9.4f %8"
           G_GINT64_FORMAT "\n", lv[k], ms[k]->threshold,
           ms[k]->tp + ms[k]->fp, ms[k]->precision, ms[k]->recall, ms[k]->f1,
           ms[k]->auroc, ms[k]->n);
  if (o.live) {
    gint64 st[3] = { 0 };
    for (guint k = 0; k < ev.sess->len; k++) {
      Sess *s = ev.sess->pdata[k];
      if (s->split == SPLIT_TEST)
        st[s->status]++;
    }
    printf("  live: test sessions %" G_GINT64_FORMAT " ended, %"
           G_GINT64_FORMAT " open at the end, %" G_GINT64_FORMAT " split by "
           "a pause; threshold ended %.4f, open %.4f (1 line) .. %.4f (%u+)"
           "; idle after %g .. %g %s\n", st[STATUS_ENDED], st[STATUS_OPEN],
           st[STATUS_SPLIT], ev.thr_end, ev.thr_open[0],
           ev.thr_open[ev.n_open - 1], ev.n_open, ev.idle_after[0],
           ev.idle_after[ev.n_idle - 1], ev.time_clock ? "s" : "lines");
  }
  if (o.censored)
    printf("  censored: cut at line %" G_GINT64_FORMAT " (the first line of "
           "the first test session); %" G_GSIZE_FORMAT " validation sessions "
           "scored on their lines before it, %" G_GSIZE_FORMAT " of them cut "
           "short\n", ev.cut + 1, n_cal_used, n_cal_cut);
  if (o.margin_dev)
    printf("  development: %" G_GINT64_FORMAT " test sessions (%"
           G_GINT64_FORMAT " anomalous), best F1 %.4f for thresholds in "
           "[%.4f, %.4f); middle %.4f = %.4f x its validation %s %.4f\n",
           dev.n, dev.n_anom, dev.f1, dev.lo, dev.hi, dev.threshold,
           dev.factor, o.anchor_median ? "median" : "maximum", dev.anchor);
  printf("  scoring: %" G_GINT64_FORMAT " lines in %.1f s, %.0f lines/s\n",
         n_scored, score_s, lps);

  /* outputs */
  {
    g_autofree char *csv = g_build_filename(o.out_dir, "sessions.csv", NULL);
    GString *c = g_string_new("key,label,split,lines,score,flagged,"
                              "max_line,max_line_sum,max_token,mean,end_nll");
    g_string_append(c, o.live ? ",status,parts,threshold\n" : "\n");
    for (guint k = 0; k < ev.sess->len; k++) {
      Sess *s = ev.sess->pdata[k];
      gboolean scored = s->split == SPLIT_CALIB || s->split == SPLIT_TEST;
      double v = sess_score(s, agg, !(!o.end || o.single_stream));
      double vt = thr;
      if (o.live && s->split == SPLIT_CALIB) {
        v = sess_score(s, agg, TRUE);
        vt = ev.thr_end;
      } else if (o.live && s->split == SPLIT_TEST) {
        v = s->rule_score;
        vt = s->rule_thr;
      }
      g_string_append_printf(c, "%s,%d,%s,%" G_GINT64_FORMAT ",", s->key,
                             s->label, split_names[s->split], s->n_lines);
      if (scored)
        g_string_append_printf(c, "%.6f,%d,%.6f,%.6f,%.6f,%.6f,%.6f", v,
                               v > vt, s->max_line_mean, s->max_line_sum,
                               s->max_token, sess_score(s, 3, FALSE),
                               isfinite(s->end_nll) ? s->end_nll : -1.0);
      else
        g_string_append(c, ",,,,,,");
      if (o.live && scored)
        g_string_append_printf(c, ",%s,%d,%.6f\n",
                               s->split == SPLIT_TEST
                                 ? status_names[s->status] : "ended",
                               MAX(s->parts, 1), vt);
      else
        g_string_append(c, o.live ? ",,,\n" : "\n");
    }
    gboolean ok = g_file_set_contents(csv, c->str, c->len, &err);
    g_string_free(c, TRUE);
    if (!ok)
      goto out;
    g_autofree char *svg = g_build_filename(o.out_dir, "scores.svg", NULL);
    g_autofree char *log_base = g_path_get_basename(o.log_path);
    g_autofree char *title = g_strdup_printf(
      "%s: test sessions by %s score%s (F1 %.3f, AUROC %.4f)",
      log_base, o.score, o.live ? " / threshold (live rule)" : "",
      sess_m.f1, sess_m.auroc);
    if (!write_svg(svg, sc, lab, sess_m.n, thr, title, &err))
      goto out;
    g_autofree char *margin_json = o.margin_dev ? g_strdup("\"dev\"")
        : o.margin_auto ? g_strdup("\"auto\"")
        : o.margin_tail ? g_strdup("\"tail\"") : g_strdup_printf("%g", o.margin);
    GString *j = g_string_new("{");
    g_string_append(j, "\"log\": ");
    txl_json_append_string(j, o.log_path, strlen(o.log_path));
    g_string_append(j, ", \"labels\": ");
    txl_json_append_string(j, o.labels_path, strlen(o.labels_path));
    g_string_append(j, ", \"key\": ");
    txl_json_append_string(j, o.key_re, strlen(o.key_re));
    g_string_append(j, ", \"model\": ");
    txl_json_append_string(j, model_file, strlen(model_file));
    g_string_append_printf(j,
      ", \"lines\": %" G_GINT64_FORMAT ", \"sessions\": {\"train\": %"
      G_GINT64_FORMAT ", \"validation\": %" G_GINT64_FORMAT ", \"test\": %"
      G_GINT64_FORMAT ", \"dropped_anomalous\": %" G_GINT64_FORMAT
      ", \"unlabelled\": %" G_GINT64_FORMAT "}, \"train_fraction\": %g"
      ", \"calib_fraction\": %g, \"score\": \"%s\", \"end_marker\": %s"
      ", \"single_stream\": %s, \"threshold_rule\": \"%s\", \"quantile\": %g"
      ", \"margin\": %s, \"fpr\": %g, ", ev.n_lines, counts[SPLIT_TRAIN],
      counts[SPLIT_CALIB], counts[SPLIT_TEST], counts[SPLIT_DROPPED],
      counts[SPLIT_UNLABELLED], o.train_fraction, o.calib_fraction, o.score,
      (!o.end || o.single_stream) ? "false" : "true",
      o.single_stream ? "true" : "false",
      o.threshold > 0 ? "fixed" : o.anchor_median ? "median" : o.rule,
      o.quantile, margin_json, o.fpr);
    g_string_append_printf(j, "\"session_rule\": \"%s\", ",
                           o.live ? "live" : o.censored ? "censored" : "whole");
    g_string_append_printf(j, "\"trim_validation\": %s, ",
                           o.trim_validation ? "true" : "false");
    if (isfinite(val_max) && isfinite(val_med)) {
      g_string_append_printf(j, "\"validation_scores\": {\"max\": %.9g, "
                             "\"median\": %.9g, \"max_session\": ", val_max,
                             val_med);
      txl_json_append_string(j, val_max_key, strlen(val_max_key));
      g_string_append(j, "}, ");
    }
    if (o.margin_dev)
      g_string_append_printf(j, "\"dev\": {\"sessions\": %" G_GINT64_FORMAT
                             ", \"anomalous\": %" G_GINT64_FORMAT ", \"f1\": "
                             "%.6g, \"tp\": %" G_GINT64_FORMAT ", \"fp\": %"
                             G_GINT64_FORMAT ", \"plateau\": [%.9g, %.9g], "
                             "\"threshold\": %.9g, \"validation_max\": %.9g"
                             ", \"validation_median\": %.9g, \"anchor\": "
                             "\"%s\", \"factor\": %.9g}, ", dev.n, dev.n_anom,
                             dev.f1, dev.tp, dev.fp, dev.lo, dev.hi,
                             dev.threshold, dev.vmax, dev.vmedian,
                             o.anchor_median ? "median" : "max", dev.factor);
    if (o.censored)
      g_string_append_printf(j, "\"censored\": {\"cut_line\": %"
                             G_GINT64_FORMAT ", \"validation_sessions\": %"
                             G_GSIZE_FORMAT ", \"cut_sessions\": %"
                             G_GSIZE_FORMAT "}, ", ev.cut + 1, n_cal_used,
                             n_cal_cut);
    if (o.live) {
      const char *tf = ev.time_clock ? o.time_format : "";
      g_string_append(j, "\"live\": {\"clock\": ");
      g_string_append(j, ev.time_clock ? "\"time\"" : "\"lines\"");
      g_string_append(j, ", \"time_format\": ");
      txl_json_append_string(j, tf, strlen(tf));
      g_string_append(j, ", \"idle_after\": [");
      append_list(j, ev.idle_after, ev.n_idle, ", ");
      g_string_append_printf(j, "], \"threshold_ended\": %.6g, "
                             "\"thresholds_open\": [", ev.thr_end);
      append_list(j, ev.thr_open, ev.n_open, ", ");
      gint64 st[3] = { 0 };
      for (guint k = 0; k < ev.sess->len; k++) {
        Sess *s = ev.sess->pdata[k];
        if (s->split == SPLIT_TEST)
          st[s->status]++;
      }
      g_string_append_printf(j, "], \"test_ended\": %" G_GINT64_FORMAT
                             ", \"test_open\": %" G_GINT64_FORMAT
                             ", \"test_split\": %" G_GINT64_FORMAT "}, ",
                             st[0], st[1], st[2]);
      /* the same rule for txlsessions: its properties */
      GString *props = g_string_new(NULL);
      g_string_append_printf(props, "session-score=%s session-end-marker=true "
                             "session-time-format=\"%s\" session-idle-after=\"",
                             agg_names[agg], tf);
      append_list(props, ev.idle_after, ev.n_idle, ",");
      g_string_append_printf(props, "\" session-threshold=%.6g "
                             "session-open-thresholds=\"", ev.thr_end);
      append_list(props, ev.thr_open, ev.n_open, ",");
      g_string_append(props, "\"\n");
      g_autofree char *pp = g_build_filename(o.out_dir, "txlsessions.txt",
                                             NULL);
      gboolean pok = g_file_set_contents(pp, props->str, props->len, &err);
      g_string_free(props, TRUE);
      if (!pok) {
        g_string_free(j, TRUE);
        goto out;
      }
    }
    json_metrics(j, "session", &sess_m);
    g_string_append(j, ", ");
    json_metrics(j, "line", &line_m);
    g_string_append_printf(j,
      ", \"scoring\": {\"lines\": %" G_GINT64_FORMAT ", \"seconds\": %.3f"
      ", \"lines_per_s\": %.1f, \"evicted_sessions\": %" G_GUINT64_FORMAT
      ", \"threads\": %d}, \"training_seconds\": %.1f, \"all_scores\": [%s]}\n",
      n_scored, score_s, lps, evicted, txl_num_threads(), train_s, abl->str);
    g_string_free(abl, TRUE);
    g_autofree char *jp = g_build_filename(o.out_dir, "summary.json", NULL);
    ok = g_file_set_contents(jp, j->str, j->len, &err);
    g_string_free(j, TRUE);
    if (!ok)
      goto out;
    if (o.lines_out) {
      if (!(lines_f = fopen(o.lines_out, "wb"))) {
        g_set_error(&err, TXL_ERROR, TXL_ERROR_IO, "cannot write %s: %s",
                    o.lines_out, g_strerror(errno));
        goto out;
      }
      for (gint64 i = 0; i < ev.n_lines; i++) {
        gint64 si = ev.line_sess[i];
        if (si < 0 || isnan(ev.l_sum[i]))
          continue;
        Sess *s = ev.sess->pdata[si];
        GString *l = g_string_new(NULL);
        g_string_append_printf(l, "{\"line\": %" G_GINT64_FORMAT ", \"key\": ",
                               i + 1);
        txl_json_append_string(l, s->key, strlen(s->key));
        g_string_append_printf(l, ", \"split\": \"%s\", \"label\": %d, "
                               "\"nll\": ", split_names[s->split], s->label);
        txl_json_append_double(l, "%.6f", ev.l_sum[i]);
        g_string_append(l, ", \"mean\": ");
        txl_json_append_double(l, "%.6f", ev.l_mean[i]);
        g_string_append(l, ", \"max_token\": ");
        txl_json_append_double(l, "%.6f", ev.l_max[i]);
        g_string_append(l, ", \"worst\": ");
        txl_json_append_double(l, "%.6f", ev.l_worst[i]);
        double v = line_score(&ev, i, agg);
        g_string_append_printf(l, ", \"flag\": %s}\n",
                               !isfinite(v) || v > line_m.threshold
                                 ? "true" : "false");
        fputs(l->str, lines_f);
        g_string_free(l, TRUE);
      }
    }
    /* the calibration travels with the weights it was measured with */
    if (!o.live) {
      g_autofree char *log_base2 = g_path_get_basename(o.log_path);
      g_autofree char *cal_out = g_build_filename(o.out_dir, "model.gguf",
                                                  NULL);
      g_autofree char *factor = o.margin_auto ? g_strdup("margin auto")
        : o.margin_tail ? g_strdup("log-normal tail")
        : o.margin_dev ? g_strdup_printf("times %.4g (chosen on a development "
                                         "split)", 1.0 + o.margin)
        : g_strdup_printf("times %g", 1.0 + o.margin);
      g_autofree char *rule = o.threshold > 0
        ? g_strdup_printf("fixed threshold %g (txl eval --threshold)",
                          o.threshold)
        : g_strdup_printf("txl eval: %s of the %s scores of %" G_GSIZE_FORMAT
                          " normal validation sessions%s of %s, %s",
                          o.anchor_median ? "median" : o.rule, o.score,
                          n_cal_used, o.censored ? " cut at the split"
                          : o.trim_validation ? " (those above 3 x the median "
                          "left out)" : "", log_base2, factor);
      TxlCalibration cb = {
        .sessions = !o.single_stream, .session_key = o.key_re,
        .session_key_group = o.key_group, .session_score = agg,
        .session_end_marker = o.end && !o.single_stream,
        .session_threshold = isfinite(thr) ? thr : 0.0,
        .line_threshold_bpb = line_bpb_thr, .rule = rule,
      };
      if (!txl_model_file_set_calibration(model_file, cal_out, &cb, &err))
        goto out;
      fprintf(stderr, "txl eval: %s carries the calibration (session "
              "threshold %.6g, line threshold %.6g bits per byte)\n",
              cal_out, cb.session_threshold, cb.line_threshold_bpb);
    }
    fprintf(stderr, "txl eval: wrote %s/summary.json, sessions.csv, "
            "scores.svg\n", o.out_dir);
  }
  rc = 0;
out:
  if (err)
    fprintf(stderr, "txl eval: %s\n", err->message);
  if (lines_f)
    fclose(lines_f);
  if (model)
    txl_model_unref(model);
  if (labels)
    g_hash_table_destroy(labels);
  for (guint k = 0; k < ev.sess->len; k++) {
    Sess *s = ev.sess->pdata[k];
    g_free(s->key);
    if (s->parts_a)
      g_array_unref(s->parts_a);
    g_free(s);
  }
  g_ptr_array_free(ev.sess, TRUE);
  g_hash_table_destroy(ev.by_key);
  g_array_free(ev.push_line, TRUE);
  g_free(ev.line_ptr);
  g_free(ev.line_len);
  g_free(ev.line_sess);
  g_free(ev.l_mean);
  g_free(ev.l_sum);
  g_free(ev.l_worst);
  g_free(ev.l_max);
  g_free(ev.l_tok);
  g_free(ev.line_time);
  g_free(ev.idle_after);
  g_free(ev.thr_open);
  g_free(thr_open_a);
  if (val_lines)
    g_ptr_array_free(val_lines, TRUE);
  g_regex_unref(re);
  opts_free(&o);
  return rc;
}
