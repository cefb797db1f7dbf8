/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl train as a function: the options of `txl train` as a struct, with
 * their defaults, and the run itself, so that `txl eval` (and any other
 * command) trains by filling the struct rather than by building an argv. */
#ifndef TXL_TOOLS_TRAIN_RUN_H
#define TXL_TOOLS_TRAIN_RUN_H

#include <glib.h>

typedef struct {
  /* data */
  char **inputs;    /* n_inputs files */
  int n_inputs;
  char *val_path;
  double val_fraction;
  char *tokenizer;
  int vocab;
  gboolean normalize;
  /* model */
  int layers, d_model, heads, d_head, d_inner, mem_len, segment;
  gboolean post_ln;
  double dropout, dropatt;
  /* optimisation */
  int batch;
  gint64 steps;
  int warmup;
  double lr, min_lr, weight_decay, clip;
  gint64 seed;
  int eval_every, eval_tokens, checkpoint_every, log_every;
  double time_limit_min;
  gint64 stop_after;
  gboolean resume;
  char *output, *init;
} TrainOptions;

/* The defaults `txl train --help` lists. */
void train_options_init(TrainOptions *o);
/* Adds to ctx the options txl train and txl eval share (the model's shape,
 * --vocab, --batch, --steps, --lr, --dropout, --seed, --time-limit),
 * bound to o's fields; their help shows o's current values as defaults.
 * The help strings go to keep, which must outlive ctx. */
void train_options_add_entries(GOptionContext *ctx, TrainOptions *o,
                               GPtrArray *keep);
/* Range checks of every option; the error names the option. */
gboolean train_options_check(const TrainOptions *o, GError **error);
/* Trains and writes o->output (and o->output.train); messages go to stderr
 * prefixed "txl train:".  Returns 0, 1 on error, 130 when interrupted.
 * The caller owns the strings in o. */
int train_run(const TrainOptions *o);

#endif
