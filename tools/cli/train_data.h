/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Training data for txl train: the input files tokenised once, split into
 * training and validation tokens, with what identifies them for --resume. */
#ifndef TXL_TOOLS_TRAIN_DATA_H
#define TXL_TOOLS_TRAIN_DATA_H

#include "train_core.h"

typedef struct {
  const char *const *files;
  int n_files;
  const char *val_path;   /* or NULL: the last val_fraction of the data */
  double val_fraction;
  const char *tokenizer;  /* "byte" (default) or "bpe" */
  int vocab;              /* bpe vocabulary size */
  gboolean normalize;     /* mask variable log fields */
  int segment;            /* for the "too small" check */
  const char *init;       /* fine-tuning (--init): with bpe, the text is
                           * encoded with this model file's vocabulary, not
                           * a new one (token ids must keep their meaning) */
} TrainDataOptions;

typedef struct {
  int32_t *ids;          /* n_train training tokens, then n_val validation */
  gsize n_train, n_val;
  guint32 *token_bytes;  /* bytes each token stands for; NULL: 1 each */
  int n_token;
  char *data_id;         /* SHA-256 of the inputs and tokenizer settings */
  char *options_id;      /* SHA-256 of the model and training options */
  TxlTokenizer *tokenizer; /* BPE: the learned vocabulary; NULL: bytes */
  TxlModel *tok_owner;   /* set: tokenizer is this (--init) model's */
} TrainData;

TrainData *train_data_load(const TrainDataOptions *o, GError **error);
void train_data_free(TrainData *d);
void train_data_set_options_id(TrainData *d, const char *description);
/* Writes the current weights and the tokenizer as a model file. */
gboolean train_data_save_model(TrainCore *core, const TrainData *d,
                               const char *path, GError **error);

#endif
