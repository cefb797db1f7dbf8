/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsink: per-line scores as JSON Lines.
 *
 * gst-launch-1.0 ... ! txlmodel model=m.gguf ! txlsink location=out.jsonl
 *
 * Gathers the score records of each input line and writes one JSON object
 * per line (to location, or to standard output when it is unset):
 *
 *   {"line": 3, "tokens": 41, "bytes": 42, "norm_bytes": 40, "nll": 1.9,
 *    "ppl": 6.7, "bpb": 2.8, "worst": 2.8, "anomaly": -1.2, "flag": false,
 *    "text": "..."}
 *
 * nll is the mean negative log-likelihood in nats per scored token, ppl its
 * exponential, bpb the line's total NLL in bits per normalised byte (the
 * bytes its tokens stand for after normalisation, its line end included),
 * worst the line's worst part (lib/anomaly/lines.h: never below bpb), anomaly =
 * worst - threshold and flag = anomaly > 0.  A line with a non-finite
 * token score has "nonfinite": N, null numbers and is flagged.  The
 * numbers are those of `txl score` on the same text: txlmodel and
 * txlsessions send each line's scores as a GstTxlLineMeta, which wins
 * over the records' own sums (records alone count raw bytes).  The line's
 * text and byte count come from the GstTxlTextMeta that txltokenizer
 * attaches and txlmodel forwards; without it, bytes is the sum of the
 * tokens' byte lengths and text is null.
 *
 * Each line also emits "line-scored" with a GstStructure, and a flagged
 * line posts a "txl-anomaly" element message.
 *
 * Its unfinished lines and anomaly baseline travel in txlmodel's
 * snapshots (txlparts.h); with append=true a resumed run adds to the
 * output file instead of replacing it. */
#include "gsttxlsink.h"
#include "txl_formats.h"
#include "txl_text.h"
#include "txlprops.h"

#include <errno.h>
#include <math.h>
#include <unistd.h>

GST_DEBUG_CATEGORY_STATIC(gst_txl_sink_debug);
#define GST_CAT_DEFAULT gst_txl_sink_debug

#define DEFAULT_THRESHOLD 4.0
#define DEFAULT_Z 4.0
#define DEFAULT_QUANTILE 0.999
#define DEFAULT_WINDOW 1000
#define DEFAULT_WARMUP 200

static GType
gst_txl_threshold_mode_get_type(void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { TXL_THRESHOLD_FIXED, "bits per byte above \"threshold\"", "fixed" },
    { TXL_THRESHOLD_MAD, "robust z-score (median/MAD of the window) above "
      "\"z-threshold\"", "mad" },
    { TXL_THRESHOLD_QUANTILE, "bits per byte above the \"quantile\" of the "
      "window", "quantile" },
    { TXL_THRESHOLD_ZSCORE, "fixed z-score (bpb - \"mean\") / \"stddev\" above "
      "\"z-threshold\"", "zscore" },
    { TXL_THRESHOLD_STREAM, "worst part above the label-free threshold of "
      "the stream's recent lines (as txl score)", "stream" },
    { 0, NULL, NULL },
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstTxlThresholdMode",
                                                    values));
  return type;
}
enum { PROP_0, PROP_LOCATION, PROP_THRESHOLD, PROP_MODE, PROP_Z, PROP_QUANTILE,
       PROP_WINDOW, PROP_WARMUP, PROP_POST_SCORES, PROP_MEAN, PROP_STDDEV,
       PROP_APPEND };
static guint signals[GST_TXL_SINK_N_SIGNALS];

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(TXL_SCORES_CAPS_NAME "; text/x-raw, format = (string) utf8"));

G_DEFINE_TYPE(GstTxlSink, gst_txl_sink, GST_TYPE_BASE_SINK)

/* txlsink's signals; txljson has the same ones (it emits its inner
 * sink's again as its own). */
void
gst_txl_sink_install_signals(gpointer klass,
                             guint ids[GST_TXL_SINK_N_SIGNALS])
{
  /**
   * GstTxlSink::line-scored:
   * @sink: the element
   * @scores: a "txl-line" structure: line, tokens, bytes (gint64/guint64),
   *   nll, ppl, bpb, anomaly (gdouble, NaN for a line with no scored
   *   token), flag (gboolean), text (string or NULL)
   *
   * Emitted from the streaming thread once per input line, in order.
   */
  ids[GST_TXL_SINK_LINE_SCORED] = g_signal_new("line-scored",
      G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
      G_TYPE_NONE, 1, GST_TYPE_STRUCTURE | G_SIGNAL_TYPE_STATIC_SCOPE);

  /**
   * GstTxlSink::text:
   * @sink: the element
   * @text: (GBytes) generated text, as it arrives (generation mode)
   */
  ids[GST_TXL_SINK_TEXT] = g_signal_new("text",
      G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
      G_TYPE_NONE, 1, G_TYPE_BYTES);

  /**
   * GstTxlSink::session-scored:
   * @sink: the element
   * @session: the "txl-session" structure txlsessions sent (key, reason,
   *   first-line, last-line, lines, tokens, bytes, nll, score, score-kind,
   *   max-line, max-line-sum, max-token, end-nll, threshold, level, flag),
   *   and json: the session's JSON object as written, without its newline
   *
   * Emitted from the streaming thread for each ended session, after its
   * JSON line is written.
   */
  ids[GST_TXL_SINK_SESSION_SCORED] = g_signal_new("session-scored",
      G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
      G_TYPE_NONE, 1, GST_TYPE_STRUCTURE | G_SIGNAL_TYPE_STATIC_SCOPE);
}

/* ---- lines ----------------------------------------------------------------- */

void
gst_txl_sink_line_free(gpointer p)
{
  Line *l = p;
  g_string_free(l->text, TRUE);
  g_free(l);
}

/* The entry of a line not yet written, created in order; NULL for a line
 * already written. */
static Line *
line_get(GstTxlSink *self, gint64 line)
{
  if (line <= self->written_upto)
    return NULL;
  /* records name the newest line (the tail), the text the oldest (near
   * the head): look at the tail, then from the head, so that a long queue
   * (txlsessions sends many lines at once) costs no quadratic walk */
  Line *t = g_queue_peek_tail(&self->lines);
  if (t && t->line == line)
    return t;
  GList *it = NULL;
  if (t && t->line > line) {
    for (it = self->lines.head; it; it = it->next) {
      Line *l = it->data;
      if (l->line == line)
        return l;
      if (l->line > line)
        break;
    }
  }
  Line *l = g_new0(Line, 1);
  l->line = line;
  l->meta_ref = NAN;
  l->text = g_string_new(NULL);
  txl_line_acc_init(&l->acc);
  if (it)
    g_queue_insert_before(&self->lines, it, l);
  else
    g_queue_push_tail(&self->lines, l);
  return l;
}

static void
clock_times(GstTxlSink *self, GstClockTime *running, GstClockTime *stream)
{
  GstBaseSink *bs = GST_BASE_SINK(self);
  *running = *stream = GST_CLOCK_TIME_NONE;
  if (GST_CLOCK_TIME_IS_VALID(self->last_pts) &&
      bs->segment.format == GST_FORMAT_TIME) {
    *running = gst_segment_to_running_time(&bs->segment, GST_FORMAT_TIME,
                                           self->last_pts);
    *stream = gst_segment_to_stream_time(&bs->segment, GST_FORMAT_TIME,
                                         self->last_pts);
    return;
  }
  /* untimed data (a file): when the line was scored, on the pipeline clock */
  GstClock *clock = gst_element_get_clock(GST_ELEMENT(self));
  if (clock) {
    GstClockTime now = gst_clock_get_time(clock);
    GstClockTime base = gst_element_get_base_time(GST_ELEMENT(self));
    if (GST_STATE(self) == GST_STATE_PLAYING && now >= base)
      *running = now - base;
    gst_object_unref(clock);
  }
}

/* The scores every line structure carries (the txl-line signal, the
 * txl-score and txl-anomaly messages); each adds its own fields. */
static GstStructure *
line_message(const char *name, gint64 line, double bpb, double worst,
             double nll, double anomaly)
{
  return gst_structure_new(name, "line", G_TYPE_INT64, line,
                           "bpb", G_TYPE_DOUBLE, bpb,
                           "worst", G_TYPE_DOUBLE, worst,
                           "nll", G_TYPE_DOUBLE, nll,
                           "anomaly", G_TYPE_DOUBLE, anomaly, NULL);
}

/* Posts the line's element message m with its running and stream time,
 * then fields (may be NULL). */
static void
post_line(GstTxlSink *self, GstStructure *m, const GstStructure *fields)
{
  GstClockTime running, stream;
  clock_times(self, &running, &stream);
  gst_structure_set(m, "running-time", GST_TYPE_CLOCK_TIME, running,
                    "stream-time", GST_TYPE_CLOCK_TIME, stream, NULL);
  if (fields)
    gst_structure_set(m, "fields", GST_TYPE_STRUCTURE, fields, NULL);
  gst_element_post_message(GST_ELEMENT(self),
                           gst_message_new_element(GST_OBJECT(self), m));
}

/* How long ago the data that completed the line arrived, on the pipeline
 * clock: a live source's timestamps (do-timestamp) against now; NONE for
 * untimed data or without a clock. */
static GstClockTime
line_latency(GstTxlSink *self)
{
  GstBaseSink *bs = GST_BASE_SINK(self);
  if (!GST_CLOCK_TIME_IS_VALID(self->last_pts) ||
      bs->segment.format != GST_FORMAT_TIME)
    return GST_CLOCK_TIME_NONE;
  GstClockTime arrived = gst_segment_to_running_time(
      &bs->segment, GST_FORMAT_TIME, self->last_pts);
  GstClock *clock = gst_element_get_clock(GST_ELEMENT(self));
  if (!clock || !GST_CLOCK_TIME_IS_VALID(arrived)) {
    if (clock)
      gst_object_unref(clock);
    return GST_CLOCK_TIME_NONE;
  }
  /* no base time yet (the pipeline on its way to PLAYING): no "now" */
  GstClockTime base = gst_element_get_base_time(GST_ELEMENT(self));
  GstClockTime abs_now = gst_clock_get_time(clock);
  gst_object_unref(clock);
  if (base == 0 || !GST_CLOCK_TIME_IS_VALID(base) || abs_now < base)
    return GST_CLOCK_TIME_NONE;
  GstClockTime now = abs_now - base;
  return now >= arrived ? now - arrived : 0;
}

/* The output, emptied first unless the stream continues a snapshot or
 * append is set (see truncate_pending). */
static FILE *
out_file(GstTxlSink *self)
{
  if (self->truncate_pending && self->out) {
    self->truncate_pending = FALSE;
    if (ftruncate(fileno(self->out), 0) != 0)
      GST_WARNING_OBJECT(self, "could not empty the output: %s",
                         g_strerror(errno));
  }
  return self->out;
}

/* Writes one piece of output: to the file, or (inside txljson) to the
 * emit hook, which sends it downstream.  FALSE when it could not. */
static gboolean
put_out(GstTxlSink *self, const char *data, gsize len)
{
  if (self->emit)
    return self->emit(self, data, len, self->emit_data);
  return fwrite(data, 1, len, out_file(self)) == len && fflush(self->out) == 0;
}

void
gst_txl_sink_set_emit(GstTxlSink *sink, GstTxlSinkEmit emit, gpointer data)
{
  sink->emit = emit;
  sink->emit_data = data;
}

/* A line's anomaly (the worst part above the cut (fixed, quantile,
 * stream) or a z-score (mad, zscore); NaN while the baseline warms up),
 * whether it is warm-up (stream), and its flag; the baseline learns from
 * it. */
static gboolean
judge(GstTxlSink *self, const Line *l, const TxlLineScore *sc,
      gdouble threshold, double *anomaly, gboolean *warm)
{
  gboolean scored = sc->tokens > 0;
  double worst = txl_line_worst(sc); /* what is judged (lib/anomaly/lines.h) */
  double cut = 0.0;
  if (self->mode == TXL_THRESHOLD_STREAM) {
    /* the rule of txl score (txl_baseline_judge), which also keeps the
     * window; lines scored with the model file's weights while learning
     * are not the stream's scores */
    double thr = 0;
    gboolean stream_flag = FALSE;
    /* learning: relative to the model file's cost (lib/anomaly/reference.h) */
    double judged = txl_line_judged(sc, l->has_meta ? l->meta_ref : NAN);
    *warm = (l->meta_flags & TXL_LINE_WARMUP) != 0;
    if (!*warm && scored && txl_baseline_threshold(self->baseline, &thr))
      *anomaly = judged - thr;
    if (!*warm && scored)
      *warm = !txl_baseline_judge(self->baseline, judged, &stream_flag);
    /* new weights after this line: their own scores set the threshold
     * once there are enough of them */
    if (l->meta_flags & TXL_LINE_NEW_WEIGHTS)
      txl_baseline_restart(self->baseline);
    return stream_flag || (scored && !isfinite(worst));
  } else if (scored && self->mode == TXL_THRESHOLD_ZSCORE) {
    GST_OBJECT_LOCK(self);
    *anomaly = (worst - self->mean) / self->stddev;
    cut = self->z_threshold;
    GST_OBJECT_UNLOCK(self);
  } else if (scored && !self->baseline) {
    *anomaly = worst - threshold;
  } else if (scored) {
    double v;
    if (txl_baseline_score(self->baseline, worst, &v))
      *anomaly = v;
    if (self->mode == TXL_THRESHOLD_MAD)
      cut = self->z_threshold;
  }
  /* a non-finite score is flagged in every mode, warm-up included: it
   * must never pass for a normal line */
  gboolean flag = (!isnan(*anomaly) && *anomaly > cut) ||
                  (scored && !isfinite(worst));
  /* flagged lines stay out of the baseline: a burst of anomalies must not
   * raise the bar for the next one */
  if (scored && self->baseline && !flag)
    txl_baseline_add(self->baseline, worst);
  return flag;
}

/* A record line's fields (lib/text/record.h) as a structure, NULL for a
 * plain line. */
static GstStructure *
record_fields(const char *line, gsize header_len)
{
  if (header_len == 0)
    return NULL;
  GstStructure *s = gst_structure_new_empty("txl-fields");
  gsize pos = 0, kl, vl;
  const char *k, *v;
  while (txl_record_next_field(line, header_len, &pos, &k, &kl, &v, &vl)) {
    gchar *key = g_strndup(k, kl), *val = g_utf8_make_valid(v, (gssize)vl);
    gst_structure_set(s, key, G_TYPE_STRING, val, NULL);
    g_free(key);
    g_free(val);
  }
  return s;
}

static gboolean
write_line(GstTxlSink *self, Line *l, gdouble threshold)
{
  /* a record line's header is not text: its fields go out on their own */
  gsize hdr = self->have_text ? txl_record_header_len(l->text->str,
                                                      l->text->len)
                              : 0;
  const char *msg = l->text->str + hdr;
  gsize msg_len = l->text->len - hdr;
  guint64 bytes = self->have_text ? l->bytes - hdr : l->tok_bytes;
  const TxlLineScore *sc = l->has_meta ? &l->meta : &l->acc.s;
  double mean = txl_line_mean_nll(sc);
  double bpb = txl_line_bpb(sc);
  double worst = txl_line_worst(sc); /* what is judged (lib/anomaly/lines.h) */
  double anomaly = NAN;
  gboolean warm = FALSE;
  gboolean rule_flag = judge(self, l, sc, threshold, &anomaly, &warm);
  gboolean by_stream = self->mode == TXL_THRESHOLD_STREAM;
  /* by the stream's rule, a burst of one kind of line is flagged once
   * (lib/anomaly/repeats.h; the whole line, a record's fields too, as
   * txl score reads it) */
  gboolean flag = rule_flag, repeat = FALSE;
  if (by_stream && self->have_text)
    flag = txl_repeats_report(&self->repeats, l->text->str, l->text->len, sc,
                              rule_flag, &repeat);

  GString *o = g_string_new(NULL);
  g_string_append_printf(o, "{\"line\": %" G_GINT64_FORMAT ", \"tokens\": %"
                         G_GINT64_FORMAT ", \"bytes\": %" G_GUINT64_FORMAT
                         ", ", l->line, sc->tokens, bytes);
  txl_line_append_json(o, sc); /* as txl score writes them */
  g_string_append(o, ", \"anomaly\": ");
  txl_json_append_double(o, "%.6f", anomaly);
  g_string_append_printf(o, ", \"flag\": %s", flag ? "true" : "false");
  if (by_stream)
    g_string_append_printf(o, ", \"warmup\": %s", warm ? "true" : "false");
  if (repeat)
    g_string_append(o, ", \"repeat\": true");
  if (by_stream && l->has_meta)
    txl_line_append_ref_json(o, sc, l->meta_ref); /* as txl score */
  if (sc->nonfinite)
    g_string_append_printf(o, ", \"nonfinite\": %u", sc->nonfinite);
  if (hdr) {
    g_string_append(o, ", \"fields\": ");
    txl_record_append_json(o, l->text->str, hdr);
  }
  g_string_append(o, ", \"text\": ");
  if (self->have_text)
    txl_json_append_string(o, msg, msg_len);
  else
    g_string_append(o, "null");
  g_string_append(o, "}\n");
  gboolean ok = put_out(self, o->str, o->len);
  if (!ok) {
    g_string_free(o, TRUE);
    GST_OBJECT_LOCK(self);
    gchar *where = g_strdup(self->location ? self->location : "stdout");
    GST_OBJECT_UNLOCK(self);
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE,
                      ("Could not write the scores to \"%s\".", where),
                      ("%s", g_strerror(errno)));
    g_free(where);
    return FALSE;
  }

  gchar *text = self->have_text ? g_utf8_make_valid(msg, (gssize)msg_len)
                                : NULL;
  GstStructure *fields = record_fields(l->text->str, hdr);
  GstStructure *s = line_message("txl-line", l->line, bpb, worst, mean,
                                  anomaly);
  gst_structure_set(s, "tokens", G_TYPE_INT64, sc->tokens,
      "bytes", G_TYPE_UINT64, bytes,
      "norm-bytes", G_TYPE_UINT64, sc->norm_bytes,
      "ppl", G_TYPE_DOUBLE, exp(mean),
      "nonfinite", G_TYPE_UINT, sc->nonfinite,
      "flag", G_TYPE_BOOLEAN, flag,
      "repeat", G_TYPE_BOOLEAN, repeat,
      "warmup", G_TYPE_BOOLEAN, warm,
      "text", G_TYPE_STRING, text,
      "latency", GST_TYPE_CLOCK_TIME, line_latency(self), NULL);
  if (fields)
    gst_structure_set(s, "fields", GST_TYPE_STRUCTURE, fields, NULL);
  /* the handlers get the line as written too (txld's output): one writer */
  g_string_truncate(o, o->len - 1); /* its '\n' */
  gst_structure_set(s, "json", G_TYPE_STRING, o->str, NULL);
  g_string_free(o, TRUE);
  g_signal_emit(self, signals[GST_TXL_SINK_LINE_SCORED], 0, s);
  gst_structure_free(s);
  GST_OBJECT_LOCK(self);
  gboolean post_scores = self->post_scores;
  GST_OBJECT_UNLOCK(self);
  if (post_scores) {
    GstStructure *m = line_message("txl-score", l->line, bpb, worst, mean,
                                   anomaly);
    gst_structure_set(m, "tokens", G_TYPE_INT64, sc->tokens,
                      "flag", G_TYPE_BOOLEAN, flag, NULL);
    post_line(self, m, NULL);
  }
  if (flag) {
    GST_INFO_OBJECT(self, "line %" G_GINT64_FORMAT ": worst part %.3f "
                    "bits/byte", l->line, worst);
    GstStructure *m = line_message("txl-anomaly", l->line, bpb, worst, mean,
                                   anomaly);
    gst_structure_set(m, "text", G_TYPE_STRING, text, NULL);
    post_line(self, m, fields);
  }
  g_free(text);
  if (fields)
    gst_structure_free(fields);
  return TRUE;
}

/* Writes the complete lines at the head of the queue; all of them when
 * the stream is over. */
static gboolean
write_ready(GstTxlSink *self, gboolean all)
{
  GST_OBJECT_LOCK(self);
  gdouble threshold = self->threshold;
  GST_OBJECT_UNLOCK(self);
  Line *l;
  while ((l = g_queue_peek_head(&self->lines)) &&
         (all || l->closed || l->line <= self->closed_upto)) {
    g_queue_pop_head(&self->lines);
    self->written_upto = l->line;
    gboolean ok = write_line(self, l, threshold);
    gst_txl_sink_line_free(l);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

static void
reset_lines(GstTxlSink *self)
{
  self->records = 0;
  self->held = FALSE;
  g_queue_clear_full(&self->lines, gst_txl_sink_line_free);
  self->written_upto = 0;
  self->closed_upto = 0;
  self->text_line = 1;
  self->have_text = FALSE;
  txl_repeats_init(&self->repeats);
  self->last_pts = GST_CLOCK_TIME_NONE;
}

static gboolean
gst_txl_sink_query(GstBaseSink *bs, GstQuery *query)
{
  if (txl_parts_answer(GST_ELEMENT(bs), &gst_txl_sink_part, query))
    return TRUE;
  return GST_BASE_SINK_CLASS(gst_txl_sink_parent_class)->query(bs, query);
}

/* ---- GstBaseSink ------------------------------------------------------------ */

static gboolean
gst_txl_sink_set_caps(GstBaseSink *bs, GstCaps *caps)
{
  GstTxlSink *self = GST_TXL_SINK(bs);
  const GstStructure *st = gst_caps_get_structure(caps, 0);
  self->text_mode = gst_structure_has_name(st, "text/x-raw");
  gboolean per_line = FALSE;
  gst_structure_get_boolean(st, "per-line", &per_line);
  self->per_line = per_line && !self->text_mode;
  /* The line threshold `txl eval` measured for this model: the default
   * for threshold-mode fixed unless the application set its own. */
  gdouble cal = 0.0;
  gst_structure_get_double(st, "line-threshold", &cal);
  GST_OBJECT_LOCK(self);
  if (!self->threshold_set) {
    self->threshold = cal > 0 ? cal : DEFAULT_THRESHOLD;
    if (cal > 0)
      GST_INFO_OBJECT(self, "line threshold %g bits per byte from the "
                      "model's calibration", cal);
  }
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

/* Generation mode: the text goes out as it comes, and to the signal. */
static GstFlowReturn
render_text(GstTxlSink *self, const guint8 *data, gsize len)
{
  if (!put_out(self, (const char *)data, len)) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Could not write the text."),
                      ("%s", g_strerror(errno)));
    return GST_FLOW_ERROR;
  }
  GBytes *b = g_bytes_new(data, len);
  g_signal_emit(self, signals[GST_TXL_SINK_TEXT], 0, b);
  g_bytes_unref(b);
  return GST_FLOW_OK;
}

static GstFlowReturn render_scores(GstTxlSink *self, GstBuffer *buf);

static GstFlowReturn
gst_txl_sink_render(GstBaseSink *bs, GstBuffer *buf)
{
  GstTxlSink *self = GST_TXL_SINK(bs);
  g_rec_mutex_lock(&self->state_lock);
  GstFlowReturn ret = render_scores(self, buf);
  g_rec_mutex_unlock(&self->state_lock);
  return ret;
}

/* A line's scores as the scoring element computed them (GstTxlLineMeta,
 * lib/anomaly/lines.h, with the normalised bytes the records do not carry).  In
 * per-line mode (txlsessions upstream) they are all there is: a line's
 * totals come whole, in line order. */
static gboolean
take_line_meta(GstBuffer *buf, GstMeta **meta, gpointer data)
{
  GstTxlSink *self = data;
  if ((*meta)->info->api != GST_TXL_LINE_META_API_TYPE)
    return TRUE;
  const GstTxlLineMeta *m = (const GstTxlLineMeta *)*meta;
  Line *l = line_get(self, m->line);
  if (!l)
    return TRUE;
  l->has_meta = TRUE;
  l->meta = m->score;
  l->meta_flags = m->flags;
  l->meta_ref = m->ref_nll;
  if (!self->per_line)
    return TRUE; /* the records gave the bytes and close the line */
  l->tok_bytes += m->bytes;
  if (!self->have_text) {
    l->closed = TRUE;
    self->closed_upto = MAX(self->closed_upto, m->line);
  }
  return TRUE;
}

/* A session ended upstream (txlsessions' "txl-session" event): one JSON
 * line, after every line written so far, and the session-scored signal. */
static gboolean
write_session(GstTxlSink *self, const GstStructure *s)
{
  gint64 last = 0;
  gst_structure_get_int64(s, "last-line", &last);
  /* the event comes after every line up to the session's last */
  self->closed_upto = MAX(self->closed_upto, last);
  if (!write_ready(self, FALSE))
    return FALSE;
  GString *o = gst_txl_session_json(s);
  if (!put_out(self, o->str, o->len)) {
    g_string_free(o, TRUE);
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE,
                      ("Could not write the session scores."),
                      ("%s", g_strerror(errno)));
    return FALSE;
  }
  /* the handlers get the line too (txld's output, alerts): one writer */
  GstStructure *e = gst_structure_copy(s);
  g_string_truncate(o, o->len - 1); /* its '\n' */
  gst_structure_set(e, "json", G_TYPE_STRING, o->str, NULL);
  g_string_free(o, TRUE);
  g_signal_emit(self, signals[GST_TXL_SINK_SESSION_SCORED], 0, e);
  gst_structure_free(e);
  return TRUE;
}

static GstFlowReturn
render_scores(GstTxlSink *self, GstBuffer *buf)
{
  GstMapInfo map;
  /* text is any bytes: a record of one byte */
  if (!gst_txl_map_records(GST_ELEMENT(self), buf, &map,
                           self->text_mode ? 1 : TXL_SCORE_RECORD_SIZE,
                           self->text_mode ? "text" : "score"))
    return GST_FLOW_ERROR;
  if (self->text_mode) {
    GstFlowReturn ret = render_text(self, map.data, map.size);
    gst_buffer_unmap(buf, &map);
    return ret;
  }
  if (GST_BUFFER_PTS_IS_VALID(buf))
    self->last_pts = GST_BUFFER_PTS(buf);
  self->records += map.size / TXL_SCORE_RECORD_SIZE;
  GstTxlTextMeta *meta = gst_buffer_get_txl_text_meta(buf);
  if (meta)
    self->have_text = TRUE;

  /* the records first: the text of a buffer never runs ahead of them */
  for (gsize off = 0; off < map.size; off += TXL_SCORE_RECORD_SIZE) {
    TxlScoreRecord r;
    txl_score_record_read(map.data + off, &r);
    Line *l = line_get(self, r.line);
    if (!l) {
      GST_DEBUG_OBJECT(self, "a score for line %" G_GINT64_FORMAT
                       ", already written", r.line);
      continue;
    }
    /* only the stream's first token has no score: a NaN elsewhere is a
     * broken one, counted and flagged by the line (lib/anomaly/lines.h) */
    if (!(r.flags & TXL_RECORD_FIRST))
      txl_line_acc_add(&l->acc, -(double)r.logprob, r.byte_len);
    l->tok_bytes += r.byte_len;
    if (!self->have_text) {
      /* without text: a later line's token or a line end closes a line */
      self->closed_upto = MAX(self->closed_upto, r.line - 1);
      if (r.flags & TXL_RECORD_LINE_END)
        l->closed = TRUE;
    }
  }
  gst_buffer_unmap(buf, &map);
  /* before the text: a line's meta comes with its last record */
  gst_buffer_foreach_meta(buf, take_line_meta, self);
  if (self->per_line) {
    /* txlsessions sends no records: its buffers and session events are
     * what a snapshot's count of delivered items refers to */
    self->records++;
  }

  if (meta && meta->bytes) {
    gsize n;
    const char *p = g_bytes_get_data(meta->bytes, &n);
    /* with text, a line is complete once its line end has come: txlmodel
     * forwards text only up to the end of the last token it scored */
    while (n > 0) {
      const char *nl = memchr(p, '\n', n);
      gsize len = nl ? (gsize)(nl - p) + 1 : n;
      Line *l = line_get(self, self->text_line);
      if (l) {
        l->bytes += len;
        gboolean rec = (l->text->len ? (guchar)l->text->str[0]
                                     : (guchar)p[0]) == TXL_RECORD_RS;
        gsize cap = rec ? TEXT_CAP_RECORD : TEXT_CAP;
        gsize keep = MIN(len - (nl ? 1 : 0), cap - MIN(cap, l->text->len));
        g_string_append_len(l->text, p, keep);
        if (nl)
          l->closed = TRUE;
      }
      if (nl)
        self->text_line++;
      p += len;
      n -= len;
      /* a line just completed goes out now: the queue's head stays next
       * to the text, however many lines one buffer closes */
      if (nl && !write_ready(self, FALSE))
        return GST_FLOW_ERROR;
    }
  }
  return write_ready(self, FALSE) ? GST_FLOW_OK : GST_FLOW_ERROR;
}

static gboolean
gst_txl_sink_event(GstBaseSink *bs, GstEvent *event)
{
  GstTxlSink *self = GST_TXL_SINK(bs);
  g_rec_mutex_lock(&self->state_lock);
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_EOS:
    /* held: the unfinished lines are in txlmodel's snapshot */
    write_ready(self, !self->held);
    break;
  case GST_EVENT_STREAM_START:
    /* line numbers start again at 1 */
    write_ready(self, TRUE);
    reset_lines(self);
    break;
  case GST_EVENT_FLUSH_STOP:
    reset_lines(self);
    break;
  case GST_EVENT_CUSTOM_DOWNSTREAM:
    if (gst_event_has_name(event, TXL_PARTS_HOLD))
      self->held = TRUE;
    else if (gst_event_has_name(event, "txl-session")) {
      self->records++; /* counted as txlsessions counts it */
      if (self->out || self->emit)
        write_session(self, gst_event_get_structure(event));
    }
    break;
  default:
    break;
  }
  g_rec_mutex_unlock(&self->state_lock);
  return GST_BASE_SINK_CLASS(gst_txl_sink_parent_class)->event(bs, event);
}

static gboolean
gst_txl_sink_start(GstBaseSink *bs)
{
  GstTxlSink *self = GST_TXL_SINK(bs);
  GST_OBJECT_LOCK(self);
  gchar *location = g_strdup(self->location);
  GST_OBJECT_UNLOCK(self);
  GST_OBJECT_LOCK(self);
  gboolean append = self->append;
  GST_OBJECT_UNLOCK(self);
  g_rec_mutex_lock(&self->state_lock);
  g_clear_pointer(&self->stopped, g_bytes_unref);
  g_rec_mutex_unlock(&self->state_lock);
  if (self->emit) {
    self->out = NULL; /* inside txljson: the output goes downstream */
  } else if (location && *location) {
    /* "a": checks the file now, empties nothing yet */
    self->out = fopen(location, "a");
    self->truncate_pending = !append;
    if (!self->out) {
      GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE,
                        ("Could not open \"%s\" for writing.", location),
                        ("%s", g_strerror(errno)));
      g_free(location);
      return FALSE;
    }
  } else {
    self->out = stdout;
  }
  g_free(location);
  reset_lines(self);
  GError *err = NULL;
  self->baseline = gst_txl_sink_new_baseline(self, &err);
  if (err) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                      ("Invalid threshold settings: %s", err->message),
                      (NULL));
    g_clear_error(&err);
    return FALSE;
  }
  return TRUE;
}

TxlBaseline *
gst_txl_sink_new_baseline(GstTxlSink *self, GError **error)
{
  GST_OBJECT_LOCK(self);
  GstTxlThresholdMode mode = self->mode;
  gint window = self->window, warmup = MIN(self->warmup, self->window);
  gdouble q = self->quantile;
  GST_OBJECT_UNLOCK(self);
  if (mode == TXL_THRESHOLD_STREAM)
    /* the label-free rule's own window and warm-up, as txl score */
    return txl_baseline_new(TXL_BASELINE_MAD, TXL_STREAM_RULE_WINDOW,
                            TXL_STREAM_RULE_WARMUP, 0, error);
  if (mode != TXL_THRESHOLD_MAD && mode != TXL_THRESHOLD_QUANTILE)
    return NULL;
  return txl_baseline_new(mode == TXL_THRESHOLD_MAD ? TXL_BASELINE_MAD
                                                    : TXL_BASELINE_QUANTILE,
                          window, warmup, q, error);
}

static gboolean
gst_txl_sink_stop(GstBaseSink *bs)
{
  GstTxlSink *self = GST_TXL_SINK(bs);
  g_rec_mutex_lock(&self->state_lock);
  /* txlmodel snapshots at shutdown after this element has stopped: it
   * finds the state here */
  g_clear_pointer(&self->stopped, g_bytes_unref);
  if (!self->text_mode) {
    self->stopped = gst_txl_sink_save_state(self);
    self->stopped_records = self->records;
  }
  reset_lines(self);
  txl_baseline_free(self->baseline);
  self->baseline = NULL;
  g_rec_mutex_unlock(&self->state_lock);
  if (self->out && self->out != stdout) {
    out_file(self); /* nothing written: replaced all the same */
    if (fclose(self->out) != 0)
      GST_ELEMENT_WARNING(self, RESOURCE, CLOSE,
                          ("Could not close the output file."),
                          ("%s", g_strerror(errno)));
  } else if (self->out) {
    fflush(self->out);
  }
  self->out = NULL;
  return TRUE;
}

/* ---- GObject ------------------------------------------------------------- */

#define F(id, field, ...) TXL_PROP(id, GstTxlSink, field, __VA_ARGS__)
static const TxlPropField prop_fields[] = {
  TXL_PROP_UPTO(PROP_LOCATION, GstTxlSink, location, GST_STATE_READY,
      TXL_STRING("location", "Location",
          "File the JSON Lines go to (unset: standard output)", NULL, TXL_RW_READY)),
  F(PROP_THRESHOLD, threshold, TXL_DOUBLE("threshold", "Threshold",
      "A line whose cost exceeds this many bits per byte is flagged as an "
      "anomaly (threshold-mode fixed). Unset: the line threshold the model "
      "file's calibration carries (txl eval), else 4", 0.0, G_MAXDOUBLE,
      DEFAULT_THRESHOLD, TXL_RW_PLAYING)),
  F(PROP_MODE, mode, TXL_ENUM("threshold-mode", "Threshold mode",
      "stream: the worst part above the label-free threshold of the last "
      "1000 lines (docs/learning.md; after 50 lines, \"warmup\" in the "
      "JSON); fixed: bits per byte above \"threshold\" (chosen when "
      "\"threshold\" is set and this is not); zscore: (bpb - \"mean\") / "
      "\"stddev\" above \"z-threshold\"; mad: robust z-score over the last "
      "\"window\" lines above \"z-threshold\"; quantile: bits per byte "
      "above the \"quantile\" of the last \"window\" lines (both after "
      "\"warmup\" lines)", gst_txl_threshold_mode_get_type,
      TXL_THRESHOLD_STREAM, TXL_RW_READY)),
  F(PROP_Z, z_threshold, TXL_DOUBLE("z-threshold", "Z threshold",
      "threshold-mode mad: flag lines whose robust z-score exceeds this "
      "(standard deviations)", 0.0, 1000.0, DEFAULT_Z, TXL_RW_PLAYING)),
  F(PROP_QUANTILE, quantile, TXL_DOUBLE("quantile", "Quantile",
      "threshold-mode quantile: flag lines costlier than this quantile of "
      "the window (fraction, exclusive range 0..1)", 1e-6, 1.0 - 1e-6,
      DEFAULT_QUANTILE, TXL_RW_READY)),
  F(PROP_WINDOW, window, TXL_INT("window", "Window",
      "Lines the mad and quantile baselines keep (lines)", 2, 1 << 24,
      DEFAULT_WINDOW, TXL_RW_READY)),
  F(PROP_MEAN, mean, TXL_DOUBLE("mean", "Mean", "threshold-mode zscore: the "
      "typical cost of a line (bits per byte), e.g. measured on validation "
      "data", 0.0, G_MAXDOUBLE, 0.0, TXL_RW_PLAYING)),
  F(PROP_APPEND, append, TXL_BOOLEAN("append", "Append",
      "Add to the location's file instead of replacing it. A stream that "
      "txlmodel restored from a snapshot always adds: its earlier lines are "
      "in the file already", FALSE, TXL_RW_READY)),
  F(PROP_STDDEV, stddev, TXL_DOUBLE("stddev", "Standard deviation",
      "threshold-mode zscore: the spread of a line's cost (bits per byte, "
      "> 0)", 1e-9, G_MAXDOUBLE, 1.0, TXL_RW_PLAYING)),
  F(PROP_POST_SCORES, post_scores, TXL_BOOLEAN("post-scores", "Post scores",
      "Post a \"txl-score\" element message for every line (line, tokens, "
      "bpb, nll, anomaly, flag, running-time, stream-time); flagged lines "
      "always post \"txl-anomaly\"", FALSE, TXL_RW_PLAYING)),
  F(PROP_WARMUP, warmup, TXL_INT("warmup", "Warm-up",
      "Lines the mad and quantile baselines see before flagging any (lines; "
      "at most \"window\")", 1, 1 << 24, DEFAULT_WARMUP, TXL_RW_READY)),
};
#undef F

/* the application's threshold, not the model's calibration */
static void
threshold_chosen(GObject *object, guint id)
{
  GstTxlSink *self = GST_TXL_SINK(object);
  if (id == PROP_MODE)
    self->mode_set = TRUE;
  if (id != PROP_THRESHOLD)
    return;
  self->threshold_set = TRUE;
  /* a threshold given, and no threshold-mode: the fixed one it is for */
  if (!self->mode_set)
    self->mode = TXL_THRESHOLD_FIXED;
}

/* What the sink holds besides its properties' strings. */
static void
release(GObject *object)
{
  GstTxlSink *self = GST_TXL_SINK(object);
  g_queue_clear_full(&self->lines, gst_txl_sink_line_free);
  g_clear_pointer(&self->stopped, g_bytes_unref);
  g_rec_mutex_clear(&self->state_lock);
}

static const TxlPropTable props = {
  .fields = prop_fields, .n = G_N_ELEMENTS(prop_fields),
  .changed = threshold_chosen,
  .finalize = release,
};

static void
gst_txl_sink_class_init(GstTxlSinkClass *klass)
{
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseSinkClass *bs_class = GST_BASE_SINK_CLASS(klass);

  txl_element_class_init(element_class, &props, &gst_txl_sink_debug,
      "txlsink", "txl score sink", "Sink/Analyzer/Text",
      "Writes per-line language-model scores (NLL, perplexity, bits per "
      "byte, anomaly flag) as JSON Lines, or generated text as is; emits "
      "line-scored and text signals; posts txl-anomaly element messages for "
      "flagged lines and, with post-scores, txl-score for every line");

  gst_txl_sink_install_signals(klass, signals);

  gst_element_class_add_static_pad_template(element_class, &sink_template);

  bs_class->render = gst_txl_sink_render;
  bs_class->set_caps = gst_txl_sink_set_caps;
  bs_class->event = gst_txl_sink_event;
  bs_class->start = gst_txl_sink_start;
  bs_class->stop = gst_txl_sink_stop;
  bs_class->query = gst_txl_sink_query;
}

static void
gst_txl_sink_init(GstTxlSink *self)
{
  txl_props_init(self, &props);
  g_queue_init(&self->lines);
  g_rec_mutex_init(&self->state_lock);
  self->text_line = 1;
  self->last_pts = GST_CLOCK_TIME_NONE;
  /* scores are metadata: nothing to gain from waiting for the clock */
  gst_base_sink_set_sync(GST_BASE_SINK(self), FALSE);
}
