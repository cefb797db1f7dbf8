/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GstTxlScorerBase (gsttxlscorerbase.h): the properties, pads, events,
 * queries and states that txlmodel and txlsessions share; their
 * snapshots are in gsttxlscorerbase_snap.c. */
#include "gsttxlscorerbase.h"
#include "txlparts.h"
#include "txlprops.h"

GST_DEBUG_CATEGORY_STATIC(gst_txl_scorer_base_debug);
#define GST_CAT_DEFAULT gst_txl_scorer_base_debug

#define MAX_LEN (1 << 20)

enum {
  PROP_0,
  PROP_MODEL,
  PROP_SEGMENT,
  PROP_MEM_LEN,
  PROP_SAME_LENGTH,
  PROP_CLAMP_LEN,
  PROP_FLUSH_ON_NEWLINE,
  PROP_SNAPSHOT_LOCATION,
  PROP_SNAPSHOT_INTERVAL,
  PROP_SNAPSHOT_TOKENS,
  PROP_SNAPSHOT_PRECISION,
  PROP_RESTORE,
  PROP_HOLD_AT_EOS,
  PROP_STATE_BYTES,
};

enum { SIGNAL_SNAPSHOT, SIGNAL_RESTORE, LAST_SIGNAL };
static guint signals[LAST_SIGNAL];

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(TXL_TOKENS_CAPS_NAME ", n-tokens = (int) [ 1, MAX ]"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(TXL_SCORES_CAPS_NAME));

G_DEFINE_ABSTRACT_TYPE(GstTxlScorerBase, gst_txl_scorer_base,
                       GST_TYPE_ELEMENT)

#define CLASS(self) GST_TXL_SCORER_BASE_GET_CLASS(self)

GType
gst_txl_snapshot_precision_get_type(void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { TXL_SNAPSHOT_F32, "float32, lossless: resumes bit for bit", "f32" },
    { TXL_SNAPSHOT_F16, "float16: about half the size, scores drift "
      "slightly after a restore", "f16" },
    { TXL_SNAPSHOT_BF16, "bfloat16: about half the size, more drift",
      "bf16" },
    { 0, NULL, NULL },
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static(
        "GstTxlSnapshotPrecision", values));
  return type;
}

void
gst_txl_scorer_base_stream_options(GstTxlScorerBase *self,
                                   TxlStreamOptions *o, int *segment,
                                   gboolean *flush_on_newline)
{
  TxlStreamOptions d = TXL_STREAM_OPTIONS_DEFAULT;
  *o = d;
  GST_OBJECT_LOCK(self);
  o->mem_len = self->mem_len;
  o->clamp_len = self->clamp_len;
  o->same_length = self->same_length;
  *segment = self->segment;
  *flush_on_newline = self->flush_on_newline;
  GST_OBJECT_UNLOCK(self);
}

void
gst_txl_scorer_base_set_state_bytes(GstTxlScorerBase *self, guint64 bytes)
{
  GST_OBJECT_LOCK(self);
  self->state_bytes = bytes;
  GST_OBJECT_UNLOCK(self);
}

/* With a snapshot file, the end of stream pauses the stream rather than
 * ending it (hold-at-eos). */
gboolean
gst_txl_scorer_base_holds_at_eos(GstTxlScorerBase *self)
{
  GST_OBJECT_LOCK(self);
  gboolean hold = self->hold_at_eos && self->snap.location &&
                  *self->snap.location;
  GST_OBJECT_UNLOCK(self);
  return hold;
}

GstFlowReturn
gst_txl_scorer_base_score_error(GstTxlScorerBase *self, GError *err)
{
  GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Scoring failed: %s",
                    err ? err->message : "internal error"), (NULL));
  g_clear_error(&err);
  return GST_FLOW_ERROR;
}

static void
free_stream(GstTxlScorerBase *self)
{
  CLASS(self)->free_stream(self);
  g_clear_pointer(&self->learning, gst_txl_learn_free);
  gst_txl_text_clear(&self->text);
}

/* A fresh stream: the subclass's, and nothing received or sent yet. */
static gboolean
new_stream(GstTxlScorerBase *self, GError **error)
{
  free_stream(self);
  gst_txl_text_reset(&self->text);
  self->in_tokens = 0;
  self->out_count = 0;
  self->expect_offset = -1;
  self->pause = GST_TXL_PAUSE_NONE;
  return CLASS(self)->new_stream(self, error);
}

static void
quiet(GstTxlScorerBase *self)
{
  if (CLASS(self)->quiet)
    CLASS(self)->quiet(self);
}

/* ---- streaming -------------------------------------------------------- */

static GstFlowReturn
gst_txl_scorer_base_chain(GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstTxlScorerBase *self = GST_TXL_SCORER_BASE(parent);
  GstMapInfo map;
  if (!CLASS(self)->live(self)) {
    gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, CORE, FAILED, ("Not started"), (NULL));
    return GST_FLOW_ERROR;
  }
  if (!gst_txl_map_records(GST_ELEMENT(self), buf, &map,
                           TXL_TOKEN_RECORD_SIZE, "token")) {
    gst_buffer_unref(buf);
    return GST_FLOW_ERROR;
  }
  if (self->expect_offset >= 0) {
    /* after a live restore: a buffer txltokenizer was already pushing
     * holds tokens of the stream that was replaced */
    if (GST_BUFFER_OFFSET_IS_VALID(buf) &&
        (gint64)GST_BUFFER_OFFSET(buf) != self->expect_offset) {
      GST_DEBUG_OBJECT(self, "dropping a buffer of the replaced stream");
      gst_buffer_unmap(buf, &map);
      gst_buffer_unref(buf);
      return GST_FLOW_OK;
    }
    self->expect_offset = -1;
  }
  if (!txl_parts_give_sink_pending(GST_ELEMENT(self), self->srcpad,
                                   self->restored)) {
    gst_buffer_unmap(buf, &map);
    gst_buffer_unref(buf);
    return GST_FLOW_ERROR;
  }
  if (GST_BUFFER_PTS_IS_VALID(buf))
    self->last_pts = GST_BUFFER_PTS(buf);
  if (GST_BUFFER_DTS_IS_VALID(buf))
    self->last_dts = GST_BUFFER_DTS(buf);
  self->text_first = gst_txl_text_take(&self->text, buf,
                                       !CLASS(self)->per_line,
                                       GST_ELEMENT(self));
  GstFlowReturn ret = CLASS(self)->score(self, map.data,
                                         map.size / TXL_TOKEN_RECORD_SIZE);
  gst_buffer_unmap(buf, &map);
  gst_buffer_unref(buf);
  if (ret == GST_FLOW_OK)
    txl_snap_sched_triggers(&self->snap);
  /* downstream flushing (shutting down, a seek): what was scored waits in
   * the element's state, and the tokens are taken, as txltokenizer counts
   * them delivered only on OK; refusing them would leave them counted
   * twice and no snapshot could be consistent */
  if (ret == GST_FLOW_FLUSHING)
    ret = GST_FLOW_OK;
  return ret;
}

/* The stream paused in a snapshot instead of ended (hold-at-eos): its
 * partial segment (or open sessions), the tokenizer's held-back bytes and
 * the sink's unfinished lines go into the snapshot, and the next run
 * continues them.  FALSE when it could not be written: the caller then
 * ends the stream instead, everything scored, so that no line is lost. */
static gboolean
pause_stream(GstTxlScorerBase *self)
{
  gchar *loc = txl_snap_sched_path(&self->snap, NULL);
  TxlSnapResult r = TXL_SNAP_FAIL;
  if (loc && gst_txl_scorer_base_holds_at_eos(self) &&
      CLASS(self)->live(self)) {
    quiet(self);
    txl_parts_give_sink_pending(GST_ELEMENT(self), self->srcpad,
                                self->restored);
    CLASS(self)->push_out(self);
    r = gst_txl_scorer_base_snapshot(self, loc, "eos");
    if (r != TXL_SNAP_OK)
      GST_ELEMENT_WARNING(self, RESOURCE, WRITE,
          ("No snapshot at end of stream%s: the stream ends here instead, "
           "its last lines scored",
           r == TXL_SNAP_DEFER ? " (buffers were still queued between the "
                                 "txl elements)" : ""),
          (NULL));
  }
  g_free(loc);
  return r == TXL_SNAP_OK;
}

/* txltokenizer, at the end of its input, before EOS: the pause now, while
 * it can still finish the stream (its held-back bytes) should the
 * snapshot fail; the event's result tells it which. */
static gboolean
on_pause(GstTxlScorerBase *self)
{
  gboolean ok = pause_stream(self);
  self->pause = ok ? GST_TXL_PAUSE_DONE : GST_TXL_PAUSE_FAILED;
  return ok;
}

/* The end of the stream: with hold-at-eos, only a pause kept in the
 * snapshot (on_pause, or here when no txltokenizer asked for it); else,
 * or when the pause could not be written, everything is scored, then
 * snapshot. */
static void
on_eos(GstTxlScorerBase *self)
{
  quiet(self);
  GstTxlPause asked = self->pause;
  self->pause = GST_TXL_PAUSE_NONE;
  gboolean live = CLASS(self)->live(self);
  if (asked == GST_TXL_PAUSE_DONE ||
      (asked == GST_TXL_PAUSE_NONE && pause_stream(self))) {
    gst_pad_push_event(self->srcpad, gst_event_new_custom(
        GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_new_empty(TXL_PARTS_HOLD)));
    return;
  }
  GstFlowReturn ret = live ? CLASS(self)->finish(self) : GST_FLOW_OK;
  if (ret != GST_FLOW_OK)
    GST_DEBUG_OBJECT(self, "ending at EOS: %s", gst_flow_get_name(ret));
  gchar *loc = txl_snap_sched_path(&self->snap, NULL);
  if (loc && live)
    gst_txl_scorer_base_snapshot(self, loc, "eos");
  if (live)
    gst_txl_learn_ended(self->learning);
  g_free(loc);
}

static gboolean
on_caps(GstTxlScorerBase *self, GstEvent *event)
{
  GstCaps *caps;
  gst_event_parse_caps(event, &caps);
  gboolean ok = self->model &&
                gst_txl_check_tokens_caps(GST_ELEMENT(self), self->model,
                                          caps, &self->refused);
  gst_event_unref(event);
  if (!ok)
    return FALSE;
  GstCaps *out = gst_caps_new_simple(
      TXL_SCORES_CAPS_NAME, "vocab-id", G_TYPE_STRING,
      txl_model_vocab_id(self->model), "model-id", G_TYPE_STRING,
      txl_model_id(self->model), NULL);
  if (CLASS(self)->per_line)
    gst_caps_set_simple(out, "per-line", G_TYPE_BOOLEAN, TRUE, NULL);
  gst_txl_add_calibration_caps(out, self->model, CLASS(self)->per_line);
  GstEvent *ev = gst_event_new_caps(out); /* takes its own reference */
  gst_caps_unref(out);
  return gst_pad_push_event(self->srcpad, ev);
}

static gboolean
gst_txl_scorer_base_sink_event(GstPad *pad, GstObject *parent,
                               GstEvent *event)
{
  GstTxlScorerBase *self = GST_TXL_SCORER_BASE(parent);
  GError *err = NULL;
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_CAPS:
    return on_caps(self, event);
  case GST_EVENT_STREAM_START:
    if (self->restored_fresh) {
      /* the stream restored at start goes on: nothing to end */
      self->restored_fresh = FALSE;
    } else if (CLASS(self)->live(self) &&
               !CLASS(self)->stream_start(self, &err)) {
      gst_txl_scorer_base_score_error(self, err);
      gst_event_unref(event);
      return FALSE;
    }
    break;
  case GST_EVENT_FLUSH_START:
    quiet(self);
    break;
  case GST_EVENT_EOS:
    on_eos(self);
    break;
  case GST_EVENT_CUSTOM_DOWNSTREAM:
    if (gst_event_has_name(event, TXL_PARTS_PAUSE)) {
      gst_event_unref(event);
      return on_pause(self);
    }
    break;
  case GST_EVENT_FLUSH_STOP:
    if (CLASS(self)->live(self) && !new_stream(self, &err)) {
      gst_txl_scorer_base_score_error(self, err);
      gst_event_unref(event);
      return FALSE;
    }
    self->last_pts = self->last_dts = GST_CLOCK_TIME_NONE;
    break;
  default:
    break;
  }
  return gst_pad_event_default(pad, parent, event);
}

/* A new stream (STREAM_START not continuing a restored one): for the
 * subclass, after it has finished the old one. */
gboolean
gst_txl_scorer_base_new_stream(GstTxlScorerBase *self, GError **error)
{
  return new_stream(self, error);
}

static gboolean
gst_txl_scorer_base_sink_query(GstPad *pad, GstObject *parent,
                               GstQuery *query)
{
  GstTxlScorerBase *self = GST_TXL_SCORER_BASE(parent);
  GstStructure *st;
  if ((st = txl_parts_query_structure(query, TXL_PARTS_FETCH))) {
    /* txltokenizer's first buffer: its part of a snapshot restored at
     * start (asked from its streaming thread, which scores through us) */
    GST_PAD_STREAM_LOCK(self->sinkpad);
    GBytes *b = self->restored ? g_hash_table_lookup(self->restored,
                                                     TXL_PART_UPSTREAM)
                               : NULL;
    if (b)
      gst_structure_set(st, TXL_PART_UPSTREAM, G_TYPE_BYTES, b, NULL);
    self->tokenizer_fetched = TRUE;
    GST_PAD_STREAM_UNLOCK(self->sinkpad);
    return TRUE;
  }
  if ((st = txl_parts_query_structure(query, TXL_PARTS_HOLD))) {
    gst_structure_set(st, "hold", G_TYPE_BOOLEAN,
                      gst_txl_scorer_base_holds_at_eos(self), NULL);
    return TRUE;
  }
  if (GST_QUERY_TYPE(query) == GST_QUERY_CAPS && self->model) {
    gst_txl_answer_caps_query(query, gst_txl_tokens_caps(self->model));
    return TRUE;
  }
  return gst_pad_query_default(pad, parent, query);
}

static gboolean
gst_txl_scorer_base_src_query(GstPad *pad, GstObject *parent,
                              GstQuery *query)
{
  GstTxlScorerBase *self = GST_TXL_SCORER_BASE(parent);
  if (GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    if (!gst_pad_peer_query(self->sinkpad, query))
      return FALSE;
    gboolean live;
    GstClockTime min, max;
    gst_query_parse_latency(query, &live, &min, &max);
    /* Tokens wait here until their segment (or, with flush-on-newline,
     * their line; or their session's end) is complete: a wait measured in
     * tokens, not time, that adds nothing to the minimum.  Nothing here
     * ever blocks upstream, so the buffering we offer is unbounded. */
    gst_query_set_latency(query, live, min, GST_CLOCK_TIME_NONE);
    GST_DEBUG_OBJECT(self, "latency: live %d, min %" GST_TIME_FORMAT, live,
                     GST_TIME_ARGS(min));
    return TRUE;
  }
  return gst_pad_query_default(pad, parent, query);
}

/* ---- states ----------------------------------------------------------- */

/* READY_TO_PAUSED: a fresh stream, then the snapshot's when there is one
 * to continue. */
static gboolean
start(GstTxlScorerBase *self)
{
  GError *err = NULL;
  if (CLASS(self)->prepare && !CLASS(self)->prepare(self))
    return FALSE;
  if (!new_stream(self, &err)) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                      ("Invalid %s settings: %s", CLASS(self)->settings,
                       err->message), (NULL));
    g_clear_error(&err);
    return FALSE;
  }
  self->last_pts = self->last_dts = GST_CLOCK_TIME_NONE;
  self->restored_fresh = FALSE;
  self->tokenizer_fetched = FALSE;
  txl_snap_sched_mark(&self->snap);
  gchar *loc = txl_snap_sched_path(&self->snap, NULL);
  GST_OBJECT_LOCK(self);
  gboolean restore = self->restore;
  GST_OBJECT_UNLOCK(self);
  /* a snapshot that cannot be written is found now, not at the end of
   * the stream, where hold-at-eos leaves the last lines to it */
  if (loc && !txl_path_writable_later(loc, &err)) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE,
                      ("Snapshots cannot be written to \"%s\": %s", loc,
                       err->message),
                      ("snapshot-location names a file in an existing "
                       "folder"));
    g_clear_error(&err);
    g_free(loc);
    free_stream(self);
    return FALSE;
  }
  if (loc) /* what a writer killed mid-write left beside the file */
    txl_parts_remove_stale(GST_ELEMENT(self), loc);
  if (loc && restore && g_file_test(loc, G_FILE_TEST_EXISTS) &&
      !gst_txl_scorer_base_restore(self, loc, TRUE, &err)) {
    GST_ELEMENT_ERROR(self, RESOURCE, READ,
                      ("Could not restore the snapshot \"%s\": %s", loc,
                       err->message),
                      ("remove or replace the file, or set restore=false "
                       "to start a new stream"));
    g_clear_error(&err);
    g_free(loc);
    free_stream(self);
    return FALSE;
  }
  g_free(loc);
  txl_snap_sched_start(&self->snap);
  return TRUE;
}

static GstStateChangeReturn
gst_txl_scorer_base_change_state(GstElement *element,
                                 GstStateChange transition)
{
  GstTxlScorerBase *self = GST_TXL_SCORER_BASE(element);
  switch (transition) {
  case GST_STATE_CHANGE_READY_TO_PAUSED:
    if (!start(self))
      return GST_STATE_CHANGE_FAILURE;
    break;
  default:
    break;
  }
  GstStateChangeReturn ret = gst_txl_element_change_state(
      element, GST_ELEMENT_CLASS(gst_txl_scorer_base_parent_class),
      transition, &self->model, FALSE);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;
  switch (transition) {
  case GST_STATE_CHANGE_NULL_TO_READY:
    if (CLASS(self)->opened)
      CLASS(self)->opened(self);
    break;
  case GST_STATE_CHANGE_PAUSED_TO_READY:
    quiet(self);
    /* shutdown without an end of stream: what changed since the last
     * snapshot is saved (the pads are inactive, nothing streams here) */
    GST_PAD_STREAM_LOCK(self->sinkpad);
    txl_snap_sched_stop(&self->snap);
    free_stream(self);
    g_clear_pointer(&self->restored, g_hash_table_unref);
    GST_PAD_STREAM_UNLOCK(self->sinkpad);
    break;
  case GST_STATE_CHANGE_READY_TO_NULL:
    gst_caps_replace(&self->refused, NULL);
    break;
  default:
    break;
  }
  return ret;
}

/* ---- properties ------------------------------------------------------- */

#define F(id, field, ...) TXL_PROP(id, GstTxlScorerBase, field, __VA_ARGS__)
static const TxlPropField prop_fields[] = {
  /* the stream */
  TXL_PROP_UPTO(PROP_MODEL, GstTxlScorerBase, model_path, GST_STATE_NULL,
      TXL_STRING("model", "Model", "Path of the txl model file (GGUF); its "
          "weights are loaded once per process and shared by every element "
          "naming the same file (unset: the bundled model, or the file "
          "TXL_MODEL names)", NULL, TXL_RW)),
  F(PROP_SEGMENT, segment, TXL_INT("segment", "Segment", "Segment length "
      "in tokens of the stream (of every session's): inputs t0..t(N-1) "
      "predict t1..tN, then the next N (0 = the model's tgt_len). Read when "
      "the element starts", 0, MAX_LEN, 0, TXL_RW_READY)),
  F(PROP_MEM_LEN, mem_len, TXL_INT("mem-len", "Memory length", "Positions "
      "of recurrent memory (per session), in tokens (-1 = the model's "
      "mem_len)", -1, MAX_LEN, -1, TXL_RW_READY)),
  F(PROP_SAME_LENGTH, same_length, TXL_INT("same-length", "Same length",
      "1: every query attends to exactly mem-len keys; 0: to all earlier "
      "keys in memory and segment (-1 = the model's setting)", -1, 1, -1,
      TXL_RW_READY)),
  F(PROP_CLAMP_LEN, clamp_len, TXL_INT("clamp-len", "Clamp length",
      "Relative distances are capped at this many tokens; 0 = no cap (-1 = "
      "the model's clamp_len)", -1, MAX_LEN, -1, TXL_RW_READY)),
  F(PROP_FLUSH_ON_NEWLINE, flush_on_newline, TXL_BOOLEAN("flush-on-newline",
      "Flush on newline", "Score the pending partial segment (txlsessions: "
      "the line's session's) at every line end, so that each line's scores "
      "go out at once. Changes the segmentation: scores then differ from an "
      "offline run or `txl eval` (FALSE = exact offline segmentation)",
      FALSE, TXL_RW_PLAYING)),
  F(PROP_STATE_BYTES, state_bytes, TXL_UINT64("state-bytes", "State bytes",
      "Bytes of state the stream holds now (its memory rows in use; "
      "txlsessions: with the open sessions' pending tokens, lines and keys); "
      "read-only", 0, G_MAXUINT64, 0, TXL_RO)),
  /* its snapshots */
  F(PROP_SNAPSHOT_LOCATION, snap.location, TXL_STRING("snapshot-location",
      "Snapshot location", "File for snapshots of the stream's state "
      "(memory, pending tokens; txlsessions: of every open session) with the "
      "state of txltokenizer and txlsink around this element, written "
      "atomically; NULL = no snapshots", NULL, TXL_RW_READY)),
  F(PROP_SNAPSHOT_INTERVAL, snap.interval, TXL_UINT("snapshot-interval",
      "Snapshot interval", "Write a snapshot every this many seconds while "
      "the stream changes (0 = off)", 0, G_MAXUINT, 0, TXL_RW_READY)),
  F(PROP_SNAPSHOT_TOKENS, snap.every, TXL_UINT64("snapshot-tokens",
      "Snapshot every N tokens", "Write a snapshot every this many tokens "
      "(0 = off)", 0, G_MAXUINT64, 0, TXL_RW_PLAYING)),
  F(PROP_SNAPSHOT_PRECISION, snap_precision, TXL_ENUM("snapshot-precision",
      "Snapshot precision", "How the memory is stored: f32 resumes bit for "
      "bit; f16 and bf16 make smaller files whose scores drift slightly "
      "(docs/snapshots.md)", gst_txl_snapshot_precision_get_type,
      TXL_SNAPSHOT_F32, TXL_RW_PLAYING)),
  F(PROP_RESTORE, restore, TXL_BOOLEAN("restore", "Restore", "When the "
      "element starts and snapshot-location exists, continue the stream "
      "saved there (an unreadable or other-model file is an error; FALSE: "
      "start afresh and overwrite it)", TRUE, TXL_RW_READY)),
  F(PROP_HOLD_AT_EOS, hold_at_eos, TXL_BOOLEAN("hold-at-eos",
      "Hold at end of stream", "With snapshot-location set, the end of "
      "stream pauses the stream instead of ending it: the last partial "
      "segment (the open sessions), the tokenizer's held-back bytes and the "
      "unfinished lines are kept in the snapshot unscored, so that the next "
      "run continues bit for bit (FALSE: score them, then snapshot)", TRUE,
      TXL_RW_READY)),
};
#undef F

/* What the base holds besides its properties' strings: the stream (the
 * subclass's part too), the scheduler, a restore's sections. */
static void
release(GObject *object)
{
  GstTxlScorerBase *self = GST_TXL_SCORER_BASE(object);
  free_stream(self);
  txl_snap_sched_clear(&self->snap);
  g_clear_pointer(&self->restored, g_hash_table_unref);
}

static const TxlPropTable props = {
  .fields = prop_fields, .n = G_N_ELEMENTS(prop_fields),
  .finalize = release,
};

static gboolean
snapshot_action(GstTxlScorerBase *self, const gchar *path)
{
  return txl_snap_sched_snapshot_action(&self->snap, path);
}

static gboolean
restore_action(GstTxlScorerBase *self, const gchar *path)
{
  return txl_snap_sched_restore_action(&self->snap, path);
}

static void
gst_txl_scorer_base_class_init(GstTxlScorerBaseClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);

  txl_props_install(gobject_class, &props);

  /**
   * GstTxlScorerBase::snapshot:
   * @path: the file, or NULL for snapshot-location
   *
   * Writes a snapshot: at once when the stream is idle, else right after
   * the buffer being scored.  A "txl-snapshot" element message (path,
   * bytes, duration in seconds, tokens, reason) follows each snapshot.
   * Returns FALSE when there is no path or the write failed.
   */
  signals[SIGNAL_SNAPSHOT] = txl_parts_action_signal_new(klass, "snapshot",
      G_CALLBACK(snapshot_action));
  /**
   * GstTxlScorerBase::restore:
   * @path: the file, or NULL for snapshot-location
   *
   * Replaces the stream with the one saved in @path (this element's and
   * its txl neighbours' state), after checking all of it (a bad file is
   * refused and nothing changes).  Posts "txl-restore" (path, bytes,
   * duration, tokens).
   */
  signals[SIGNAL_RESTORE] = txl_parts_action_signal_new(klass, "restore",
      G_CALLBACK(restore_action));

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  element_class->change_state = gst_txl_scorer_base_change_state;
  gst_type_mark_as_plugin_api(GST_TYPE_TXL_SCORER_BASE, 0);
  GST_DEBUG_CATEGORY_INIT(gst_txl_scorer_base_debug, "txlscorerbase", 0,
                          "txl scoring elements");
}

static void
gst_txl_scorer_base_init(GstTxlScorerBase *self)
{
  self->sinkpad = gst_txl_add_pad(GST_ELEMENT(self), &sink_template,
      gst_txl_scorer_base_chain, gst_txl_scorer_base_sink_event,
      gst_txl_scorer_base_sink_query);
  /* any token caps pass accept-caps; the CAPS event then checks the
   * vocabulary and says what is wrong */
  GST_PAD_SET_ACCEPT_TEMPLATE(self->sinkpad);
  txl_snap_sched_init(&self->snap, GST_ELEMENT(self), self->sinkpad,
                      &gst_txl_scorer_base_snap_ops);

  self->srcpad = gst_txl_add_pad(GST_ELEMENT(self), &src_template, NULL,
                                 NULL, gst_txl_scorer_base_src_query);
  gst_pad_use_fixed_caps(self->srcpad);

  txl_props_init(self, &props);
  self->last_pts = self->last_dts = GST_CLOCK_TIME_NONE;
  self->expect_offset = -1;
}
