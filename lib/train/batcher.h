/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Training data as B parallel streams, read segment by segment, as the
 * official trainer does: the token array is cut into B contiguous streams
 * of equal length, and step i gives each stream's next T inputs and the
 * T tokens after them as targets.  Each stream continues where its last
 * segment ended, so the model's memory carries across steps. */
#ifndef TXL_BATCHER_H
#define TXL_BATCHER_H

#include "txl.h"

typedef struct _TxlBatcher TxlBatcher;

/* tokens must outlive the batcher.  Fails when there are fewer than
 * B * (T + 1) tokens. */
TxlBatcher *txl_batcher_new(const int32_t *tokens, gsize n, int B, int T,
                            GError **error);
void txl_batcher_free(TxlBatcher *b);
/* learn (n flags, outliving the batcher; NULL: all): a token whose flag
 * is 0 is context only, its target -1 (no loss, train.h). */
void txl_batcher_set_learn(TxlBatcher *b, const guint8 *learn);
/* Fills inputs and targets (B * T each, stream-major).  Returns TRUE when
 * this batch starts a new pass over the data: the caller resets memory. */
gboolean txl_batcher_next(TxlBatcher *b, int32_t *inputs, int32_t *targets);
/* Position, for checkpoints: batches handed out since the start. */
gint64 txl_batcher_position(const TxlBatcher *b);
void txl_batcher_seek(TxlBatcher *b, gint64 position);
gint64 txl_batcher_batches_per_epoch(const TxlBatcher *b);

#endif
