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
    { "vocab", 0, 0, G_OPTION_ARG_INT, &o->vocab, "BPE vocabulary size (default 1024)", "N" },
    { "normalize", 0, 0, G_OPTION_ARG_NONE, &o->normalize, "Mask variable log fields (numbers, ids, addresses, times)", NULL },
    { "layers", 0, 0, G_OPTION_ARG_INT, &o->layers, "Layers (default 4)", "N" },
    { "d-model", 0, 0, G_OPTION_ARG_INT, &o->d_model, "Hidden size (default 256)", "N" },
    { "heads", 0, 0, G_OPTION_ARG_INT, &o->heads, "Attention heads (default 8)", "N" },
    { "d-head", 0, 0, G_OPTION_ARG_INT, &o->d_head, "Size of each head (default 32)", "N" },
    { "d-inner", 0, 0, G_OPTION_ARG_INT, &o->d_inner, "Feed-forward size (default 1024)", "N" },
    { "mem-len", 0, 0, G_OPTION_ARG_INT, &o->mem_len, "Memory length in positions (default 128)", "N" },
    { "segment", 0, 0, G_OPTION_ARG_INT, &o->segment, "Segment length in tokens (default 64)", "N" },
    { "post-ln", 0, 0, G_OPTION_ARG_NONE, &o->post_ln, "Layer norm after each sub-layer (default: before)", NULL },
    { "dropout", 0, 0, G_OPTION_ARG_DOUBLE, &o->dropout, "Dropout rate (default 0.1)", "P" },
    { "dropatt", 0, 0, G_OPTION_ARG_DOUBLE, &o->dropatt, "Attention dropout rate (default 0)", "P" },
    { "batch", 0, 0, G_OPTION_ARG_INT, &o->batch, "Parallel streams (default 16)", "N" },
    { "steps", 0, 0, G_OPTION_ARG_INT64, &o->steps, "Optimiser steps (default 2000)", "N" },
    { "warmup", 0, 0, G_OPTION_ARG_INT, &o->warmup, "Warm-up steps (default 100)", "N" },
    { "lr", 0, 0, G_OPTION_ARG_DOUBLE, &o->lr, "Peak learning rate (default 1e-3)", "LR" },
    { "min-lr", 0, 0, G_OPTION_ARG_DOUBLE, &o->min_lr, "Final learning rate of the cosine (default 1e-4)", "LR" },
    { "weight-decay", 0, 0, G_OPTION_ARG_DOUBLE, &o->weight_decay, "AdamW weight decay (default 0.01)", "W" },
    { "clip", 0, 0, G_OPTION_ARG_DOUBLE, &o->clip, "Gradient norm clip, 0 = none (default 0.25)", "C" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &o->seed, "Random seed (default 1)", "N" },
    { "eval-every", 0, 0, G_OPTION_ARG_INT, &o->eval_every, "Validate every N steps, 0 = only at the end (default 250)", "N" },
    { "eval-tokens", 0, 0, G_OPTION_ARG_INT, &o->eval_tokens, "Validation tokens per evaluation (default 65536)", "N" },
    { "checkpoint-every", 0, 0, G_OPTION_ARG_INT, &o->checkpoint_every, "Checkpoint every N steps, 0 = only at the end (default 500)", "N" },
    { "log-every", 0, 0, G_OPTION_ARG_INT, &o->log_every, "Progress line every N steps when not on a terminal (default 50)", "N" },
    { "time-limit", 0, 0, G_OPTION_ARG_DOUBLE, &o->time_limit_min, "Stop (with a checkpoint) after this many minutes", "MIN" },
    { "stop-after", 0, 0, G_OPTION_ARG_INT64, &o->stop_after, "Stop (with a checkpoint) after step N, as Ctrl-C would", "N" },
    { "resume", 0, 0, G_OPTION_ARG_NONE, &o->resume, "Continue the run saved in MODEL and MODEL.train", NULL },
    { "init", 0, 0, G_OPTION_ARG_FILENAME, &o->init, "Start from this model's weights (fine-tuning)", "MODEL" },
    { NULL },
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("FILE...");
  g_option_context_set_summary(ctx,
    "Train a Transformer-XL language model on text or log files.\n"
    "The output is a model file that txl score and the elements use.");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) err = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
    fprintf(stderr, "txl train: %s\n", err->message);
    return 2;
  }
  if (!o->output || argc < 2) {
    fprintf(stderr, "txl train: need -o MODEL and at least one input FILE\n");
    return 2;
  }
  if (o->val_fraction < 0)
    o->val_fraction = o->val_path ? 0.0 : 0.1;
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
