/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl generate: continue a prompt with the model, one sampled token at a
 * time; every sampled token is fed back into the stream's memory, so the
 * text continues coherently from everything before it. */
#include "cmd.h"
#include "txl_engine.h"
#include "txl_formats.h"
#include "txl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  GArray *ids;
} Prompt;

static void
on_token(int32_t id, gint64 line, gsize start, gsize end, gpointer p)
{
  g_array_append_val(((Prompt *)p)->ids, id);
}

static void
write_text(const guint8 *text, gsize len, gpointer data)
{
  fwrite(text, 1, len, stdout);
  fflush(stdout);
}

int
txl_cmd_generate(int argc, char **argv)
{
  g_autofree char *model_path = NULL, *prompt = NULL, *prompt_file = NULL,
                  *stop = NULL;
  int tokens = 200, top_k = 0, mem_len = -1;
  double temperature = 1.0, top_p = 1.0;
  gint64 seed = 1;
  int stop_at_eos = 1;
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model_path, "Model file (default: the bundled model, or TXL_MODEL)", "MODEL" },
    { "prompt", 'p', 0, G_OPTION_ARG_STRING, &prompt, "Text to continue (default: a line end)", "TEXT" },
    { "prompt-file", 0, 0, G_OPTION_ARG_FILENAME, &prompt_file, "Read the prompt from a file", "FILE" },
    { "tokens", 'n', 0, G_OPTION_ARG_INT, &tokens, "Tokens to generate at most (default 200)", "N" },
    { "temperature", 't', 0, G_OPTION_ARG_DOUBLE, &temperature, "Sampling temperature, 0 = greedy (default 1)", "T" },
    { "top-k", 0, 0, G_OPTION_ARG_INT, &top_k, "Sample among the K most likely tokens, 0 = all (default 0)", "K" },
    { "top-p", 0, 0, G_OPTION_ARG_DOUBLE, &top_p, "Sample within the smallest set of probability P (default 1)", "P" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Random seed: the same seed gives the same text (default 1)", "N" },
    { "stop", 0, 0, G_OPTION_ARG_STRING, &stop, "Stop once the generated text ends with this string", "TEXT" },
    { "stop-at-eos", 0, 0, G_OPTION_ARG_INT, &stop_at_eos,
      "1: stop at the vocabulary's end-of-sequence token (a word vocabulary's <eos>), 0: go on (default 1)", "0|1" },
    { "mem-len", 0, 0, G_OPTION_ARG_INT, &mem_len, "Memory length (default: the model's)", "N" },
    { NULL },
  };
  g_autoptr(GOptionContext) ctx = txl_cmd_options("",
    "Continue a prompt with the model.  Each sampled token joins the\n"
    "recurrent memory; generation stops after --tokens tokens, once the\n"
    "text ends with --stop, or at the vocabulary's end-of-sequence token\n"
    "(--stop-at-eos).  The text goes to standard output.",
    entries);
  if (!txl_cmd_parse("txl generate", ctx, &model_path, &argc, &argv))
    return 2;
  if (argc > 1) {
    fprintf(stderr, "txl generate: unexpected argument %s (the prompt goes "
                    "in --prompt or --prompt-file)\n", argv[1]);
    return 2;
  }
  g_autoptr(GError) err = NULL;
  if (tokens < 0 || top_k < 0 || (stop_at_eos != 0 && stop_at_eos != 1) ||
      mem_len < -1 || (prompt && prompt_file)) {
    fprintf(stderr, "txl generate: --tokens, --top-k and --mem-len take "
                    "counts >= 0, --stop-at-eos 0 or 1, and the prompt comes "
                    "from --prompt or --prompt-file, not both\n");
    return 2;
  }
  g_autofree char *text = NULL;
  gsize text_len = 0;
  if (prompt_file) {
    /* a regular file within a budget: a prompt, not a corpus */
    text = txl_read_small_file(prompt_file, "a prompt file", 16 << 20,
                               &text_len, &err);
    if (!text) {
      fprintf(stderr, "txl generate: %s\n", err->message);
      return 1;
    }
  } else {
    text = g_strdup(prompt && *prompt ? prompt : "\n");
    text_len = strlen(text);
  }
  TxlModel *m = txl_cmd_load_model("txl generate", model_path);
  if (!m)
    return 1;
  int rc = 1;
  const TxlTokenizer *tok = txl_model_tokenizer(m);
  TxlGenerator *gen = NULL;
  Prompt pr = { g_array_new(FALSE, FALSE, sizeof(int32_t)) };
  GByteArray *out = g_byte_array_new();
  if (txl_tokenizer_type(tok) == TXL_TOKENIZER_NONE) {
    g_set_error(&err, TXL_ERROR, TXL_ERROR_INVALID,
                "%s has no tokenizer: it cannot read a prompt or write text",
                model_path);
    goto out;
  }
  txl_cmd_encode(tok, text, text_len, on_token, &pr);
  if (pr.ids->len == 0) {
    g_set_error_literal(&err, TXL_ERROR, TXL_ERROR_INVALID,
                        "the prompt has no token in this model's vocabulary");
    goto out;
  }
  TxlStreamOptions so = TXL_STREAM_OPTIONS_DEFAULT;
  so.mem_len = mem_len;
  TxlSamplerOptions sopt = { (float)temperature, top_k, (float)top_p,
                             (guint64)seed };
  if (!(gen = txl_generator_new(m, &so, &sopt, &err)) ||
      !txl_generator_feed(gen, (const int32_t *)pr.ids->data, pr.ids->len,
                          &err))
    goto out;
  TxlGenerateLimits lim = { tokens, stop, stop_at_eos != 0 };
  if (!txl_generator_continue(gen, tok, &lim, out, write_text, NULL, &err))
    goto out;
  if (out->len == 0 || out->data[out->len - 1] != '\n')
    fputc('\n', stdout);
  rc = 0;
out:
  if (err)
    fprintf(stderr, "txl generate: %s\n", err->message);
  g_byte_array_unref(out);
  g_array_free(pr.ids, TRUE);
  txl_generator_free(gen);
  txl_model_unref(m);
  return rc;
}
