/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Drawing the next token from a log-distribution: temperature, top-k and
 * top-p (nucleus) truncation, with a seeded generator of our own so that a
 * seed gives the same tokens on every machine and run. */
#ifndef TXL_SAMPLER_H
#define TXL_SAMPLER_H

#include "txl.h"

typedef struct {
  float temperature; /* 0: always the most likely token */
  int top_k;         /* <= 0: no limit */
  float top_p;       /* in (0, 1]; 1: no limit */
  guint64 seed;
} TxlSamplerOptions;

#define TXL_SAMPLER_OPTIONS_DEFAULT { 1.0f, 0, 1.0f, 0 }

typedef struct _TxlSampler TxlSampler;

TxlSampler *txl_sampler_new(const TxlSamplerOptions *o, int n_token,
                            GError **error);
void txl_sampler_free(TxlSampler *s);
/* logprobs: n_token natural-log probabilities (as from
 * txl_stream_next_logprobs).  Returns the drawn id. */
int txl_sampler_sample(TxlSampler *s, const float *logprobs);
/* The generator's state, to snapshot and resume a generation. */
guint64 txl_sampler_state(const TxlSampler *s);
void txl_sampler_set_state(TxlSampler *s, guint64 state);
/* The same as bytes (docs/api.md, "State as bytes"): get_data returns the
 * bytes written (0: size too small); set refuses a wrong size and leaves
 * the sampler as it was. */
gsize txl_sampler_state_get_size(const TxlSampler *s);
gsize txl_sampler_state_get_data(const TxlSampler *s, guint8 *dst,
                                 gsize size);
gboolean txl_sampler_state_set_data(TxlSampler *s, const guint8 *src,
                                    gsize size, GError **error);

#endif
