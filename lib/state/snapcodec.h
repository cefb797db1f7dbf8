/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* How a snapshot stores its floats: float32 as they are (lossless), or
 * rounded to float16 / bfloat16 for a smaller file, and optionally
 * byte-shuffled (all first bytes, then all second bytes, ...) so that the
 * slowly varying sign/exponent bytes sit together where zstd finds their
 * repetitions. */
#ifndef TXL_SNAPCODEC_H
#define TXL_SNAPCODEC_H

#include "txl.h"

/* Bytes per stored element for a precision. */
gsize txl_snapcodec_width(TxlSnapshotPrecision p);
/* n floats -> n * width bytes in out. */
void txl_snapcodec_encode(const float *in, gsize n, TxlSnapshotPrecision p,
                          gboolean shuffle, guint8 *out);
/* The inverse.  With shuffle, scratch (n * width bytes) speeds it up;
 * NULL gathers the bytes in place.  Returns the index of the first value
 * that is not finite (NaN or infinity), n when all are: a loader refuses
 * such a memory. */
gsize txl_snapcodec_decode(const guint8 *in, gsize n, TxlSnapshotPrecision p,
                          gboolean shuffle, guint8 *scratch, float *out);

guint16 txl_f32_to_f16(float f);
float txl_f16_to_f32(guint16 h);
guint16 txl_f32_to_bf16(float f);
float txl_bf16_to_f32(guint16 h);

#endif
