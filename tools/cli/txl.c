/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl: the command line over libtxl. */
#include "cmd.h"
#include "txl.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *help;
} commands[] = {
  { "score", txl_cmd_score, "score token ids or text with a model" },
  { "train", txl_cmd_train, "train a model on text or log files" },
  { "generate", txl_cmd_generate, "continue a prompt with a model" },
  { "convert", txl_cmd_convert, "import a Hugging Face TransfoXL checkpoint" },
  { "bench", txl_cmd_bench, "measure scoring speed against the sgemm peak" },
  { "info", txl_cmd_info, "print a model file's configuration" },
  { "snapshot", txl_cmd_snapshot, "inspect and verify a stream snapshot" },
  { "eval", txl_cmd_eval, "measure log anomaly detection against session labels" },
  { "calibrate", txl_cmd_calibrate, "set or remove a model file's anomaly thresholds" },
};

TxlModel *
txl_cmd_load_model(const char *who, const char *path)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = txl_model_load(path, &err);
  if (!m)
    fprintf(stderr, "%s: %s\n", who, err->message);
  return m;
}

GOptionContext *
txl_cmd_options(const char *params, const char *summary,
                const GOptionEntry *entries)
{
  GOptionContext *ctx = g_option_context_new(params);
  g_option_context_set_summary(ctx, summary);
  if (entries)
    g_option_context_add_main_entries(ctx, entries, NULL);
  return ctx;
}

gboolean
txl_cmd_number(const char *s, double *v)
{
  char *end = NULL;
  *v = s ? g_ascii_strtod(s, &end) : NAN;
  return s && end != s && *end == '\0' && isfinite(*v) && *v >= 0;
}

gboolean
txl_cmd_parse(const char *who, GOptionContext *ctx, char **model,
              int *argc, char ***argv)
{
  g_autoptr(GError) err = NULL;
  if (!g_option_context_parse(ctx, argc, argv, &err)) {
    fprintf(stderr, "%s: %s\n", who, err->message);
    return FALSE;
  }
  /* no -m: the bundled model (txl_default_model_path) */
  if (model && !*model) {
    const char *def = txl_default_model_path();
    if (!def) {
      fprintf(stderr, "%s: no model: give -m MODEL (the bundled model is "
                      "neither installed nor in the source tree, and "
                      "TXL_MODEL is not set)\n", who);
      return FALSE;
    }
    *model = g_strdup(def);
  }
  return TRUE;
}

void
txl_cmd_encode(const TxlTokenizer *tok, const char *text, gsize len,
               TxlTokenFunc func, gpointer data)
{
  TxlEncoder *enc = txl_encoder_new(tok, func, data);
  txl_encoder_push(enc, text, len);
  txl_encoder_finish(enc);
  txl_encoder_free(enc);
}

static void
usage(FILE *out)
{
  fprintf(out, "usage: txl COMMAND [OPTIONS]\n\ncommands:\n");
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].help);
  fprintf(out, "\n'txl COMMAND --help' describes a command's options.\n");
}

int
main(int argc, char **argv)
{
  /* numbers in JSON output must use '.', whatever the user's locale */
  setlocale(LC_ALL, "");
  setlocale(LC_NUMERIC, "C");
  /* standard output is the scores: GLib's debug and info messages
   * (G_MESSAGES_DEBUG) go to standard error with the rest */
  g_log_writer_default_set_use_stderr(TRUE);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
      !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("txl 0.1.0\n");
    return 0;
  }
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    if (!strcmp(argv[1], commands[i].name))
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "txl: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
