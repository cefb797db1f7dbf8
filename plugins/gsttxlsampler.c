/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsampler: generation.  Token records in (a prompt, or any stream of
 * text through txltokenizer) become the context of a stream of its own;
 * at the end of the input (EOS), or after every input line when
 * `per-line` is set, it samples `max-tokens` tokens, each fed back into the
 * memory, and pushes their text downstream as text/x-raw.  It stops early
 * once the text generated ends with `stop`.  The same seed and input give
 * the same text.  The sampling itself is lib/engine/sampler.c and lib/engine/generate.c.
 *
 * With snapshot-location set, the generation (memory, the sampler's
 * generator state, context not yet fed, and txltokenizer's state) is saved
 * at end of stream, at shutdown and on the "snapshot" signal, and restored
 * when the element starts: a resumed run samples what an uninterrupted one
 * would have. */
#include "txl_engine.h"
#include "gsttxlcommon.h"
#include "txlparts.h"
#include "txlprops.h"

#include <glib/gstdio.h>

#include <string.h>

GST_DEBUG_CATEGORY_STATIC(gst_txl_sampler_debug);
#define GST_CAT_DEFAULT gst_txl_sampler_debug

#define GST_TYPE_TXL_SAMPLER (gst_txl_sampler_get_type())
G_DECLARE_FINAL_TYPE(GstTxlSampler, gst_txl_sampler, GST, TXL_SAMPLER,
                     GstElement)

struct _GstTxlSampler {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties, object lock */
  gchar *model_path, *stop;
  gdouble temperature, top_p;
  gint top_k, max_tokens;
  guint64 seed;
  gboolean per_line, stop_at_eos;

  /* from READY */
  TxlModel *model;
  /* streaming, under the sink pad's stream lock */
  TxlGenerator *gen;
  GArray *pending; /* context ids not yet fed */
  gboolean caps_sent;
  guint64 received;   /* tokens received in this stream */
  gboolean dirty;     /* changed since the last snapshot */
  GBytes *tok_state;  /* txltokenizer's part of a restored snapshot */

  /* snapshots, object lock */
  gchar *snap_location;
  gboolean restore;
};

enum { PROP_0, PROP_MODEL, PROP_TEMPERATURE, PROP_TOP_K, PROP_TOP_P,
       PROP_SEED, PROP_MAX_TOKENS, PROP_STOP, PROP_PER_LINE,
       PROP_STOP_AT_EOS, PROP_SNAPSHOT_LOCATION, PROP_RESTORE };

enum { SIGNAL_SNAPSHOT, LAST_SIGNAL };
static guint signals[LAST_SIGNAL];

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(TXL_TOKENS_CAPS_NAME));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("text/x-raw, format = (string) utf8"));

G_DEFINE_TYPE(GstTxlSampler, gst_txl_sampler, GST_TYPE_ELEMENT)

static gboolean
new_generator(GstTxlSampler *self, GError **error)
{
  GST_OBJECT_LOCK(self);
  TxlSamplerOptions o = { (float)self->temperature, self->top_k,
                          (float)self->top_p, self->seed };
  GST_OBJECT_UNLOCK(self);
  txl_generator_free(self->gen);
  self->gen = txl_generator_new(self->model, NULL, &o, error);
  return self->gen != NULL;
}

/* ---- snapshots ------------------------------------------------------------ */

#define STATE_VERSION 1u

static gboolean
save_snapshot(GstTxlSampler *self, const gchar *path, const gchar *reason)
{
  gint64 t0 = g_get_monotonic_time();
  GHashTable *sect = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)g_bytes_unref);
  if (self->tok_state) {
    g_hash_table_insert(sect, g_strdup(TXL_PART_UPSTREAM),
                        g_bytes_ref(self->tok_state));
  } else {
    /* called between buffers, where the tokenizer's state fits ours; a
     * state that does not fit is left out (busy) */
    gboolean busy;
    GBytes *tok = txl_parts_ask(self->sinkpad, TXL_PART_UPSTREAM,
                                TXL_PART_UPSTREAM_COUNT, self->received, &busy);
    if (tok)
      g_hash_table_insert(sect, g_strdup(TXL_PART_UPSTREAM), tok);
    else if (busy)
      GST_WARNING_OBJECT(self, "snapshot without the tokenizer's state: "
                         "tokens were still on their way");
  }
  GByteArray *b = g_byte_array_new();
  txl_put_u32(b, STATE_VERSION);
  txl_put_u64(b, self->received);
  txl_put_blob(b, self->pending->data, self->pending->len * sizeof(int32_t));
  g_hash_table_insert(sect, g_strdup("txlsampler"),
                      g_byte_array_free_to_bytes(b));
  txl_parts_add_writer(GST_ELEMENT(self), sect);
  gsize bytes = 0;
  GError *err = NULL;
  gboolean ok = txl_generator_save(self->gen, path, NULL, sect, &bytes, &err);
  g_hash_table_unref(sect);
  if (!txl_parts_written(GST_ELEMENT(self), ok, err, path, bytes, t0,
                         self->received, reason))
    return FALSE;
  self->dirty = FALSE;
  return TRUE;
}

static gboolean
load_snapshot(GstTxlSampler *self, const gchar *path, GError **error)
{
  gint64 t0 = g_get_monotonic_time();
  GST_OBJECT_LOCK(self);
  TxlSamplerOptions o = { (float)self->temperature, self->top_k,
                          (float)self->top_p, self->seed };
  GST_OBJECT_UNLOCK(self);
  GHashTable *sect = NULL;
  TxlGenerator *g = txl_generator_load(self->model, path, &o, &sect, error);
  if (!g)
    return FALSE;
  TxlReader r;
  txl_reader_init(&r, g_hash_table_lookup(sect, "txlsampler"));
  guint32 version = txl_get_u32(&r);
  guint64 received = txl_get_u64(&r);
  gsize n;
  const guint8 *ids = txl_get_blob(&r, &n, G_MAXUINT32);
  int n_token = txl_model_config(self->model)->n_token;
  gboolean ok = g_hash_table_contains(sect, "txlsampler") &&
                txl_reader_done(&r) && version == STATE_VERSION &&
                n % sizeof(int32_t) == 0;
  for (gsize i = 0; ok && i < n; i += sizeof(int32_t)) {
    int32_t id;
    memcpy(&id, ids + i, sizeof id);
    ok = id >= 0 && id < n_token;
  }
  if (!ok) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: the txlsampler state is missing or malformed", path);
    txl_generator_free(g);
    g_hash_table_unref(sect);
    return FALSE;
  }
  if (!txl_parts_check_writer(GST_ELEMENT(self), path, sect, error)) {
    txl_generator_free(g);
    g_hash_table_unref(sect);
    return FALSE;
  }
  txl_generator_free(self->gen);
  self->gen = g;
  g_array_set_size(self->pending, 0);
  g_array_append_vals(self->pending, ids, (guint)(n / sizeof(int32_t)));
  self->received = received;
  g_clear_pointer(&self->tok_state, g_bytes_unref);
  GBytes *tok = g_hash_table_lookup(sect, TXL_PART_UPSTREAM);
  if (tok)
    self->tok_state = g_bytes_ref(tok);
  g_hash_table_unref(sect);
  GStatBuf st;
  guint64 size = g_stat(path, &st) == 0 ? (guint64)st.st_size : 0;
  txl_parts_post(GST_ELEMENT(self), path, size,
                 (g_get_monotonic_time() - t0) / 1e6, received, NULL);
  return TRUE;
}

static gchar *
location(GstTxlSampler *self)
{
  GST_OBJECT_LOCK(self);
  gchar *p = self->snap_location && *self->snap_location
                 ? g_strdup(self->snap_location) : NULL;
  GST_OBJECT_UNLOCK(self);
  return p;
}

static gboolean
gst_txl_sampler_snapshot_action(GstTxlSampler *self, const gchar *path)
{
  gchar *p = path && *path ? g_strdup(path) : location(self);
  gboolean ok = FALSE;
  if (p && GST_PAD_STREAM_TRYLOCK(self->sinkpad)) {
    ok = self->gen && save_snapshot(self, p, "signal");
    GST_PAD_STREAM_UNLOCK(self->sinkpad);
  } else if (p) {
    GST_WARNING_OBJECT(self, "snapshot: busy generating, try again");
  }
  g_free(p);
  return ok;
}

static gboolean
gst_txl_sampler_sink_query(GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstTxlSampler *self = GST_TXL_SAMPLER(parent);
  GstStructure *st;
  if ((st = txl_parts_query_structure(query, TXL_PARTS_FETCH))) {
    if (self->tok_state)
      gst_structure_set(st, TXL_PART_UPSTREAM, G_TYPE_BYTES, self->tok_state,
                        NULL);
    g_clear_pointer(&self->tok_state, g_bytes_unref);
    return TRUE;
  }
  return gst_pad_query_default(pad, parent, query);
}

/* Feeds the pending context, then samples and pushes the continuation. */
static GstFlowReturn
generate(GstTxlSampler *self)
{
  GError *err = NULL;
  if (self->pending->len > 0 &&
      !txl_generator_feed(self->gen, (const int32_t *)self->pending->data,
                          self->pending->len, &err))
    goto fail;
  if (self->pending->len == 0)
    return GST_FLOW_OK; /* no context at all: nothing to continue */
  g_array_set_size(self->pending, 0);
  GST_OBJECT_LOCK(self);
  gint max = self->max_tokens;
  gchar *stop = g_strdup(self->stop);
  gboolean stop_at_eos = self->stop_at_eos;
  GST_OBJECT_UNLOCK(self);
  GByteArray *text = g_byte_array_new();
  TxlGenerateLimits lim = { max, stop, stop_at_eos };
  txl_generator_continue(self->gen, txl_model_tokenizer(self->model), &lim,
                         text, NULL, NULL, &err);
  g_free(stop);
  if (err) {
    g_byte_array_unref(text);
    goto fail;
  }
  gsize len = text->len;
  if (len == 0) { /* an empty continuation (max-tokens=0, <eos> first) */
    g_byte_array_unref(text);
    return GST_FLOW_OK;
  }
  GstBuffer *buf = gst_buffer_new_wrapped(g_byte_array_free(text, FALSE),
                                          len);
  return gst_pad_push(self->srcpad, buf);

fail:
  GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Generation failed."),
                    ("%s", err->message));
  g_clear_error(&err);
  return GST_FLOW_ERROR;
}

static GstFlowReturn
gst_txl_sampler_chain(GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstTxlSampler *self = GST_TXL_SAMPLER(parent);
  GstMapInfo map;
  /* a torn record is an error, not a silently shorter prompt */
  if (!gst_txl_map_records(GST_ELEMENT(self), buf, &map,
                           TXL_TOKEN_RECORD_SIZE, "token")) {
    gst_buffer_unref(buf);
    return GST_FLOW_ERROR;
  }
  GST_OBJECT_LOCK(self);
  gboolean per_line = self->per_line;
  GST_OBJECT_UNLOCK(self);
  GstFlowReturn ret = GST_FLOW_OK;
  const int n_token = txl_model_config(self->model)->n_token;
  for (gsize at = 0; at + TXL_TOKEN_RECORD_SIZE <= map.size && ret == GST_FLOW_OK;
       at += TXL_TOKEN_RECORD_SIZE) {
    TxlTokenRecord r;
    txl_token_record_read(map.data + at, &r);
    if (r.id < 0 || r.id >= n_token) {
      GST_ELEMENT_ERROR(self, STREAM, DECODE, ("Token id %d is outside the "
                        "vocabulary of %d.", r.id, n_token), (NULL));
      ret = GST_FLOW_ERROR;
      break;
    }
    g_array_append_val(self->pending, r.id);
    self->received++;
    self->dirty = TRUE;
    if (per_line && (r.flags & TXL_RECORD_LINE_END))
      ret = generate(self);
  }
  gst_buffer_unmap(buf, &map);
  gst_buffer_unref(buf);
  return ret;
}

static gboolean
gst_txl_sampler_sink_event(GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstTxlSampler *self = GST_TXL_SAMPLER(parent);
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_CAPS: {
    GstCaps *caps;
    gst_event_parse_caps(event, &caps);
    gboolean ok = self->model &&
                  gst_txl_check_tokens_caps(GST_ELEMENT(self), self->model,
                                            caps, NULL);
    gst_event_unref(event);
    if (!ok)
      return FALSE;
    /* ours go out now, ahead of the segment the default handler forwards */
    GstCaps *out = gst_caps_new_simple("text/x-raw", "format", G_TYPE_STRING,
                                       "utf8", NULL);
    self->caps_sent = gst_pad_push_event(self->srcpad,
                                         gst_event_new_caps(out));
    gst_caps_unref(out);
    return self->caps_sent;
  }
  case GST_EVENT_EOS: {
    GstFlowReturn ret = generate(self);
    if (ret != GST_FLOW_OK && ret != GST_FLOW_FLUSHING)
      GST_DEBUG_OBJECT(self, "generation at EOS: %s", gst_flow_get_name(ret));
    gchar *loc = location(self);
    if (loc && self->gen)
      save_snapshot(self, loc, "eos");
    g_free(loc);
    return gst_pad_event_default(pad, parent, event);
  }
  case GST_EVENT_FLUSH_STOP: {
    g_array_set_size(self->pending, 0);
    GError *err = NULL;
    if (!new_generator(self, &err))
      g_clear_error(&err);
    return gst_pad_event_default(pad, parent, event);
  }
  default:
    return gst_pad_event_default(pad, parent, event);
  }
}

static GstStateChangeReturn
gst_txl_sampler_change_state(GstElement *element, GstStateChange transition)
{
  GstTxlSampler *self = GST_TXL_SAMPLER(element);
  switch (transition) {
  case GST_STATE_CHANGE_READY_TO_PAUSED: {
    GError *err = NULL;
    self->pending = g_array_new(FALSE, FALSE, sizeof(int32_t));
    self->caps_sent = FALSE;
    if (!new_generator(self, &err)) {
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                        ("Invalid sampling settings: %s", err->message),
                        (NULL));
      g_clear_error(&err);
      return GST_STATE_CHANGE_FAILURE;
    }
    self->received = 0;
    self->dirty = FALSE;
    gchar *loc = location(self);
    GST_OBJECT_LOCK(self);
    gboolean restore = self->restore;
    GST_OBJECT_UNLOCK(self);
    if (loc) /* what a writer killed mid-write left beside the file */
      txl_parts_remove_stale(element, loc);
    if (loc && restore && g_file_test(loc, G_FILE_TEST_EXISTS) &&
        !load_snapshot(self, loc, &err)) {
      GST_ELEMENT_ERROR(self, RESOURCE, READ,
                        ("Could not restore the snapshot \"%s\": %s", loc,
                         err->message),
                        ("remove or replace the file, or set restore=false"));
      g_clear_error(&err);
      g_free(loc);
      txl_generator_free(g_steal_pointer(&self->gen));
      g_array_free(g_steal_pointer(&self->pending), TRUE);
      return GST_STATE_CHANGE_FAILURE;
    }
    g_free(loc);
    break;
  }
  default:
    break;
  }
  GstStateChangeReturn ret = gst_txl_element_change_state(
      element, GST_ELEMENT_CLASS(gst_txl_sampler_parent_class), transition,
      &self->model, TRUE);
  switch (transition) {
  case GST_STATE_CHANGE_PAUSED_TO_READY: {
    gchar *loc = location(self);
    if (loc && self->gen && self->dirty)
      save_snapshot(self, loc, "shutdown");
    g_free(loc);
    g_clear_pointer(&self->tok_state, g_bytes_unref);
    txl_generator_free(g_steal_pointer(&self->gen));
    if (self->pending)
      g_array_free(g_steal_pointer(&self->pending), TRUE);
    break;
  }
  default:
    break;
  }
  return ret;
}

#define F(id, field, ...) TXL_PROP(id, GstTxlSampler, field, __VA_ARGS__)
static const TxlPropField prop_fields[] = {
  F(PROP_MODEL, model_path, TXL_STRING("model", "Model", "Path of the txl "
      "model file (shared with the other elements through the model cache; "
      "unset: the bundled model, or the file TXL_MODEL names)",
      NULL, TXL_RW_READY)),
  F(PROP_TEMPERATURE, temperature, TXL_DOUBLE("temperature", "Temperature",
      "Sampling temperature; 0 always takes the most likely token", 0.0,
      100.0, 1.0, TXL_RW_READY)),
  F(PROP_TOP_K, top_k, TXL_INT("top-k", "Top k", "Sample among the k most "
      "likely tokens (0: all)", 0, G_MAXINT, 0, TXL_RW_READY)),
  F(PROP_TOP_P, top_p, TXL_DOUBLE("top-p", "Top p", "Sample within the "
      "smallest set of tokens whose probability reaches p (fraction; 1: all)",
      1e-6, 1.0, 1.0, TXL_RW_READY)),
  F(PROP_SEED, seed, TXL_UINT64("seed", "Seed", "Random seed: the same seed "
      "and input give the same text", 0, G_MAXUINT64, 1, TXL_RW_READY)),
  F(PROP_MAX_TOKENS, max_tokens, TXL_INT("max-tokens", "Max tokens",
      "Tokens generated at most for each continuation (tokens)", 0, 1 << 24,
      200, TXL_RW_PLAYING)),
  F(PROP_STOP, stop, TXL_STRING("stop", "Stop", "Stop a continuation once "
      "its text ends with this string (unset: never)", NULL, TXL_RW_PLAYING)),
  F(PROP_PER_LINE, per_line, TXL_BOOLEAN("per-line", "Per line", "Continue "
      "after every input line (else once, at the end of the input)", FALSE,
      TXL_RW_PLAYING)),
  F(PROP_STOP_AT_EOS, stop_at_eos, TXL_BOOLEAN("stop-at-eos",
      "Stop at end of sequence", "Stop a continuation at the vocabulary's "
      "end-of-sequence token (a word vocabulary's <eos>; byte and BPE "
      "vocabularies have none: use stop=\"\\n\" to stop at a line end)",
      TRUE, TXL_RW_PLAYING)),
  F(PROP_SNAPSHOT_LOCATION, snap_location, TXL_STRING("snapshot-location",
      "Snapshot location", "File for snapshots of the generation (memory, "
      "sampler state, context not yet fed, the tokenizer's state): written "
      "at end of stream, at shutdown and on the snapshot signal; NULL = none",
      NULL, TXL_RW_READY)),
  F(PROP_RESTORE, restore, TXL_BOOLEAN("restore", "Restore", "When the "
      "element starts and snapshot-location exists, continue the generation "
      "saved there", TRUE, TXL_RW_READY)),
};
#undef F

static const TxlPropTable props = {
  .fields = prop_fields, .n = G_N_ELEMENTS(prop_fields),
};

static void
gst_txl_sampler_class_init(GstTxlSamplerClass *klass)
{
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  txl_element_class_init(element_class, &props, &gst_txl_sampler_debug,
      "txlsampler", "txl sampler", "Generator/Text", "Continues a token "
      "stream with text sampled from a Transformer-XL model (temperature, "
      "top-k, top-p, seed)");
  signals[SIGNAL_SNAPSHOT] = txl_parts_action_signal_new(klass, "snapshot",
      G_CALLBACK(gst_txl_sampler_snapshot_action));
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  element_class->change_state = gst_txl_sampler_change_state;
}

static void
gst_txl_sampler_init(GstTxlSampler *self)
{
  txl_props_init(self, &props);
  self->sinkpad = gst_txl_add_pad(GST_ELEMENT(self), &sink_template,
      gst_txl_sampler_chain, gst_txl_sampler_sink_event,
      gst_txl_sampler_sink_query);
  self->srcpad = gst_txl_add_pad(GST_ELEMENT(self), &src_template, NULL,
                                 NULL, NULL);
}
