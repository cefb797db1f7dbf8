/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What loading a model checks beyond the shapes of its tensors: that every
 * weight is finite, and that the memory its declared lengths imply stays
 * within a budget before anything of that size is allocated.
 *
 * The budget (docs/model-format.md, "Memory budget") is the memory one
 * stream may need, counting its recurrent memory, its scratch, the
 * position tables and the packed layer weights.  TXL_MEMORY_LIMIT sets it
 * (bytes, or with a K, M, G or T suffix); by default it is 256 MiB plus
 * twice the bytes of the model's weights, so that what a file may ask for
 * grows with what it carries. */
#ifndef TXL_MODEL_CHECK_H
#define TXL_MODEL_CHECK_H

#include "finite.h"
#include "model_internal.h"

#define TXL_MEMORY_BASE ((guint64)256 << 20)

/* The value of TXL_MEMORY_LIMIT in bytes, 0 when it is not set; FALSE
 * with an error naming the variable when it is malformed. */
gboolean txl_memory_limit_get(guint64 *limit, GError **error);

/* Bytes one stream needs, by part. */
typedef struct {
  guint64 memory;    /* keys and values (or hidden states) of every layer */
  guint64 scratch;   /* one segment's activations and attention scores */
  guint64 positions; /* projected position tables, and their build */
  guint64 packed;    /* the layer weights in the gemm layout */
} TxlStreamCost;

/* Floats of the stream's scratch block (lib/engine/stream.c lays it out). */
guint64 txl_stream_scratch_floats(const TxlModel *m, int seg, guint64 klen,
                                  gboolean hidden, int slots);
void txl_stream_cost(const TxlModel *m, int mem_len, int seg,
                     gboolean hidden, TxlStreamCost *cost);
/* Refuses a cost over the budget; what says whose lengths these are. */
gboolean txl_stream_cost_check(const TxlModel *m, const TxlStreamCost *cost,
                               const char *what, GError **error);

/* Refuses a model whose own mem_len and tgt_len imply more than the
 * budget; call once the weights are in place. */
gboolean txl_model_check_budget(const TxlModel *m, GError **error);

/* Refuses the first inf or NaN among the file's F32 tensors, naming the
 * tensor and the index. */
gboolean txl_model_check_finite(const GgufFile *f, GError **error);

#endif
