/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl train: the command line of the training run in train_run.c. */
#include "cmd.h"
#include "train_run.h"

#include <stdio.h>

int
txl_cmd_train(int argc, char **argv)
{
  TrainOptions opts;
  TrainOptions *const o = &opts;
  train_options_init(o);
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &o->output, "Model file to write (required)", "MODEL" },
    { "val", 0, 0, G_OPTION_ARG_FILENAME, &o->val_path, "Validation text (default: the last --val-fraction of the data)", "FILE" },
    { "val-fraction", 0, 0, G_OPTION_ARG_DOUBLE, &o->val_fraction, "Held-out fraction when there is no --val (default 0.1)", "F" },
    { "tokenizer", 0, 0, G_OPTION_ARG_STRING, &o->tokenizer, "byte or bpe (default: byte)", "KIND" },
    { "normalize", 0, 0, G_OPTION_ARG_NONE, &o->normalize, "Mask variable log fields (numbers, ids, addresses, times)", NULL },
    { "post-ln", 0, 0, G_OPTION_ARG_NONE, &o->post_ln, "Layer norm after each sub-layer (default: before)", NULL },
    { "dropatt", 0, 0, G_OPTION_ARG_DOUBLE, &o->dropatt, "Attention dropout rate (default 0)", "P" },
    { "warmup", 0, 0, G_OPTION_ARG_INT, &o->warmup, "Warm-up steps (default 100)", "N" },
    { "min-lr", 0, 0, G_OPTION_ARG_DOUBLE, &o->min_lr, "Final learning rate of the cosine (default 1e-4)", "LR" },
    { "weight-decay", 0, 0, G_OPTION_ARG_DOUBLE, &o->weight_decay, "AdamW weight decay (default 0.01)", "W" },
    { "clip", 0, 0, G_OPTION_ARG_DOUBLE, &o->clip, "Gradient norm clip, 0 = none (default 0.25)", "C" },
    { "eval-every", 0, 0, G_OPTION_ARG_INT, &o->eval_every, "Validate every N steps, 0 = only at the end (default 250)", "N" },
    { "eval-tokens", 0, 0, G_OPTION_ARG_INT, &o->eval_tokens, "Validation tokens per evaluation (default 65536)", "N" },
    { "checkpoint-every", 0, 0, G_OPTION_ARG_INT, &o->checkpoint_every, "Checkpoint every N steps, 0 = only at the end (default 500)", "N" },
    { "log-every", 0, 0, G_OPTION_ARG_INT, &o->log_every, "Progress line every N steps when not on a terminal (default 50)", "N" },
    { "stop-after", 0, 0, G_OPTION_ARG_INT64, &o->stop_after, "Stop (with a checkpoint) after step N, as Ctrl-C would", "N" },
    { "resume", 0, 0, G_OPTION_ARG_NONE, &o->resume, "Continue the run saved in MODEL and MODEL.train", NULL },
    { "init", 0, 0, G_OPTION_ARG_FILENAME, &o->init, "Start from this model's weights (fine-tuning)", "MODEL" },
    { NULL },
  };
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GOptionContext) ctx = txl_cmd_options("FILE...",
    "Train a Transformer-XL language model on text or log files.\n"
    "The output is a model file that txl score and the elements use.",
    entries);
  train_options_add_entries(ctx, o, keep);
  if (!txl_cmd_parse("txl train", ctx, NULL, &argc, &argv))
    return 2;
  if (!o->output || argc < 2) {
    fprintf(stderr, "txl train: need -o MODEL and at least one input FILE\n");
    return 2;
  }
  if (o->val_fraction == -1) /* not given */
    o->val_fraction = o->val_path ? 0.0 : 0.1;
  g_autoptr(GError) err = NULL;
  if (!train_options_check(o, &err)) {
    fprintf(stderr, "txl train: %s\n", err->message);
    return 2;
  }
  o->inputs = argv + 1;
  o->n_inputs = argc - 1;
  int rc = train_run(o);
  g_free(o->val_path);
  g_free(o->tokenizer);
  g_free(o->output);
  g_free(o->init);
  return rc;
}
