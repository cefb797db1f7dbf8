/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The parts of a pipeline snapshot, and who owns each.
 *
 * One scoring element (txlmodel, txlsessions; txlsampler for generation)
 * owns the snapshot file and schedules it (txlsnapsched.h); it writes its
 * own state and the library's.  Its two neighbours own a part each that a
 * bit-exact resume needs, and nothing else takes part:
 *
 *   upstream   TXL_PART_UPSTREAM (txltokenizer): the encoder's held-back
 *              bytes, the line and offset counters, tokens not yet pushed
 *   downstream TXL_PART_DOWNSTREAM (txlsink): the lines not yet written and
 *              the anomaly baseline
 *
 * The owner names no element: it asks "the part upstream" and "the part
 * downstream" over its pads, and a participant answers for its part with
 * txl_parts_answer().  The protocol, all in this file:
 *
 *   "txl-state-save"    the owner's count of what crossed the link (tokens
 *                        it received, items it delivered); the participant
 *                        adds its part's bytes as a field named after the
 *                        part when its state accounts for exactly that
 *                        count, else "<part>-busy" (buffers in flight: the
 *                        owner tries again after its next buffer)
 *   "txl-state-restore" the part's bytes back; "apply" FALSE only checks
 *                        them (the participant sets "error" on a bad one),
 *                        TRUE applies them; "<part>-done" when taken
 *   "txl-state-fetch"   after a restore at start, txltokenizer asks the
 *                        owner at its first buffer for its part (txlsink
 *                        gets its part pushed before its first buffer)
 *   "txl-state-hold"    (query and event) whether the end of the stream
 *                        only pauses it: txltokenizer keeps its held-back
 *                        bytes and txlsink its unfinished lines
 *
 * The byte layouts are little-endian, written and read with the helpers of
 * bytes.h, which never read past the end. */
#ifndef TXL_PARTS_H
#define TXL_PARTS_H

#include <gst/gst.h>

#include "txl_formats.h" /* bytes.h: the records' fields */

G_BEGIN_DECLS

/* the neighbours' parts: section names, and the count each accounts for */
#define TXL_PART_UPSTREAM "txltokenizer"
#define TXL_PART_UPSTREAM_COUNT "tokens-received"
#define TXL_PART_DOWNSTREAM "txlsink"
#define TXL_PART_DOWNSTREAM_COUNT "records-delivered"

/* A participant's part, for txl_parts_answer(). */
typedef struct {
  const gchar *name;        /* TXL_PART_UPSTREAM or TXL_PART_DOWNSTREAM */
  const gchar *count_field; /* its _COUNT */
  /* its bytes for a snapshot that accounts for count items, or NULL while
   * its state does not fit yet (busy) */
  GBytes *(*save)(GstElement *e, guint64 count);
  /* checks (apply FALSE) or applies its bytes; *taken FALSE when it has
   * nothing to take them into (not started) */
  gboolean (*restore)(GstElement *e, GBytes *bytes, gboolean apply,
                      gboolean *taken, GError **error);
} TxlPart;

/* Answers "txl-state-save" and "txl-state-restore" for a participant;
 * FALSE for any other query. */
gboolean txl_parts_answer(GstElement *e, const TxlPart *part, GstQuery *q);

#define TXL_PARTS_SAVE "txl-state-save"
#define TXL_PARTS_RESTORE "txl-state-restore"
#define TXL_PARTS_FETCH "txl-state-fetch"
/* a source asks txltokenizer, before its first buffer, where a restored
 * stream left off: "cursor", the TXL_RECORD_CURSOR field of the last
 * record line the tokenizer took in (absent: nothing to continue) */
#define TXL_PARTS_SOURCE_POSITION "txl-source-position"
/* downstream custom event before EOS: the stream goes on in a snapshot, so
 * the sink keeps its unfinished lines rather than writing them */
#define TXL_PARTS_HOLD "txl-state-hold"
/* downstream custom event from txltokenizer at the end of its input, when
 * the scorer below holds at EOS: write the end-of-stream snapshot now.  Its
 * result says whether it was written; when not, the tokenizer finishes the
 * stream (its held-back bytes scored) before EOS, and nothing is lost */
#define TXL_PARTS_PAUSE "txl-state-pause"

GstQuery *txl_parts_query_new(const gchar *name);

/* Asks the neighbour linked to pad for its state (a "txl-state-save"
 * query): `name` is its part (TXL_PART_UPSTREAM, ...),
 * count_field/count what the asker has exchanged with it.  Returns its
 * bytes (a reference), or NULL: *busy TRUE when its state does not fit
 * the count yet (buffers in flight), FALSE when nobody answered. */
GBytes *txl_parts_ask(GstPad *pad, const gchar *name,
                      const gchar *count_field, guint64 count,
                      gboolean *busy);
/* A neighbour's part of a snapshot into sect under `name`: its part of
 * the snapshot restored at start when `restored` (may be NULL) still has
 * one, else asked now (txl_parts_ask).  FALSE when its state is in flight
 * (the snapshot must wait). */
gboolean txl_parts_gather(GstElement *element, GHashTable *sect, GstPad *pad,
                          const gchar *name, const gchar *count_field,
                          guint64 count, GHashTable *restored);
/* Hands the neighbour linked to pad its part of a restored snapshot
 * (a "txl-state-restore" query): only to check it, or to apply it.  FALSE
 * with error set when it refuses; a part nobody linked takes is lost with
 * an element warning, and counts as taken. */
gboolean txl_parts_give(GstElement *element, GstPad *pad, const gchar *name,
                        GBytes *bytes, gboolean apply, GError **error);
/* The upstream part (tok, upstream of sinkpad) then the downstream one
 * (sink, downstream of srcpad), either may be NULL: FALSE when one refuses
 * (checking stops there; applying still gives the other). */
gboolean txl_parts_give_pair(GstElement *element, GstPad *sinkpad,
                             GBytes *tok, GstPad *srcpad, GBytes *sink,
                             gboolean apply, GError **error);
/* Before the first buffer goes downstream after a restore at start: the
 * downstream part from `restored` (then removed); an element error when refused. */
gboolean txl_parts_give_sink_pending(GstElement *element, GstPad *srcpad,
                                     GHashTable *restored);
/* The element messages "txl-snapshot" (reason set) and "txl-restore"
 * (reason NULL): path, bytes, duration (seconds), tokens. */
/* After a snapshot's write (ok, or err, taken): FALSE with an element
 * warning (the stream goes on), else TRUE and "txl-snapshot" posted with
 * the time since t0 (monotonic, us) and tokens, the stream position. */
gboolean txl_parts_written(GstElement *element, gboolean ok, GError *err,
                           const gchar *path, gsize bytes, gint64 t0,
                           guint64 tokens, const gchar *reason);
void txl_parts_post(GstElement *element, const gchar *path, guint64 bytes,
                    gdouble duration, guint64 tokens, const gchar *reason);
/* The query's structure for writing (queries made by the above are
 * writable), or NULL when it is not ours. */
GstStructure *txl_parts_query_structure(GstQuery *q, const gchar *name);

/* An owner's action signal ("snapshot", "restore"): takes a path (NULL
 * or empty: snapshot-location), returns TRUE when done; handler is the
 * class handler, (element, path) -> gboolean. */
guint txl_parts_action_signal_new(gpointer klass, const gchar *name,
                                  GCallback handler);

/* Who writes this element's snapshots, as stored in the file's
 * TXL_SNAPSHOT_WRITER_SECTION: the top-level pipeline's name and the
 * element's.  GStreamer's automatic names count up for the life of a
 * process, so an automatic element name is replaced by its factory's and
 * its rank among that factory's elements in its bin, and an automatically
 * named pipeline (gst-launch-1.0's) is "an unnamed pipeline": a pipeline
 * rebuilt from the same description, in this process or another, keeps
 * its identity.  txld names each pipeline after its configuration. */
gchar *txl_parts_writer(GstElement *e);
/* Adds the writer section to sections about to be saved. */
void txl_parts_add_writer(GstElement *e, GHashTable *sect);
/* Refuses a file another pipeline or element wrote (older files, which
 * name no writer, are accepted). */
gboolean txl_parts_check_writer(GstElement *e, const gchar *path,
                                GHashTable *sect, GError **error);
/* Removes the temporaries a writer of location killed mid-write left
 * (txl_snapshot_remove_stale), logging what it did; at start. */
void txl_parts_remove_stale(GstElement *e, const gchar *location);

G_END_DECLS

#endif
