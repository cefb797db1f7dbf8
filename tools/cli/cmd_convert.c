/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl convert --hf DIR -o MODEL: import a Hugging Face checkpoint.
 * Exit status: 0 written, 1 conversion refused or failed, 2 usage. */
#include "cmd.h"
#include "txl_formats.h"
#include "txl_import.h"
#include "txl.h"

#include <stdio.h>

static int
usage_error(GOptionContext *ctx, const char *msg)
{
  fprintf(stderr, "txl convert: %s\n", msg);
  g_autofree char *help = g_option_context_get_help(ctx, TRUE, NULL);
  fputs(help, stderr);
  return 2;
}

int
txl_cmd_convert(int argc, char **argv)
{
  g_autofree char *hf_dir = NULL;
  g_autofree char *out = NULL;
  GOptionEntry entries[] = {
    { "hf", 0, 0, G_OPTION_ARG_FILENAME, &hf_dir,
      "Hugging Face checkpoint directory (config.json, model.safetensors, "
      "optional vocab.txt)", "DIR" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &out,
      "Model file to write (replaced atomically)", "FILE" },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
  };
  g_autoptr(GOptionContext) ctx = txl_cmd_options("- convert a model",
      "Imports a Hugging Face TransfoXLLMHeadModel checkpoint.  Pickle "
      "files (*.bin) are never read; see docs/import-hf.md.", entries);
  if (!txl_cmd_parse("txl convert", ctx, NULL, &argc, &argv))
    return 2;
  if (argc > 1) {
    g_autofree char *msg =
        g_strdup_printf("unexpected argument '%s'", argv[1]);
    return usage_error(ctx, msg);
  }
  if (!hf_dir)
    return usage_error(ctx, "--hf DIR is required");
  if (!out)
    return usage_error(ctx, "-o FILE is required");

  GError *error = NULL;
  if (!txl_convert_hf(hf_dir, out, &error)) {
    fprintf(stderr, "txl convert: %s\n", error->message);
    g_error_free(error);
    return 1;
  }

  /* Read the result back: this proves the file loads and gives the
   * numbers for the summary. */
  GgufFile *f = gguf_open(out, &error);
  TxlConfig cfg;
  if (!f || !txl_config_read_gguf(f, &cfg, &error)) {
    fprintf(stderr, "txl convert: %s was written but does not read back: %s\n",
            out, error->message);
    g_error_free(error);
    if (f)
      gguf_close(f);
    return 1;
  }
  size_t size = 0;
  gguf_buffer(f, &size);
  fprintf(stderr,
          "txl convert: wrote %s: %d layers, d_model %d, vocab %d, "
          "%zu tensors, %zu bytes\n",
          out, cfg.n_layer, cfg.d_model, cfg.n_token, gguf_n_tensors(f),
          size);
  gguf_close(f);
  return 0;
}
