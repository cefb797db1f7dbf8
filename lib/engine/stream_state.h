/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal (engine/stream_state.h, not the snapshot files of lib/state/):
 * a stream's and a scorer's complete state as plain data, for
 * snapshots (lib/state/snapshot.c).  Export never changes the object; import
 * checks everything before it touches anything. */
#ifndef TXL_STREAM_STATE_H
#define TXL_STREAM_STATE_H

#include "txl.h"

/* Floats of a stream's state: every layer's memory rows (keys then values,
 * or hidden states), then the last hidden row (d_model floats). */
gsize txl_stream_state_floats(const TxlStream *s, int mlen);
const TxlModel *txl_stream_model(const TxlStream *s);
/* Continues the stream with other weights of the same shape (checked),
 * keeping its memory; the stream takes a reference to m. */
gboolean txl_stream_set_model(TxlStream *s, TxlModel *m, GError **error);
void txl_stream_get_options(const TxlStream *s, TxlStreamOptions *o);
void txl_stream_state_export(const TxlStream *s, float *out, int *mlen,
                             gboolean *has_last);
gboolean txl_stream_state_import(TxlStream *s, const float *in, int mlen,
                                 gboolean has_last, GError **error);

int txl_scorer_segment(const TxlScorer *s);
/* The checks of txl_scorer_restore() alone: FALSE, changing nothing. */
gboolean txl_scorer_check_pending(const TxlScorer *s, const int32_t *pend,
                                  int npend, gint64 seen, GError **error);

/* The fixed fields of a scorer's state bytes (engine/scorer_state.c), in
 * their order; snapshot files store the same ones in their header. */
enum { TXL_STATE_NLAYER, TXL_STATE_DMODEL, TXL_STATE_HD, TXL_STATE_KIND,
       TXL_STATE_MEMLEN, TXL_STATE_CLAMP, TXL_STATE_SAME, TXL_STATE_MAXSEG,
       TXL_STATE_MLEN, TXL_STATE_HASLAST, TXL_STATE_SEG, TXL_STATE_NPEND,
       TXL_STATE_N_FIELDS };
/* Bytes before the floats: magic, version, the fields, tokens seen. */
#define TXL_STATE_HEADER (4 + 4 + 4 * TXL_STATE_N_FIELDS + 8)
/* Writes that header (TXL_STATE_HEADER bytes at dst). */
void txl_scorer_state_header(guint8 *dst, const gint32 *f, gint64 seen);
/* Reads it back (magic and version checked, nothing else); an error names
 * a refused version. */
gboolean txl_scorer_state_parse(const guint8 *src, gsize size, gint32 *f,
                                gint64 *seen, GError **error);
const int32_t *txl_scorer_pending(const TxlScorer *s, int *n);
gboolean txl_scorer_restore(TxlScorer *s, const int32_t *pend, int npend,
                            gint64 seen, GError **error);
/* A scorer over a stream it does not own (segment = the stream's largest),
 * so that a bare stream can be saved as a snapshot; unwrap frees it and
 * leaves the stream.  steal frees a scorer and hands back its stream. */
TxlScorer *txl_scorer_wrap(TxlStream *st, gint64 seen);
void txl_scorer_unwrap(TxlScorer *s);
TxlStream *txl_scorer_steal_stream(TxlScorer *s);

/* Sessions snapshots (lib/anomaly/sessions_snapshot.c) are scorer snapshots of the
 * worker stream with this section holding every session: the same
 * container (model identity, checksum, atomic write, sections), while
 * txl_scorer_load_full() refuses them and the sessions loader refuses
 * files without it. */
#define TXL_SESSIONS_SECTION "txl.sessions"
/* txl_scorer_save_full() without the reserved-name check. */
gboolean txl_snapshot_save_stream(TxlScorer *sc, const char *path,
                                  const TxlSnapshotOptions *opts,
                                  GHashTable *sections, gsize *file_bytes,
                                  GError **error);
/* A new table (name -> GBytes) holding the caller's sections, if any:
 * writers add their own sections to it, never to the caller's. */
GHashTable *txl_sections_copy(GHashTable *sections);
/* A section too large to assemble first (every session's memory): it
 * hands its bytes, exactly `size` of them in all, to emit() piece by
 * piece, and they go straight into the compressor. */
typedef void (*TxlSectionEmit)(gpointer ctx, const void *data, gsize n);
typedef struct {
  const char *name;
  gsize size;
  void (*feed)(gpointer data, TxlSectionEmit emit, gpointer ctx);
  gpointer data;
} TxlSectionProducer;
/* As txl_snapshot_save_stream, with one more section made by a producer
 * (its name must not be in sections). */
gboolean txl_snapshot_save_stream_with(TxlScorer *sc, const char *path,
                                       const TxlSnapshotOptions *opts,
                                       GHashTable *sections,
                                       const TxlSectionProducer *prod,
                                       gsize *file_bytes, GError **error);
/* Loads a sessions snapshot's worker stream (as a scorer with nothing
 * pending) and its sections; refuses a single-stream snapshot. */
TxlScorer *txl_snapshot_load_sessions(TxlModel *m, const char *path,
                                      GHashTable **sections, GError **error);

#endif
