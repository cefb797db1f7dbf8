/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small configurations, learning options and trained tokenizers for the
 * tests and the fuzz harnesses.  Only library headers (config.h, learner.h,
 * bpe.h), so that a harness that compiles the library sources it needs can
 * include it too. */
#ifndef TXL_TU_CONFIG_H
#define TXL_TU_CONFIG_H

#include "bpe.h"
#include "config.h"
#include "learner.h"

/* The sizes of a model with a plain softmax; d_embed is d_model. */
typedef struct {
  int n_token, d_model, n_head, d_head, d_inner, n_layer, mem_len, tgt_len;
} TuDims;

/* A configuration of the sizes in d without the adaptive softmax, which
 * training does not support: a model the trainer and the learner take.
 * No clamp and no same-length masking, as in every test model. */
G_GNUC_UNUSED static TxlConfig
tu_plain_config(TuDims d)
{
  TxlConfig c;
  txl_config_init_default(&c);
  c.n_token = d.n_token;
  c.d_model = c.d_embed = d.d_model;
  c.n_head = d.n_head;
  c.d_head = d.d_head;
  c.d_inner = d.d_inner;
  c.n_layer = d.n_layer;
  c.mem_len = d.mem_len;
  c.tgt_len = d.tgt_len;
  c.clamp_len = 0;
  c.same_length = FALSE;
  c.div_val = 1;
  c.n_cutoffs = 0;
  return c;
}

/* Learning options with a schedule of the given lines (warm-up, a round
 * started every `every`, a window of `window`, landing `lag` later) and
 * rounds of max_steps steps of batch segments of `segment` tokens; the
 * rest as txl_learn_options_default. */
G_GNUC_UNUSED static TxlLearnOptions
tu_learn_options(int warmup, int every, int window, int lag, int max_steps,
                 int batch, int segment)
{
  TxlLearnOptions o = txl_learn_options_default();
  o.warmup_lines = warmup;
  o.every_lines = every;
  o.window_lines = window;
  o.lag_lines = lag;
  o.max_steps = max_steps;
  o.batch = batch;
  o.segment = segment;
  return o;
}

/* A BPE tokenizer of 300 tokens trained on text[0..len), with every
 * normalization rule or none; NULL and *error when training fails. */
G_GNUC_UNUSED static TxlTokenizer *
tu_bpe_tokenizer(const char *text, gsize len, gboolean normalize,
                 GError **error)
{
  TxlBpeTrainOptions o = TXL_BPE_TRAIN_OPTIONS_DEFAULT;
  o.vocab_size = 300;
  o.normalize = normalize ? TXL_NORM_ALL : 0;
  TxlBpe *b = txl_bpe_train(&text, &len, 1, &o, error);
  return b ? txl_tokenizer_new_bpe(b) : NULL;
}

#endif
