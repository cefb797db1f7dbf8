/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a learner grouping sessions learns from (learner.h,
 * docs/learning.md): each session's lines kept together from its first
 * line, so that a round learns a session's course the way TxlSessions
 * scores it, after the primer, and not lines of many sessions
 * interleaved (docs/notes/2026-11-27-learning-order.md).
 *
 * A transcript is a session's usable lines so far.  It dies (its ids are
 * freed; later lines of that session are not kept) when one of its lines
 * or the session itself is flagged, or when the transcripts together hold
 * more than the cap and it is the one touched longest ago.  The learner's
 * window names transcripts by serial, one reference per window line;
 * a transcript lives while its session is open or a window line names it.
 * Everything depends on the order of calls only. */
#ifndef TXL_TRANSCRIPTS_H
#define TXL_TRANSCRIPTS_H

#include "bytes.h"

#include <glib.h>
#include <stdint.h>

typedef struct _TxlTranscripts TxlTranscripts;

/* primer: the ids before each transcript in a round's text (TxlSessions'
 * line end; none for a model without a tokenizer); cap: tokens all
 * transcripts hold at most; max_one: tokens one holds at most (a session
 * that would hold more starts over from its new line, which keeps at most
 * that many). */
TxlTranscripts *txl_transcripts_new(const int32_t *primer, gsize n_primer,
                                    gsize cap, gsize max_one);
/* An empty one with t's primer and cap (to restore state into). */
TxlTranscripts *txl_transcripts_new_like(const TxlTranscripts *t);
void txl_transcripts_free(TxlTranscripts *t);

/* A line of the session key.  Returns the serial of its transcript, with
 * a reference for the caller's window line (txl_transcripts_release). */
guint64 txl_transcripts_line(TxlTranscripts *t, const char *key,
                             const int32_t *ids, gsize n, gboolean flagged);
/* The session key ended (flagged: it is not learnt from); a later line
 * of the same key starts a new transcript.  An unknown key: nothing. */
void txl_transcripts_end(TxlTranscripts *t, const char *key,
                         gboolean flagged);
void txl_transcripts_release(TxlTranscripts *t, guint64 serial);

/* A round's text: the living transcripts among serials (a window of n
 * lines, oldest first, lens[i] the tokens of line i), each once, in the
 * order of its last mention, each after the primer; the most recent kept
 * first up to cap tokens.  Only the window's lines are learnt, each after
 * its session's earlier lines: *learn (g_malloc'd, a flag per token) marks
 * the last tokens of each transcript, as many as its window lines hold;
 * the primer and the earlier lines are context.  *lines: the window lines
 * learnt.  Returns g_malloc'd ids (NULL when none). */
int32_t *txl_transcripts_text(TxlTranscripts *t, const guint64 *serials,
                              const gint64 *lens, gsize n, gsize cap,
                              gsize *n_tok, guint8 **learn, gint64 *lines);

/* State (inside the learner's, learner.c): every transcript, the touch
 * order, the next serial.  parse checks ids against n_token, the cap and
 * that each transcript is named by its open session or by refs (the
 * window's references, counted by the caller per serial). */
gsize txl_transcripts_state_size(const TxlTranscripts *t);
void txl_transcripts_state_write(const TxlTranscripts *t, TxlWriter *w);
gboolean txl_transcripts_state_read(TxlTranscripts *t, TxlReader *r,
                                    int n_token, GHashTable *refs);

#endif
