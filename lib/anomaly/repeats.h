/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A burst of one kind of line is one alert: a line the line rule flags is
 * reported as a repeat, not flagged, when a line of the same kind was
 * flagged within the previous TXL_REPEAT_HORIZON lines.  The repeat is
 * remembered too, so a burst stays one alert however long it lasts, and
 * the same kind flags again after HORIZON lines without it.  A line's kind
 * is its text with every run of hex digits that holds a decimal digit
 * replaced by one mark: the same message with other numbers, addresses,
 * ids or times.  Why, and on which data it was chosen and judged:
 * docs/notes/2026-11-29-repeats.md.
 *
 * Only what is reported changes: the caller keeps the rule's own flag for
 * learning, so the lines of a burst stay out of what is learnt from. */
#ifndef TXL_REPEATS_H
#define TXL_REPEATS_H

#include "bytes.h"
#include "lines.h"
#include "txl.h"

#define TXL_REPEAT_HORIZON 100

/* Plain data (the kinds flagged within the horizon, at most one a line):
 * copy it, compare it with memcmp. */
typedef struct {
  guint64 lines; /* lines seen */
  guint32 n;     /* kinds remembered */
  guint64 kind[TXL_REPEAT_HORIZON + 1];
  guint64 at[TXL_REPEAT_HORIZON + 1]; /* the line (0-based) last flagged */
} TxlRepeats;

void txl_repeats_init(TxlRepeats *r);
/* A 64-bit hash of the line's kind. */
guint64 txl_line_kind(const char *text, gsize len);
/* Every line, in order, with the rule's flag; returns the flag to report:
 * FALSE for a repeat. */
gboolean txl_repeats_line(TxlRepeats *r, const char *text, gsize len,
                          gboolean flagged);
/* What `txl score` and txlsink report for a line the stream's rule judged
 * (flagged: its flag, FALSE in the warm-up): txl_repeats_line's flag,
 * except that a line with a non-finite score is always flagged, warm-up
 * included (lines.h); *repeat: flagged by the rule, reported as a
 * repeat. */
gboolean txl_repeats_report(TxlRepeats *r, const char *text, gsize len,
                            const TxlLineScore *s, gboolean flagged,
                            gboolean *repeat);

/* Snapshot fields (little-endian, lib/formats/bytes.h); get refuses (FALSE,
 * r->ok too) what no stream of lines could produce. */
void txl_repeats_put(GByteArray *b, const TxlRepeats *r);
gboolean txl_repeats_get(TxlReader *rd, TxlRepeats *r);

#endif
