/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `txl calibrate`: shows, sets or removes the anomaly calibration a model
 * file carries (txl eval writes one).  For a threshold chosen by hand on a
 * new log, or a model deployed without one. */
#include "cmd.h"
#include "txl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *kinds[] = { "max-line", "max-line-sum", "max-token",
                               "mean" };

int
txl_cmd_calibrate(int argc, char **argv)
{
  g_autofree char *out = NULL, *key = NULL, *score = NULL, *rule = NULL;
  int group = G_MININT; /* not given */
  g_autofree char *st_s = NULL, *lt_s = NULL;
  double st = NAN, lt = NAN; /* NAN: not given */
  gboolean single = FALSE, end = FALSE, no_end = FALSE, clear = FALSE;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &out, "Write the model with the calibration here (may be MODEL itself) (required)", "FILE" },
    { "clear", 0, 0, G_OPTION_ARG_NONE, &clear, "Remove the calibration", NULL },
    { "session-key", 0, 0, G_OPTION_ARG_STRING, &key, "Per-session calibration with this key regex (txlsessions)", "REGEX" },
    { "key-group", 0, 0, G_OPTION_ARG_INT, &group, "Capture group of the key (default 0)", "N" },
    { "single-stream", 0, 0, G_OPTION_ARG_NONE, &single, "Calibration for one stream (txlmodel)", NULL },
    { "score", 0, 0, G_OPTION_ARG_STRING, &score, "Session score: mean, max-line, max-line-sum, max-token", "KIND" },
    { "end-marker", 0, 0, G_OPTION_ARG_NONE, &end, "The end marker is scored", NULL },
    { "no-end-marker", 0, 0, G_OPTION_ARG_NONE, &no_end, "The end marker is not scored", NULL },
    { "session-threshold", 0, 0, G_OPTION_ARG_STRING, &st_s, "Session threshold (0: none)", "X" },
    { "line-threshold", 0, 0, G_OPTION_ARG_STRING, &lt_s, "Line threshold, bits per byte (0: none)", "X" },
    { "rule", 0, 0, G_OPTION_ARG_STRING, &rule, "How the thresholds were chosen (free text)", "TEXT" },
    { NULL },
  };
  g_autoptr(GOptionContext) ctx = txl_cmd_options("MODEL",
    "Set or remove the anomaly calibration a model file carries (the\n"
    "defaults of txlsessions and txlsink; docs/model-format.md).  What is\n"
    "not given is kept from MODEL's calibration.  `txl info` shows it.",
    entries);
  if (!txl_cmd_parse("txl calibrate", ctx, NULL, &argc, &argv))
    return 2;
  if (argc != 2 || !out) {
    fprintf(stderr, "txl calibrate: need one MODEL and -o FILE "
                    "(txl calibrate --help)\n");
    return 2;
  }
  g_autoptr(GError) err = NULL;
  /* a threshold given must be a finite number >= 0 (nan is not "unset") */
  const char *given[] = { st_s, lt_s };
  double *to[] = { &st, &lt };
  for (int i = 0; i < 2; i++)
    if (given[i] && !txl_cmd_number(given[i], to[i])) {
      fprintf(stderr, "txl calibrate: thresholds take numbers >= 0, not "
                      "'%s'\n", given[i]);
      return 2;
    }
  if ((key && single) || (end && no_end) ||
      (clear && (key || single || score || end || no_end || !isnan(st) ||
                 !isnan(lt) || rule || group != G_MININT))) {
    fprintf(stderr, "txl calibrate: contradictory options\n");
    return 2;
  }
  if (group != G_MININT && (group < 0 || group > 99)) {
    fprintf(stderr, "txl calibrate: --key-group takes 0..99\n");
    return 2;
  }
  TxlModel *m = txl_cmd_load_model("txl calibrate", argv[1]);
  if (!m)
    return 1;
  const TxlCalibration *old = txl_model_calibration(m);
  TxlCalibration c = { .sessions = TRUE, .session_key = "blk_-?[0-9]+",
                       .session_score = 3 };
  if (old)
    c = *old;
  if (key) {
    c.sessions = TRUE;
    c.session_key = key;
    c.session_key_group = group != G_MININT ? group : 0;
  } else if (single) {
    c.sessions = FALSE;
    c.session_key = NULL;
  }
  if (group != G_MININT)
    c.session_key_group = group;
  if (score) {
    c.session_score = -1;
    for (int i = 0; i < (int)G_N_ELEMENTS(kinds); i++)
      if (!strcmp(score, kinds[i]))
        c.session_score = i;
    if (c.session_score < 0) {
      fprintf(stderr, "txl calibrate: --score takes mean, max-line, "
                      "max-line-sum or max-token, not '%s'\n", score);
      txl_model_unref(m);
      return 2;
    }
  }
  if (end || no_end)
    c.session_end_marker = end;
  if (!isnan(st))
    c.session_threshold = st;
  if (!isnan(lt))
    c.line_threshold_bpb = lt;
  if (rule)
    c.rule = rule;
  else if (!old || !isnan(st) || !isnan(lt))
    c.rule = "set by txl calibrate";
  /* the key must work where it will be used */
  if (c.sessions) {
    GError *e = NULL;
    GRegex *re = g_regex_new(c.session_key, 0, 0, &e);
    if (!re || c.session_key_group > g_regex_get_capture_count(re)) {
      fprintf(stderr, "txl calibrate: bad --session-key '%s': %s\n",
              c.session_key, e ? e->message : "no such capture group");
      g_clear_error(&e);
      if (re)
        g_regex_unref(re);
      txl_model_unref(m);
      return 2;
    }
    g_regex_unref(re);
  }
  gboolean ok = txl_model_file_set_calibration(argv[1], out,
                                               clear ? NULL : &c, &err);
  txl_model_unref(m);
  if (!ok) {
    fprintf(stderr, "txl calibrate: %s\n", err->message);
    return 1;
  }
  return 0;
}
