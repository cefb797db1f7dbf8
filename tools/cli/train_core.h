/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What `txl train` needs from libtxl's training core, in one place: the
 * command is written against this, and train_core.c maps it onto lib/. */
#ifndef TXL_TOOLS_TRAIN_CORE_H
#define TXL_TOOLS_TRAIN_CORE_H

#include "txl.h"

typedef struct {
  TxlConfig cfg;
  int batch;        /* parallel streams */
  float dropout, dropatt;
  guint64 seed;
} TrainSetup;

typedef struct _TrainCore TrainCore;

/* New weights (seeded init), or the weights of an existing model file. */
TrainCore *train_core_new(const TrainSetup *s, const char *init_model,
                          GError **error);
void train_core_free(TrainCore *c);
const TxlConfig *train_core_config(TrainCore *c);
/* Forward and backward over one batch (batch * tgt_len inputs and targets,
 * stream-major); gradients replace the previous ones.  Returns the mean
 * loss in nats/token. */
double train_core_step(TrainCore *c, const int32_t *inputs,
                       const int32_t *targets);
void train_core_reset_memory(TrainCore *c);
/* The flat parameter and gradient buffers, and which entries take weight
 * decay (matrices yes; biases, norms, r biases no). */
float *train_core_params(TrainCore *c, gsize *n);
float *train_core_grads(TrainCore *c);
const guint8 *train_core_decay_mask(TrainCore *c);
/* Writes the current weights as a model file; add_tokenizer adds the
 * tokenizer.* keys. */
typedef struct _GgufWriter GgufWriter;
gboolean train_core_save(TrainCore *c, const char *path,
                         void (*add_tokenizer)(GgufWriter *w, gpointer data),
                         gpointer data, GError **error);
/* A read-only model over the current weights, for validation (ref'd). */
TxlModel *train_core_model(TrainCore *c, GError **error);
/* The recurrent memory (at most train_core_memory_floats() floats) and the
 * dropout step, for resuming bit for bit. */
gsize train_core_memory_floats(TrainCore *c);
void train_core_state_get(TrainCore *c, float *mem, guint64 *step, int *mlen);
gboolean train_core_state_set(TrainCore *c, const float *mem, guint64 step,
                              int mlen, GError **error);

#endif
