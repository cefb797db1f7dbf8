/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txljson: txlsink's JSON Lines as buffers on a src pad.
 *
 *   ... ! txlmodel ! txljson ! filesink location=scores.jsonl
 *   ... ! txlsessions ! txljson ! tcpclientsink host=... port=...
 *
 * Every line (and session) is judged and written exactly as txlsink does
 * it: this element holds a txlsink that is in no pipeline, feeds it its
 * buffers and events by calling the sink's own methods, and sends what it
 * writes downstream instead of to a file (gst_txl_sink_set_emit).  So the
 * output is byte for byte txlsink's, the threshold properties are
 * txlsink's (installed here under the same names and passed on), and the
 * pipeline's snapshots keep this element's unfinished lines and baseline
 * as they keep txlsink's (the same snapshot part).  Its txl-anomaly and
 * txl-score messages are posted as this element's, and its line-scored,
 * session-scored and text signals are emitted as this element's, with the
 * same arguments (so txld counts the lines of a pipeline ending in
 * txljson as it counts txlsink's).  The inner sink gets this element's
 * clock and base time, so a line's latency is measured as txlsink's is. */
#include "gsttxlsink.h"
#include "txlprops.h"

#include <string.h>

GST_DEBUG_CATEGORY_STATIC(gst_txl_json_debug);
#define GST_CAT_DEFAULT gst_txl_json_debug

#define GST_TYPE_TXL_JSON (gst_txl_json_get_type())
G_DECLARE_FINAL_TYPE(GstTxlJson, gst_txl_json, GST, TXL_JSON, GstElement)

struct _GstTxlJson {
  GstElement parent;
  GstPad *sinkpad, *srcpad;
  GstTxlSink *inner; /* the judging and the writing */
  GstBus *inner_bus; /* its messages, posted again as ours */
  GString *out;      /* what it wrote during the call in progress */
  GstClockTime pts;  /* of the buffer in progress */
  /* one per inner signal: what relay() emits again, and on whom */
  struct Relay {
    GstTxlJson *self;
    guint signal;
  } relays[GST_TXL_SINK_N_SIGNALS];
};

G_DEFINE_TYPE(GstTxlJson, gst_txl_json, GST_TYPE_ELEMENT)

/* txlsink's signals, emitted again as ours */
static guint signals[GST_TXL_SINK_N_SIGNALS];

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("application/x-ndjson"));

/* txlsink's properties that make no sense here: where it writes */
static const char *const not_passed[] = { "location", "append", NULL };

static gboolean
emit(GstTxlSink *sink, const char *data, gsize len, gpointer user_data)
{
  GstTxlJson *self = user_data;
  g_string_append_len(self->out, data, (gssize)len);
  return TRUE;
}

/* Sends what the inner sink wrote during the last call, as one buffer. */
static GstFlowReturn
flush_out(GstTxlJson *self)
{
  if (self->out->len == 0)
    return GST_FLOW_OK;
  gsize n = self->out->len;
  /* the string becomes the buffer's memory; a new one takes its place */
  GstBuffer *b = gst_buffer_new_wrapped(g_string_free(self->out, FALSE), n);
  self->out = g_string_new(NULL);
  GST_BUFFER_PTS(b) = self->pts;
  return gst_pad_push(self->srcpad, b);
}

/* The inner sink's signal being emitted, emitted again as ours with the
 * same argument (a GstStructure or the GBytes of text), on the streaming
 * thread as its. */
static void
relay(GstTxlSink *sink, gpointer arg, gpointer data)
{
  const struct Relay *r = data;
  (void)sink;
  g_signal_emit(r->self, r->signal, 0, arg);
}

/* The inner sink's element messages and errors, as ours. */
static GstBusSyncReply
inner_message(GstBus *bus, GstMessage *m, gpointer data)
{
  GstTxlJson *self = data;
  GstMessage *again = NULL;
  if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ELEMENT) {
    again = gst_message_new_element(GST_OBJECT(self),
        gst_structure_copy(gst_message_get_structure(m)));
  } else if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR ||
             GST_MESSAGE_TYPE(m) == GST_MESSAGE_WARNING) {
    GError *e = NULL;
    gchar *dbg = NULL;
    gboolean err = GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR;
    if (err)
      gst_message_parse_error(m, &e, &dbg);
    else
      gst_message_parse_warning(m, &e, &dbg);
    again = err ? gst_message_new_error(GST_OBJECT(self), e, dbg)
                : gst_message_new_warning(GST_OBJECT(self), e, dbg);
    g_error_free(e);
    g_free(dbg);
  }
  if (again)
    gst_element_post_message(GST_ELEMENT(self), again);
  gst_message_unref(m);
  return GST_BUS_DROP;
}

static GstFlowReturn
gst_txl_json_chain(GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstTxlJson *self = GST_TXL_JSON(parent);
  self->pts = GST_BUFFER_PTS(buf);
  GstFlowReturn ret =
      GST_BASE_SINK_GET_CLASS(self->inner)->render(GST_BASE_SINK(self->inner),
                                                   buf);
  gst_buffer_unref(buf);
  GstFlowReturn pushed = flush_out(self);
  return ret != GST_FLOW_OK ? ret : pushed;
}

static gboolean
gst_txl_json_sink_event(GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstTxlJson *self = GST_TXL_JSON(parent);
  GstBaseSink *in = GST_BASE_SINK(self->inner);
  if (GST_EVENT_TYPE(event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    gst_event_parse_caps(event, &caps);
    gboolean ok = GST_BASE_SINK_GET_CLASS(in)->set_caps(in, caps);
    gst_event_unref(event);
    if (!ok)
      return FALSE;
    GstCaps *out = gst_static_pad_template_get_caps(&src_template);
    ok = gst_pad_push_event(self->srcpad, gst_event_new_caps(out));
    gst_caps_unref(out);
    return ok;
  }
  /* the sink's handling (segment, lines written at EOS, sessions, the
   * snapshot's hold), then what it wrote, then the event itself */
  GST_BASE_SINK_GET_CLASS(in)->event(in, gst_event_ref(event));
  if (flush_out(self) != GST_FLOW_OK)
    GST_DEBUG_OBJECT(self, "could not send the lines before %s",
                     GST_EVENT_TYPE_NAME(event));
  return gst_pad_event_default(pad, parent, event);
}

/* The pipeline's snapshots ask for txlsink's part: the inner sink's. */
static gboolean
gst_txl_json_sink_query(GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstTxlJson *self = GST_TXL_JSON(parent);
  if (txl_parts_answer(GST_ELEMENT(self->inner), &gst_txl_sink_part, query))
    return TRUE;
  return gst_pad_query_default(pad, parent, query);
}

/* The pipeline's clock, to the inner sink too: its line latency and
 * times read it. */
static gboolean
gst_txl_json_set_clock(GstElement *element, GstClock *clock)
{
  GstTxlJson *self = GST_TXL_JSON(element);
  gst_element_set_clock(GST_ELEMENT(self->inner), clock);
  return GST_ELEMENT_CLASS(gst_txl_json_parent_class)->set_clock(element,
                                                                 clock);
}

static GstStateChangeReturn
gst_txl_json_change_state(GstElement *element, GstStateChange transition)
{
  GstTxlJson *self = GST_TXL_JSON(element);
  GstBaseSink *in = GST_BASE_SINK(self->inner);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED &&
      !GST_BASE_SINK_GET_CLASS(in)->start(in))
    return GST_STATE_CHANGE_FAILURE;
  /* the bin set our base time before this transition */
  if (transition == GST_STATE_CHANGE_PAUSED_TO_PLAYING)
    gst_element_set_base_time(GST_ELEMENT(self->inner),
                              gst_element_get_base_time(element));
  GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_txl_json_parent_class)->change_state(element,
                                                                 transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    GST_BASE_SINK_GET_CLASS(in)->stop(in);
    g_string_truncate(self->out, 0);
  }
  return ret;
}

/* ---- properties: txlsink's, passed on ---------------------------------- */

static void
gst_txl_json_set_property(GObject *object, guint id, const GValue *value,
                          GParamSpec *pspec)
{
  g_object_set_property(G_OBJECT(GST_TXL_JSON(object)->inner), pspec->name,
                        value);
}

static void
gst_txl_json_get_property(GObject *object, guint id, GValue *value,
                          GParamSpec *pspec)
{
  g_object_get_property(G_OBJECT(GST_TXL_JSON(object)->inner), pspec->name,
                        value);
}

/* A copy of one of txlsink's own property specs (the kinds it has). */
static GParamSpec *
copy_spec(GParamSpec *p)
{
  const char *n = g_param_spec_get_name(p), *nick = g_param_spec_get_nick(p),
             *blurb = g_param_spec_get_blurb(p);
  GParamFlags f = (p->flags & (G_PARAM_READWRITE | GST_PARAM_MUTABLE_READY |
                               GST_PARAM_MUTABLE_PLAYING)) |
                  G_PARAM_STATIC_STRINGS;
  if (G_IS_PARAM_SPEC_DOUBLE(p)) {
    GParamSpecDouble *d = G_PARAM_SPEC_DOUBLE(p);
    return g_param_spec_double(n, nick, blurb, d->minimum, d->maximum,
                               d->default_value, f);
  }
  if (G_IS_PARAM_SPEC_INT(p)) {
    GParamSpecInt *d = G_PARAM_SPEC_INT(p);
    return g_param_spec_int(n, nick, blurb, d->minimum, d->maximum,
                            d->default_value, f);
  }
  if (G_IS_PARAM_SPEC_BOOLEAN(p))
    return g_param_spec_boolean(n, nick, blurb,
                                G_PARAM_SPEC_BOOLEAN(p)->default_value, f);
  if (G_IS_PARAM_SPEC_ENUM(p))
    return g_param_spec_enum(n, nick, blurb, p->value_type,
                             G_PARAM_SPEC_ENUM(p)->default_value, f);
  if (G_IS_PARAM_SPEC_STRING(p))
    return g_param_spec_string(n, nick, blurb,
                               G_PARAM_SPEC_STRING(p)->default_value, f);
  return NULL;
}

static void
install_sink_properties(GObjectClass *oc)
{
  GObjectClass *sink_class = g_type_class_ref(GST_TYPE_TXL_SINK);
  guint n, id = 1;
  GParamSpec **specs = g_object_class_list_properties(sink_class, &n);
  for (guint i = 0; i < n; i++) {
    if (specs[i]->owner_type != GST_TYPE_TXL_SINK ||
        g_strv_contains(not_passed, specs[i]->name))
      continue;
    GParamSpec *copy = copy_spec(specs[i]);
    if (copy)
      g_object_class_install_property(oc, id++, copy);
  }
  g_free(specs);
  g_type_class_unref(sink_class);
}

/* ---- GObject ------------------------------------------------------------- */

static void
gst_txl_json_finalize(GObject *object)
{
  GstTxlJson *self = GST_TXL_JSON(object);
  gst_object_unref(self->inner);
  gst_object_unref(self->inner_bus);
  g_string_free(self->out, TRUE);
  G_OBJECT_CLASS(gst_txl_json_parent_class)->finalize(object);
}

static void
gst_txl_json_init(GstTxlJson *self)
{
  self->sinkpad = gst_txl_add_pad(GST_ELEMENT(self), &sink_template,
      gst_txl_json_chain, gst_txl_json_sink_event, gst_txl_json_sink_query);
  self->srcpad = gst_txl_add_pad(GST_ELEMENT(self), &src_template, NULL,
                                 NULL, NULL);
  gst_pad_use_fixed_caps(self->srcpad);
  self->out = g_string_new(NULL);
  self->inner = g_object_new(GST_TYPE_TXL_SINK, NULL);
  gst_object_ref_sink(self->inner);
  gst_txl_sink_set_emit(self->inner, emit, self);
  for (guint i = 0; i < GST_TXL_SINK_N_SIGNALS; i++) {
    self->relays[i] = (struct Relay){ self, signals[i] };
    g_signal_connect(self->inner, g_signal_name(signals[i]),
                     G_CALLBACK(relay), &self->relays[i]);
  }
  self->inner_bus = gst_bus_new();
  gst_bus_set_sync_handler(self->inner_bus, inner_message, self, NULL);
  gst_element_set_bus(GST_ELEMENT(self->inner), self->inner_bus);
}

static void
gst_txl_json_class_init(GstTxlJsonClass *klass)
{
  GObjectClass *oc = G_OBJECT_CLASS(klass);
  GstElementClass *ec = GST_ELEMENT_CLASS(klass);
  oc->set_property = gst_txl_json_set_property;
  oc->get_property = gst_txl_json_get_property;
  oc->finalize = gst_txl_json_finalize;
  install_sink_properties(oc);
  /* as txlsink's (gsttxlsink.c documents their arguments) */
  gst_txl_sink_install_signals(klass, signals);
  ec->change_state = gst_txl_json_change_state;
  ec->set_clock = gst_txl_json_set_clock;
  gst_element_class_add_static_pad_template(ec, &sink_template);
  gst_element_class_add_static_pad_template(ec, &src_template);
  /* no table: the properties are the inner txlsink's */
  txl_element_class_init(ec, NULL, &gst_txl_json_debug, "txljson",
      "txl JSON Lines", "Formatter/Text", "txlsink's judged JSON Lines as "
      "buffers, for any GStreamer sink (filesink, tcpclientsink, appsink)");
}
