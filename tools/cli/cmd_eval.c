/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl eval: log anomaly detection measured against session labels.
 *
 *   txl eval LOG --labels LABELS.csv -o DIR [--key REGEX] [options]
 *
 * The command only reads options and runs the steps in tools/cli/eval/
 * in order (eval/eval.h says which file does what): read the log into
 * sessions and split them (train, validation, test), train a model on the
 * training sessions (train_run.c, as `txl train --tokenizer bpe
 * --normalize`), score validation and test sessions each in its own
 * stream, set the thresholds from the validation sessions, labels unread
 * (eval/threshold.h, docs/anomaly.md), measure the test sessions, and
 * write DIR/summary.json, sessions.csv, scores.svg and model.gguf with
 * the calibration. */
#include "cmd.h"
#include "eval/eval.h"
#include "eval/labels.h"
#include "eval/metrics.h"
#include "eval/svg.h"
#include "eval/threshold.h"
#include "txl_anomaly.h"
#include "txl_formats.h"
#include "train_run.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *log_path, *labels_path, *out_dir, *key_re, *model_path;
  int key_group;
  double train_fraction, calib_fraction;
  char *score;
  int agg;              /* index of --score in eval_agg_names */
  char *margin_s;       /* --margin as given */
  EvalThresholdRule rule;
  gboolean end, single_stream, keep_text, normal_only;
  char *lines_out;
  gint64 max_bytes_mib;
  TrainOptions train;   /* the model's shape and optimisation */
} Opts;

/* What the steps found, for the reports. */
typedef struct {
  char *model_file;
  double train_s, score_s;
  gint64 n_scored;
  guint64 evicted;
  EvalMetrics sess_m, line_m;
  double thr, line_bpb_thr;
  gsize n_cal_used;
  double *sc;           /* test session scores of the chosen kind */
  int *lab;
  GString *all_scores;  /* every kind, JSON objects */
  double val_max, val_med;
  const char *val_max_key;
} Result;

/* The end marker counts in the chosen score (with one stream per session). */
static gboolean
with_end(const Opts *o)
{
  return o->end && !o->single_stream;
}

static void
opts_free(Opts *o)
{
  txl_free_each(g_free, o->labels_path, o->out_dir, o->key_re, o->model_path,
                o->score, o->margin_s, o->lines_out);
}

/* Trains the model as `txl train --tokenizer bpe --normalize` would, with
 * this command's model options and validation on val_txt. */
static int
run_train(const Opts *o, const char *model, const char *train_txt,
          const char *val_txt)
{
  TrainOptions t = o->train;
  char *inputs[] = { (char *)train_txt, NULL };
  t.inputs = inputs;
  t.n_inputs = 1;
  t.output = (char *)model;
  t.val_path = (char *)val_txt;
  t.val_fraction = 0.0;
  t.tokenizer = (char *)"bpe";
  t.normalize = TRUE;
  t.warmup = (int)MIN(100, t.steps / 10);
  t.eval_every = 0;
  t.eval_tokens = 20000;
  t.checkpoint_every = 0;
  t.log_every = 100;
  g_autoptr(GError) err = NULL;
  if (!train_options_check(&t, &err)) {
    fprintf(stderr, "txl train: %s\n", err->message);
    return 2;
  }
  return train_run(&t);
}
/* An AUROC for people: "n/a" where it has no value (no anomalous or no
 * normal session to rank), never "nan". */
static const char *
auroc_text(char buf[16], double v)
{
  if (isnan(v))
    return "n/a";
  g_snprintf(buf, 16, "%.4f", v);
  return buf;
}

/* The option values after parsing; 2 (usage) on a bad one. */
static int
check_opts(Opts *o)
{
  if (!o->key_re)
    o->key_re = g_strdup("blk_-?[0-9]+");
  if (!o->score)
    o->score = g_strdup("mean");
  o->rule.margin = TXL_SESSION_RULE_MARGIN; /* chosen on a development split */
  if (o->margin_s && !txl_cmd_number(o->margin_s, &o->rule.margin)) {
    fprintf(stderr, "txl eval: --margin takes a number >= 0, not '%s' (auto, "
            "tail and dev lost their experiments and were removed: "
            "docs/notes/anomaly-experiments.md)\n", o->margin_s);
    return 2;
  }
  o->agg = eval_agg_index(o->score);
  if (o->agg < 0) {
    fprintf(stderr, "txl eval: --score takes max-line, max-line-sum, "
                    "max-token or mean, not '%s'\n", o->score);
    return 2;
  }
  if (!(o->train_fraction > 0 && o->train_fraction < 1) ||
      !(o->calib_fraction > 0 && o->calib_fraction < 1) ||
      o->max_bytes_mib < 0 ||
      !(o->rule.fixed >= 0 && isfinite(o->rule.fixed))) {
    fprintf(stderr, "txl eval: --train-fraction and --calib-fraction take "
                    "numbers in (0, 1), --threshold and --max-session-mib "
                    "finite non-negative ones\n");
    return 2;
  }
  return 0;
}

static int
parse_opts(Opts *o, int argc, char **argv)
{
  *o = (Opts){
    .train_fraction = 0.5, .calib_fraction = 0.2, .max_bytes_mib = 4096,
  };
  /* txl train's defaults, but a smaller, faster model: enough for the
   * HDFS numbers in docs/anomaly.md */
  train_options_init(&o->train);
  o->train.layers = 2;
  o->train.d_model = 128;
  o->train.heads = 4;
  o->train.d_inner = 512;
  o->train.steps = 1000;
  GOptionEntry entries[] = {
    { "labels", 'l', 0, G_OPTION_ARG_FILENAME, &o->labels_path, "CSV of KEY,LABEL (Normal/Anomaly or 0/1; a header row is skipped) (required)", "FILE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &o->out_dir, "Directory for summary.json, sessions.csv, scores.svg, model.gguf (required)", "DIR" },
    { "key", 'k', 0, G_OPTION_ARG_STRING, &o->key_re, "Regex whose match is a line's session key (default: HDFS block id blk_-?[0-9]+)", "REGEX" },
    { "key-group", 0, 0, G_OPTION_ARG_INT, &o->key_group, "Capture group of the key (default 0: the whole match)", "N" },
    { "train-fraction", 0, 0, G_OPTION_ARG_DOUBLE, &o->train_fraction, "Sessions (by first line) in the training part (default 0.5)", "F" },
    { "calib-fraction", 0, 0, G_OPTION_ARG_DOUBLE, &o->calib_fraction, "Last fraction of the training part's sessions kept to validate and set the thresholds (default 0.2)", "F" },
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &o->model_path, "Score with this model instead of training one (it must have been trained on the training part)", "MODEL" },
    { "score", 0, 0, G_OPTION_ARG_STRING, &o->score, "Session score: mean (default: mean NLL per token), max-line, max-line-sum, max-token", "KIND" },
    { "margin", 0, 0, G_OPTION_ARG_STRING, &o->margin_s, "The threshold is the validation scores' 95th percentile x (1 + M) (default 0.75, chosen on a development split of the HDFS slice: docs/anomaly.md)", "M" },
    { "normal-only", 0, 0, G_OPTION_ARG_NONE, &o->normal_only, "Train and validate on the training part's normal sessions alone (reads its labels; default: on all its sessions, as they come)", NULL },
    { "threshold", 0, 0, G_OPTION_ARG_DOUBLE, &o->rule.fixed, "A fixed threshold instead of calibration", "X" },
    { "end", 0, 0, G_OPTION_ARG_NONE, &o->end, "Also score each session's end (an empty line after its last) and count it in the session score", NULL },
    { "single-stream", 0, 0, G_OPTION_ARG_NONE, &o->single_stream, "One stream over the interleaved lines instead of one per session", NULL },
    { "max-session-mib", 0, 0, G_OPTION_ARG_INT64, &o->max_bytes_mib, "Memory bound on open sessions' state in MiB, 0 = none (default 4096)", "N" },
    { "lines", 0, 0, G_OPTION_ARG_FILENAME, &o->lines_out, "Write every scored line's scores as JSON Lines to FILE", "FILE" },
    { "keep-text", 0, 0, G_OPTION_ARG_NONE, &o->keep_text, "Keep the training text files in DIR", NULL },
    { NULL },
  };
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GOptionContext) ctx = txl_cmd_options("LOG",
    "Train on the sessions of the first part of a log without reading their\n"
    "labels (the most surprising tenth left out), set the thresholds on its\n"
    "last sessions, score the rest one stream per session, and judge them\n"
    "with the labels: precision, recall, F1 and AUROC per session and per\n"
    "line (docs/anomaly.md).",
    entries);
  train_options_add_entries(ctx, &o->train, keep);
  if (!txl_cmd_parse("txl eval", ctx, NULL, &argc, &argv))
    return 2;
  if (argc != 2 || !o->labels_path || !o->out_dir) {
    fprintf(stderr, "txl eval: need one LOG, --labels FILE and -o DIR "
                    "(txl eval --help)\n");
    return 2;
  }
  o->log_path = argv[1];
  return check_opts(o);
}


/* Trains MODEL on the training sessions of one fold (-1: all of them),
 * with the validation sessions' lines as its validation text. */
static gboolean
train_on(const Eval *ev, const Opts *o, int fold, const char *model,
         GError **error)
{
  g_autofree char *train_txt = g_build_filename(o->out_dir, "train.txt", NULL);
  g_autofree char *calib_txt = g_build_filename(o->out_dir, "validation.txt",
                                                NULL);
  gint64 n1, n2;
  if (!eval_write_split_text(ev, SPLIT_TRAIN, fold, o->single_stream,
                             train_txt, &n1, error) ||
      !eval_write_split_text(ev, SPLIT_CALIB, -1, o->single_stream,
                             calib_txt, &n2, error))
    return FALSE;
  if (fold < 0)
    fprintf(stderr, "txl eval: training on %" G_GINT64_FORMAT " lines (%s)\n",
            n1, o->single_stream ? "interleaved" : "grouped by session");
  else
    fprintf(stderr, "txl eval: training fold %d on %" G_GINT64_FORMAT
            " lines\n", fold, n1);
  int trc = run_train(o, model, train_txt, calib_txt);
  if (!o->keep_text || fold >= 0) {
    g_remove(train_txt);
    g_remove(calib_txt);
  }
  if (trc != 0) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "training failed (see above)");
    return FALSE;
  }
  return TRUE;
}

static gboolean score_with(Eval *ev, const Opts *o, const char *model_file,
                           int fold, double *secs, gint64 *n_scored,
                           guint64 *evicted, GError **error);

/* Without labels the training part holds anomalies: two models, each
 * trained on one fold of the training sessions, score the other fold, and
 * the sessions scoring above the held-out scores' 0.9-quantile are left
 * out of the final training (eval/trim.c says why). */
static gboolean
trim_step(Eval *ev, const Opts *o, GError **error)
{
  gboolean ok = TRUE;
  char *fm[2];
  for (int f = 0; f < 2; f++)
    fm[f] = g_strdup_printf("%s/fold%d.gguf", o->out_dir, f);
  for (int f = 0; f < 2 && ok; f++)
    ok = train_on(ev, o, f, fm[f], error);
  for (int f = 0; f < 2 && ok; f++) {
    double secs;
    gint64 n;
    guint64 ev_n;
    ok = score_with(ev, o, fm[f], 1 - f, &secs, &n, &ev_n, error);
  }
  if (ok)
    eval_trim(ev, o->agg, with_end(o), EVAL_TRIM_QUANTILE);
  for (int f = 0; f < 2; f++) {
    g_remove(fm[f]);
    g_autofree char *state = g_strconcat(fm[f], ".train", NULL);
    g_remove(state);
    g_free(fm[f]);
  }
  return ok;
}

/* The model: --model, or one trained on the training sessions' lines (left
 * after trimming, without --normal-only) with the validation sessions'
 * lines as its validation text. */
static gboolean
train_step(Eval *ev, const Opts *o, Result *r, GError **error)
{
  if (o->model_path) {
    r->model_file = g_strdup(o->model_path);
    return TRUE;
  }
  r->model_file = g_build_filename(o->out_dir, "model.gguf", NULL);
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = (o->normal_only || o->single_stream || trim_step(ev, o, error))
                && train_on(ev, o, -1, r->model_file, error);
  r->train_s = (g_get_monotonic_time() - t0) / 1e6;
  return ok;
}

/* Every score kind, with and without the end marker where it was scored:
 * the threshold from the validation sessions, metrics on the test ones;
 * the chosen kind's go to r. */
static void
session_step(const Eval *ev, const Opts *o, Result *r)
{
  gsize n_cal = ev->counts[SPLIT_CALIB], n_test = ev->counts[SPLIT_TEST];
  g_autofree double *cal = g_new(double, MAX(n_cal, 1));
  r->sc = g_new(double, n_test);
  r->lab = g_new(int, n_test);
  r->all_scores = g_string_new(NULL);
  GString *abl = r->all_scores;
  for (int a = 0; a < EVAL_N_AGG; a++)
    for (int we = 1; we >= 0; we--) {
      if (we && !with_end(o))
        continue;
      gsize nc = 0, nt = 0;
      for (guint k = 0; k < ev->sess->len; k++) {
        EvalSession *s = ev->sess->pdata[k];
        if (s->split == SPLIT_CALIB)
          cal[nc++] = eval_session_score(s, a, we);
        else if (s->split == SPLIT_TEST) {
          r->sc[nt] = eval_session_score(s, a, we);
          r->lab[nt++] = s->label;
        }
      }
      double t = eval_threshold(&o->rule, cal, nc);
      EvalMetrics m;
      eval_metrics(r->sc, r->lab, nt, t, &m);
      gboolean chosen = a == o->agg && we == with_end(o);
      if (chosen) {
        r->sess_m = m;
        r->thr = t;
        r->n_cal_used = nc;
      }
      g_string_append_printf(abl, "%s{\"score\": \"%s\", \"rule\": "
                             "\"whole\", \"end\": %s, ", abl->len ? ", " : "",
                             eval_agg_names[a], we ? "true" : "false");
      eval_metrics_json(abl, "session", &m);
      g_string_append(abl, "}");
      char ab[16];
      fprintf(stderr, "txl eval:   %-13s %-8s end %-3s threshold %8.4f  P %.3f  "
              "R %.3f  F1 %.3f  AUROC %s%s\n", eval_agg_names[a], "whole",
              we ? "yes" : "no", t, m.precision, m.recall, m.f1,
              auroc_text(ab, m.auroc), chosen ? "  <- chosen" : "");
    }
  /* the chosen kind again, so that sc/lab hold it for the outputs */
  gsize nt = 0;
  for (guint k = 0; k < ev->sess->len; k++) {
    EvalSession *s = ev->sess->pdata[k];
    if (s->split == SPLIT_TEST) {
      r->sc[nt] = eval_session_score(s, o->agg, with_end(o));
      r->lab[nt++] = s->label;
    }
  }
}

/* Lines take their session's label.  Without labels (the default) lines
 * are judged as txl score and txlsink judge them: the line's worst part in
 * bits per byte against the label-free stream rule (lib/anomaly/baseline.h)
 * over the validation lines.  With --normal-only, two thresholds by the
 * session rule: in the chosen score's unit for the metrics, and in bits
 * per byte for the model file. */
static gboolean
line_stream_rule(const Opts *o)
{
  return !o->normal_only && o->rule.fixed <= 0;
}

/* A line's score in the unit its threshold is in. */
static double
line_value(const Eval *ev, const Opts *o, gint64 i)
{
  return line_stream_rule(o) ? ev->l_worst[i] : eval_line_score(ev, i, o->agg);
}

static void
line_step(const Eval *ev, const Opts *o, Result *r)
{
  gsize nt = 0;
  gboolean stream_rule = line_stream_rule(o);
  GArray *lc = g_array_new(FALSE, FALSE, sizeof(double));
  GArray *lb = g_array_new(FALSE, FALSE, sizeof(double));
  g_autofree double *lsc = g_new(double, ev->n_lines);
  g_autofree int *llab = g_new(int, ev->n_lines);
  for (gint64 i = 0; i < ev->n_lines; i++) {
    gint64 si = ev->line_sess[i];
    if (si < 0 || isnan(ev->l_sum[i]))
      continue;
    EvalSession *s = ev->sess->pdata[si];
    double v = line_value(ev, o, i);
    if (s->split == SPLIT_CALIB) {
      g_array_append_val(lc, v);
      g_array_append_val(lb, ev->l_worst[i]);
    } else if (s->split == SPLIT_TEST) {
      lsc[nt] = v;
      llab[nt++] = s->label;
    }
  }
  double lt = stream_rule
    ? txl_stream_rule_threshold((double *)lc->data, lc->len)
    : eval_threshold(&o->rule, (double *)lc->data, lc->len);
  eval_metrics(lsc, llab, nt, lt, &r->line_m);
  r->line_bpb_thr = o->rule.fixed > 0 ? 0.0 : stream_rule ? lt
    : eval_threshold(&o->rule, (double *)lb->data, lb->len);
  if (!isfinite(r->line_bpb_thr))
    r->line_bpb_thr = 0.0;
  g_array_free(lc, TRUE);
  g_array_free(lb, TRUE);
}

/* The validation scores' highest and median, for summary.json: where the
 * threshold stands among them. */
static void
validation_step(const Eval *ev, const Opts *o, Result *r)
{
  r->val_max = r->val_med = NAN;
  GArray *vv = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint k = 0; k < ev->sess->len; k++) {
    EvalSession *s = ev->sess->pdata[k];
    if (s->split != SPLIT_CALIB)
      continue;
    double v = eval_session_score(s, o->agg, with_end(o));
    g_array_append_val(vv, v);
    if (!(v <= r->val_max)) {
      r->val_max = v;
      r->val_max_key = s->key;
    }
  }
  r->val_med = eval_median((double *)vv->data, vv->len);
  g_array_free(vv, TRUE);
}

static void
print_table(const Opts *o, const Result *r)
{
  char margin_txt[64] = "";
  if (o->rule.margin > 0)
    g_snprintf(margin_txt, sizeof margin_txt, " (margin %g)", o->rule.margin);
  printf("txl eval: %s, %" G_GINT64_FORMAT " test sessions (%" G_GINT64_FORMAT
         " anomalous), score %s%s, threshold %s%s%s\n", o->log_path,
         r->sess_m.n, r->sess_m.n_anom, o->score,
         with_end(o) ? " with the end marker" : "",
         o->rule.fixed > 0 ? "fixed" : "quantile",
         o->rule.fixed > 0 ? "" : margin_txt,
         o->single_stream ? ", single stream" : "");
  printf("  %-8s %10s %10s %9s %9s %9s %9s %8s\n", "level", "threshold",
         "flagged", "precision", "recall", "F1", "AUROC", "n");
  const EvalMetrics *ms[2] = { &r->sess_m, &r->line_m };
  const char *lv[2] = { "session", "line" };
  for (int k = 0; k < 2; k++) {
    char ab[16];
    printf("  %-8s %10.4f %10" G_GINT64_FORMAT " %9.4f %9.4f %9.4f %9s %8"
           G_GINT64_FORMAT "\n", lv[k], ms[k]->threshold,
           ms[k]->tp + ms[k]->fp, ms[k]->precision, ms[k]->recall, ms[k]->f1,
           auroc_text(ab, ms[k]->auroc), ms[k]->n);
  }
  printf("  scoring: %" G_GINT64_FORMAT " lines in %.1f s, %.0f lines/s\n",
         r->n_scored, r->score_s, r->n_scored / MAX(r->score_s, 1e-9));
}

static gboolean
write_sessions_csv(const Eval *ev, const Opts *o, const Result *r,
                   GError **error)
{
  g_autofree char *csv = g_build_filename(o->out_dir, "sessions.csv", NULL);
  GString *c = g_string_new("key,label,split,lines,score,flagged,"
                            "max_line,max_line_sum,max_token,mean,end_nll\n");
  for (guint k = 0; k < ev->sess->len; k++) {
    EvalSession *s = ev->sess->pdata[k];
    gboolean scored = s->parts > 0; /* training ones: held-out (trim.c) */
    double v = eval_session_score(s, o->agg, with_end(o));
    g_string_append_printf(c, "%s,%d,%s,%" G_GINT64_FORMAT ",", s->key,
                           s->label, eval_split_names[s->split], s->n_lines);
    if (scored)
      g_string_append_printf(c, "%.6f,%d,%.6f,%.6f,%.6f,%.6f,%.6f", v,
                             v > r->thr, s->max_line_mean, s->max_line_sum,
                             s->max_token, eval_session_score(s, 3, FALSE),
                             isfinite(s->end_nll) ? s->end_nll : -1.0);
    else
      g_string_append(c, ",,,,,,");
    g_string_append(c, "\n");
  }
  gboolean ok = g_file_set_contents(csv, c->str, c->len, error);
  g_string_free(c, TRUE);
  return ok;
}

static gboolean
write_summary(const Eval *ev, const Opts *o, const Result *r, GError **error)
{
  const gint64 *n = ev->counts;
  GString *j = g_string_new("{");
  g_string_append(j, "\"log\": ");
  txl_json_append_string(j, o->log_path, strlen(o->log_path));
  g_string_append(j, ", \"labels\": ");
  txl_json_append_string(j, o->labels_path, strlen(o->labels_path));
  g_string_append(j, ", \"key\": ");
  txl_json_append_string(j, o->key_re, strlen(o->key_re));
  g_string_append(j, ", \"model\": ");
  txl_json_append_string(j, r->model_file, strlen(r->model_file));
  g_string_append_printf(j,
    ", \"lines\": %" G_GINT64_FORMAT ", \"sessions\": {\"train\": %"
    G_GINT64_FORMAT ", \"validation\": %" G_GINT64_FORMAT ", \"test\": %"
    G_GINT64_FORMAT ", \"dropped_anomalous\": %" G_GINT64_FORMAT
    ", \"unlabelled\": %" G_GINT64_FORMAT ", \"trimmed\": %" G_GINT64_FORMAT
    "}, \"train_fraction\": %g"
    ", \"calib_fraction\": %g, \"score\": \"%s\", \"end_marker\": %s"
    ", \"single_stream\": %s, \"threshold_rule\": \"%s\", \"margin\": %g, ",
    ev->n_lines, n[SPLIT_TRAIN], n[SPLIT_CALIB], n[SPLIT_TEST],
    n[SPLIT_DROPPED], n[SPLIT_UNLABELLED], n[SPLIT_TRIMMED], o->train_fraction,
    o->calib_fraction, o->score, with_end(o) ? "true" : "false",
    o->single_stream ? "true" : "false",
    o->rule.fixed > 0 ? "fixed" : "quantile", o->rule.margin);
  g_string_append(j, "\"session_rule\": \"whole\", ");
  if (isfinite(r->val_max) && isfinite(r->val_med)) {
    g_string_append_printf(j, "\"validation_scores\": {\"max\": %.9g, "
                           "\"median\": %.9g, \"max_session\": ", r->val_max,
                           r->val_med);
    txl_json_append_string(j, r->val_max_key, strlen(r->val_max_key));
    g_string_append(j, "}, ");
  }
  eval_metrics_json(j, "session", &r->sess_m);
  g_string_append(j, ", ");
  eval_metrics_json(j, "line", &r->line_m);
  g_string_append_printf(j,
    ", \"scoring\": {\"lines\": %" G_GINT64_FORMAT ", \"seconds\": %.3f"
    ", \"lines_per_s\": %.1f, \"evicted_sessions\": %" G_GUINT64_FORMAT
    ", \"threads\": %d}, \"training_seconds\": %.1f, \"all_scores\": [%s]}\n",
    r->n_scored, r->score_s, r->n_scored / MAX(r->score_s, 1e-9), r->evicted,
    txl_num_threads(), r->train_s, r->all_scores->str);
  g_autofree char *jp = g_build_filename(o->out_dir, "summary.json", NULL);
  gboolean ok = g_file_set_contents(jp, j->str, j->len, error);
  g_string_free(j, TRUE);
  return ok;
}

/* --lines: every scored line's scores as JSON Lines */
static gboolean
write_lines(const Eval *ev, const Opts *o, const Result *r, GError **error)
{
  FILE *f = fopen(o->lines_out, "wb");
  if (!f) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "cannot write %s: %s",
                o->lines_out, g_strerror(errno));
    return FALSE;
  }
  GString *l = g_string_new(NULL);
  for (gint64 i = 0; i < ev->n_lines; i++) {
    gint64 si = ev->line_sess[i];
    if (si < 0 || isnan(ev->l_sum[i]))
      continue;
    EvalSession *s = ev->sess->pdata[si];
    if (s->split != SPLIT_CALIB && s->split != SPLIT_TEST)
      continue; /* a training line's held-out score (trim.c) */
    g_string_printf(l, "{\"line\": %" G_GINT64_FORMAT ", \"key\": ", i + 1);
    txl_json_append_string(l, s->key, strlen(s->key));
    g_string_append_printf(l, ", \"split\": \"%s\", \"label\": %d, "
                           "\"nll\": ", eval_split_names[s->split], s->label);
    txl_json_append_double(l, "%.6f", ev->l_sum[i]);
    g_string_append(l, ", \"mean\": ");
    txl_json_append_double(l, "%.6f", ev->l_mean[i]);
    g_string_append(l, ", \"max_token\": ");
    txl_json_append_double(l, "%.6f", ev->l_max[i]);
    g_string_append(l, ", \"worst\": ");
    txl_json_append_double(l, "%.6f", ev->l_worst[i]);
    double v = line_value(ev, o, i);
    g_string_append_printf(l, ", \"flag\": %s}\n",
                           !isfinite(v) || v > r->line_m.threshold
                             ? "true" : "false");
    fputs(l->str, f);
  }
  g_string_free(l, TRUE);
  if (fclose(f) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "cannot write %s: %s",
                o->lines_out, g_strerror(errno));
    return FALSE;
  }
  return TRUE;
}

/* The calibration travels with the weights it was measured with:
 * DIR/model.gguf gets the key, score kind and thresholds. */
static gboolean
write_calibration(const Opts *o, const Result *r, GError **error)
{
  g_autofree char *log_base = g_path_get_basename(o->log_path);
  g_autofree char *cal_out = g_build_filename(o->out_dir, "model.gguf", NULL);
  g_autofree char *rule = o->rule.fixed > 0
    ? g_strdup_printf("fixed threshold %g (txl eval --threshold)",
                      o->rule.fixed)
    : g_strdup_printf("txl eval: 95th percentile of the %s scores of %"
                      G_GSIZE_FORMAT " %svalidation sessions of %s, times %g",
                      o->score, r->n_cal_used,
                      o->normal_only ? "normal " : "(labels not read) ",
                      log_base, 1.0 + o->rule.margin);
  TxlCalibration cb = {
    .sessions = !o->single_stream, .session_key = o->key_re,
    .session_key_group = o->key_group, .session_score = o->agg,
    .session_end_marker = with_end(o),
    .session_threshold = isfinite(r->thr) ? r->thr : 0.0,
    .line_threshold_bpb = r->line_bpb_thr, .rule = rule,
  };
  if (!txl_model_file_set_calibration(r->model_file, cal_out, &cb, error))
    return FALSE;
  fprintf(stderr, "txl eval: %s carries the calibration (session "
          "threshold %.6g, line threshold %.6g bits per byte)\n",
          cal_out, cb.session_threshold, cb.line_threshold_bpb);
  return TRUE;
}

static gboolean
write_reports(const Eval *ev, const Opts *o, const Result *r, GError **error)
{
  if (!write_sessions_csv(ev, o, r, error))
    return FALSE;
  g_autofree char *svg = g_build_filename(o->out_dir, "scores.svg", NULL);
  g_autofree char *log_base = g_path_get_basename(o->log_path);
  char ab[16];
  g_autofree char *title = g_strdup_printf(
    "%s: test sessions by %s score (F1 %.3f, AUROC %s)", log_base,
    o->score, r->sess_m.f1, auroc_text(ab, r->sess_m.auroc));
  if (!eval_write_svg(svg, r->sc, r->lab, r->sess_m.n, r->thr, title, error) ||
      !write_summary(ev, o, r, error) ||
      (o->lines_out && !write_lines(ev, o, r, error)) ||
      !write_calibration(o, r, error))
    return FALSE;
  fprintf(stderr, "txl eval: wrote %s/summary.json, sessions.csv, "
          "scores.svg\n", o->out_dir);
  return TRUE;
}

/* The log and its labels, read and split into sessions. */
static gboolean
read_step(Eval *ev, const Opts *o, GRegex *re, char **text, GError **error)
{
  g_autoptr(GHashTable) labels = eval_read_labels(o->labels_path, error);
  if (!labels)
    return FALSE;
  gsize text_len = 0;
  GError *e = NULL;
  if (!g_file_get_contents(o->log_path, text, &text_len, &e)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s", e->message);
    g_error_free(e);
    return FALSE;
  }
  if (text_len == 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID, "%s is empty",
                o->log_path);
    return FALSE;
  }
  if (g_mkdir_with_parents(o->out_dir, 0755) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "cannot create %s: %s",
                o->out_dir, g_strerror(errno));
    return FALSE;
  }
  return eval_read_sessions(ev, *text, text_len, re, o->key_group, labels,
                            o->log_path, error) &&
         eval_assign_split(ev, o->train_fraction, o->calib_fraction,
                           o->normal_only, error);
}

/* Scores the sessions that fold names (EvalScoring.fold) with a model. */
static gboolean
score_with(Eval *ev, const Opts *o, const char *model_file, int fold,
           double *secs, gint64 *n_scored, guint64 *evicted, GError **error)
{
  TxlModel *model = txl_model_load(model_file, error);
  if (!model)
    return FALSE;
  gboolean ok = FALSE;
  if (txl_tokenizer_type(txl_model_tokenizer(model)) == TXL_TOKENIZER_NONE) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED, "%s has no tokenizer",
                model_file);
  } else {
    EvalScoring sc = { o->single_stream ? NULL : o->key_re, o->key_group,
                       o->end, (guint64)o->max_bytes_mib << 20, fold };
    ok = eval_score(ev, model, &sc, secs, n_scored, evicted, error);
  }
  txl_model_unref(model);
  return ok;
}

/* Scoring the validation and test sessions with the model of train_step. */
static gboolean
score_step(Eval *ev, const Opts *o, Result *r, GError **error)
{
  gboolean ok = score_with(ev, o, r->model_file, -1, &r->score_s,
                           &r->n_scored, &r->evicted, error);
  if (ok)
    fprintf(stderr, "txl eval: scored %" G_GINT64_FORMAT " lines in %.1f s "
            "(%.0f lines/s, %" G_GUINT64_FORMAT " sessions evicted)\n",
            r->n_scored, r->score_s, r->n_scored / MAX(r->score_s, 1e-9),
            r->evicted);
  return ok;
}

static GRegex *
key_regex(const Opts *o)
{
  GError *e = NULL;
  GRegex *re = g_regex_new(o->key_re, G_REGEX_OPTIMIZE, 0, &e);
  if (!re) {
    fprintf(stderr, "txl eval: bad --key regex '%s': %s\n", o->key_re,
            e->message);
    g_error_free(e);
    return NULL;
  }
  if (o->key_group < 0 || o->key_group > g_regex_get_capture_count(re)) {
    fprintf(stderr, "txl eval: --key-group %d: the regex has %d capture "
                    "groups\n", o->key_group, g_regex_get_capture_count(re));
    g_regex_unref(re);
    return NULL;
  }
  return re;
}

int
txl_cmd_eval(int argc, char **argv)
{
  Opts o;
  int rc = parse_opts(&o, argc, argv);
  GRegex *re = rc ? NULL : key_regex(&o);
  if (!re)
    return opts_free(&o), 2;
  Eval ev;
  eval_init(&ev);
  Result r = { 0 };
  g_autofree char *text = NULL;
  g_autoptr(GError) err = NULL;
  rc = 1;
  if (read_step(&ev, &o, re, &text, &err) && train_step(&ev, &o, &r, &err) &&
      score_step(&ev, &o, &r, &err)) {
    session_step(&ev, &o, &r);
    line_step(&ev, &o, &r);
    validation_step(&ev, &o, &r);
    print_table(&o, &r);
    if (write_reports(&ev, &o, &r, &err))
      rc = 0;
  }
  if (err)
    fprintf(stderr, "txl eval: %s\n", err->message);
  g_free(r.model_file);
  g_free(r.sc);
  g_free(r.lab);
  if (r.all_scores)
    g_string_free(r.all_scores, TRUE);
  eval_clear(&ev);
  g_regex_unref(re);
  opts_free(&o);
  return rc;
}
