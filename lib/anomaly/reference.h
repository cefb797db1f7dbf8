/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A line judged against the model file as well (docs/learning.md): while
 * learning, a line is judged by its cost under the adapted weights less a
 * quarter of what the model file makes of it alone.  A line typical of the
 * stream became much cheaper through learning; a line of another program
 * that the model file already knew did not, and it now stands out
 * (docs/notes/2026-11-28-reference-model.md: the weight was chosen on
 * injected lines of eight Loghub samples and judged on seven others).
 *
 * The model file's cost is taken from an empty memory, after the tokens of
 * a line end: a function of the line's own ids, so no second memory has
 * to live in streams, sessions or snapshots. */
#ifndef TXL_REFERENCE_H
#define TXL_REFERENCE_H

#include "lines.h"
#include "txl.h"

#include <math.h>

/* How much of the model file's cost comes off the judged score. */
#define TXL_LINE_REF_WEIGHT 0.25

/* Costs already computed are kept for lines of at most CACHE_LINE ids, at
 * most CACHE_LINES of them and CACHE_BYTES of ids together (with the
 * table's own: 2.9 MB measured for 16,384 lines of 16 ids); the table is
 * emptied when one more would not fit. */
#define TXL_LINE_REF_CACHE_LINE 512
#define TXL_LINE_REF_CACHE_LINES 16384
#define TXL_LINE_REF_CACHE_BYTES (1 << 20)

typedef struct _TxlLineRef TxlLineRef;

/* On model (a reference is kept): the model the learning started from. */
TxlLineRef *txl_line_ref_new(TxlModel *model, GError **error);
void txl_line_ref_free(TxlLineRef *r);
/* -ln P of the n ids under the model from an empty memory, primed with a
 * line end, in nats; NaN when they cannot be scored (n == 0, an id out of
 * range, a non-finite cost). */
double txl_line_ref_nll(TxlLineRef *r, const int32_t *ids, gsize n);
/* Whether a cost read from a snapshot can be one: a finite number of nats
 * (>= 0), or NaN for none. */
static inline gboolean
txl_line_ref_valid(double ref_nll)
{
  return isnan(ref_nll) || (isfinite(ref_nll) && ref_nll >= 0);
}
/* How many calls found their line's cost already computed. */
guint64 txl_line_ref_hits(const TxlLineRef *r);
/* What the line rule judges: worst - TXL_LINE_REF_WEIGHT x the reference
 * in bits per normalised byte; the line's worst alone when ref_nll is NaN
 * (no reference: not learning, or a line restored without one). */
double txl_line_judged(const TxlLineScore *s, double ref_nll);
/* ", \"ref_bpb\": X", the reference in bits per normalised byte, for a
 * line judged relative to one (nothing when ref_nll is NaN). */
void txl_line_append_ref_json(GString *o, const TxlLineScore *s,
                              double ref_nll);

#endif
