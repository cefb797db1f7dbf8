/* Pipeline snapshots across elements.
 *
 * txlmodel owns the snapshot file; the elements around it keep state of
 * their own that a bit-exact resume needs (txltokenizer: the encoder's
 * held-back bytes, line and offset counters; txlsink: the lines not yet
 * written and the anomaly baseline).  txlmodel gathers it with custom
 * queries, upstream and downstream, and hands it back the same way:
 *
 *   "txl-state-save"    each element adds a GBytes field named after
 *                        itself, and the count of tokens (txltokenizer:
 *                        "tokens-delivered") or records ("records-rendered")
 *                        that its state accounts for, so that txlmodel can
 *                        tell a consistent cut from one with buffers still
 *                        in flight (a queue between the elements)
 *   "txl-state-restore" carries the fields back; "apply" FALSE only checks
 *                        them (an element sets "error" on a bad one),
 *                        TRUE applies them
 *   "txl-state-fetch"   txltokenizer asks txlmodel, at its first buffer,
 *                        for the state restored when the pipeline started
 *
 * The byte layouts are little-endian, written and read with the helpers
 * below, which never read past the end. */
#ifndef TXL_STATE_H_PLUGIN
#define TXL_STATE_H_PLUGIN

#include <gst/gst.h>

#include "txl_state.h" /* the records' fields */

G_BEGIN_DECLS

#define TXL_STATE_SAVE "txl-state-save"
#define TXL_STATE_RESTORE "txl-state-restore"
#define TXL_STATE_FETCH "txl-state-fetch"
/* downstream custom event before EOS: the stream goes on in a snapshot, so
 * the sink keeps its unfinished lines rather than writing them */
#define TXL_STATE_HOLD "txl-state-hold"

GstQuery *txl_state_query_new(const gchar *name);

/* Asks the neighbour linked to pad for its state (a "txl-state-save"
 * query): `name` is the element's field ("txltokenizer", "txlsink"),
 * count_field/count what the asker has exchanged with it.  Returns its
 * bytes (a reference), or NULL: *busy TRUE when its state does not fit
 * the count yet (buffers in flight), FALSE when nobody answered. */
GBytes *txl_state_ask(GstPad *pad, const gchar *name,
                      const gchar *count_field, guint64 count,
                      gboolean *busy);
/* A neighbour's part of a snapshot into sect under `name`: its part of
 * the snapshot restored at start when `restored` (may be NULL) still has
 * one, else asked now (txl_state_ask).  FALSE when its state is in flight
 * (the snapshot must wait). */
gboolean txl_state_gather(GstElement *element, GHashTable *sect, GstPad *pad,
                          const gchar *name, const gchar *count_field,
                          guint64 count, GHashTable *restored);
/* Hands the neighbour linked to pad its part of a restored snapshot
 * (a "txl-state-restore" query): only to check it, or to apply it.  FALSE
 * with error set when it refuses; a part nobody linked takes is lost with
 * an element warning, and counts as taken. */
gboolean txl_state_give(GstElement *element, GstPad *pad, const gchar *name,
                        GBytes *bytes, gboolean apply, GError **error);
/* txltokenizer's part (tok, upstream of sinkpad) then txlsink's (sink,
 * downstream of srcpad), either may be NULL: FALSE when one refuses
 * (checking stops there; applying still gives the other). */
gboolean txl_state_give_pair(GstElement *element, GstPad *sinkpad,
                             GBytes *tok, GstPad *srcpad, GBytes *sink,
                             gboolean apply, GError **error);
/* Before the first buffer reaches txlsink after a restore at start: its
 * part from `restored` (then removed); an element error when refused. */
gboolean txl_state_give_sink_pending(GstElement *element, GstPad *srcpad,
                                     GHashTable *restored);
/* The element messages "txl-snapshot" (reason set) and "txl-restore"
 * (reason NULL): path, bytes, duration (seconds), tokens. */
void txl_state_post(GstElement *element, const gchar *path, guint64 bytes,
                    gdouble duration, guint64 tokens, const gchar *reason);
/* The query's structure for writing (queries made by the above are
 * writable), or NULL when it is not ours. */
GstStructure *txl_state_query_structure(GstQuery *q, const gchar *name);

/* Who writes this element's snapshots, as stored in the file's
 * TXL_SNAPSHOT_WRITER_SECTION: the top-level pipeline's name and the
 * element's.  GStreamer's automatic names count up for the life of a
 * process, so an automatic element name is replaced by its factory's and
 * its rank among that factory's elements in its bin, and an automatically
 * named pipeline (gst-launch-1.0's) is "an unnamed pipeline": a pipeline
 * rebuilt from the same description, in this process or another, keeps
 * its identity.  txld names each pipeline after its configuration. */
gchar *txl_state_writer(GstElement *e);
/* Adds the writer section to sections about to be saved. */
void txl_state_add_writer(GstElement *e, GHashTable *sect);
/* Refuses a file another pipeline or element wrote (older files, which
 * name no writer, are accepted). */
gboolean txl_state_check_writer(GstElement *e, const gchar *path,
                                GHashTable *sect, GError **error);
/* Removes the temporaries a writer of location killed mid-write left
 * (txl_snapshot_remove_stale), logging what it did; at start. */
void txl_state_remove_stale(GstElement *e, const gchar *location);

G_END_DECLS

#endif
