/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsessions: interleaved sessions, each scored in its own stream.
 *
 * gst-launch-1.0 filesrc location=hdfs.log ! txltokenizer model=m.gguf !
 *     txlsessions model=m.gguf session-key="blk_-?[0-9]+"
 *     session-threshold=0.5 ! txlsink location=out.jsonl
 *
 * A thin element over TxlSessions (lib/anomaly/sessions.c): every input line goes,
 * with its tokens, to the session whose key the regex finds in the line's
 * text (GstTxlTextMeta from txltokenizer; without it, the decoded tokens),
 * and is scored in that session's own recurrent memory, exactly as
 * `txl eval` scores it.  Sessions end at the end of the stream, when idle
 * (session-idle-lines) or when evicted (least recently used) under
 * max-sessions or max-session-memory; each ended session posts a
 * "txl-session" element message and sends a "txl-session" event
 * downstream, where txlsink writes it as a JSON line.
 *
 * Lines complete out of order (a line is scored when its session's segment
 * fills, with flush-on-newline at once, or when its session ends); they go
 * out in line order, each as a GstTxlLineMeta on a score buffer with no
 * records (caps field per-line=true) together with its text, so txlsink
 * writes per-line JSON and anomaly messages as behind txlmodel.
 *
 * Why an element of its own rather than a mode of txlmodel: its output is
 * per line, not per token (TxlSessions reports line and session totals),
 * in an order it must restore, and txlmodel's latency machinery does not
 * apply to many streams swapped through one worker (see
 * docs/gstreamer.md).  What it shares with txlmodel (stream options, pads,
 * start and restore, the text passed through, snapshots) is
 * GstTxlScorerBase's; its own section of the snapshots is
 * gsttxlsessions_snap.c's, and learning on the stream (learn=true, the
 * lines given to the learner as they are scored) gsttxlsessions_learn.c's. */
#include "gsttxlsessions.h"
#include "txl_text.h"
#include "txlprops.h"

#include <math.h>
#include <string.h>
#include <time.h>

GST_DEBUG_CATEGORY(gst_txl_sessions_debug);
#define GST_CAT_DEFAULT gst_txl_sessions_debug

#define DEFAULT_KEY "blk_-?[0-9]+"
#define DEFAULT_MEMORY (G_GUINT64_CONSTANT(4) << 30)

enum {
  PROP_0,
  PROP_SESSION_KEY,
  PROP_SESSION_FIELD,
  PROP_SESSION_KEY_GROUP,
  PROP_MAX_SESSIONS,
  PROP_MAX_SESSION_MEMORY,
  PROP_SESSION_IDLE_LINES,
  PROP_SESSION_SCORE,
  PROP_SESSION_THRESHOLD,
  PROP_SESSION_END_MARKER,
  PROP_SESSION_TIME_FORMAT,
  PROP_SESSION_IDLE_AFTER,
  PROP_SESSION_OPEN_THRESHOLDS,
  PROP_OPEN_SESSIONS,
  PROP_LEARN,
  PROP_LEARN_WARMUP,
  PROP_LEARN_MODEL,
  PROP_LEARN_ROUNDS,
  PROP_LEARN_WARMUP_SECONDS,
};

static GType
gst_txl_session_score_get_type(void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { TXL_SESSION_SCORE_MAX_LINE, "highest line mean NLL (nats/token)",
      "max-line" },
    { TXL_SESSION_SCORE_MAX_LINE_SUM, "highest line total NLL (nats)",
      "max-line-sum" },
    { TXL_SESSION_SCORE_MAX_TOKEN, "highest single-token NLL", "max-token" },
    { TXL_SESSION_SCORE_MEAN, "mean NLL per token of the session", "mean" },
    { 0, NULL, NULL },
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstTxlSessionScore",
                                                    values));
  return type;
}

static const char *
score_name(TxlSessionScore k)
{
  switch (k) {
  case TXL_SESSION_SCORE_MAX_LINE: return "max-line";
  case TXL_SESSION_SCORE_MAX_LINE_SUM: return "max-line-sum";
  case TXL_SESSION_SCORE_MAX_TOKEN: return "max-token";
  default: return "mean";
  }
}

static const char *
reason_name(TxlSessionEnd r)
{
  switch (r) {
  case TXL_SESSION_END_IDLE: return "idle";
  case TXL_SESSION_END_EVICTED: return "evicted";
  case TXL_SESSION_END_OPEN: return "open";
  default: return "ended";
  }
}

G_DEFINE_TYPE(GstTxlSessions, gst_txl_sessions, GST_TYPE_TXL_SCORER_BASE)

/* ---- callbacks from TxlSessions ------------------------------------------ */

void
gst_txl_sessions_on_line(const TxlSessionLine *l, gpointer data)
{
  GstTxlSessions *self = data;
  gint64 i = l->line - self->sl_seq0;
  if (i < 0 || i >= (gint64)self->sl->len) {
    self->failed = TRUE;
    g_return_if_reached();
  }
  SLine *x = &g_array_index(self->sl, SLine, i);
  x->done = TRUE;
  x->bytes = l->bytes;
  x->s.tokens = l->tokens;
  x->s.norm_bytes = l->norm_bytes;
  x->s.nll = l->nll;
  x->s.max_token = l->max_token;
  x->s.window = l->window;
  x->s.nonfinite = l->nonfinite;
  gst_txl_sessions_learn_line(self, x, l->key, l->line);
}

void
gst_txl_sessions_on_session(const TxlSessionResult *r, gpointer data)
{
  GstTxlSessions *self = data;
  Span *sp = g_hash_table_lookup(self->spans, r->key);
  gint64 first = sp ? sp->first : 0, last = sp ? sp->last : 0;
  /* the live rule: a session still open (at the end of the stream) or
   * evicted is compared with the threshold for its length when
   * session-open-thresholds is set */
  gdouble thr = self->thr;
  /* without a threshold given, the running rule: judged against the
   * sessions that ended before, flagged or not, as txl eval judges against
   * all its validation sessions: anomalies up to 5% of them sit above the
   * 95th percentile and do not move it, and a kind of session that keeps
   * coming becomes normal rather than flagged for good
   * (docs/notes/2026-11-27-session-window.md) */
  gboolean warm = FALSE;
  if (self->recent) {
    warm = !txl_baseline_session_threshold(self->recent, &thr);
    if (warm)
      thr = 0;
  }
  if ((r->reason == TXL_SESSION_END_OPEN ||
       r->reason == TXL_SESSION_END_EVICTED) && self->open_thr->len > 0)
    thr = g_array_index(self->open_thr, gdouble,
                        MIN((guint64)MAX(r->lines, 1), self->open_thr->len) - 1);
  /* a non-finite score (broken weights, overflow) is flagged whatever
   * the threshold: it must never pass for a normal session */
  gboolean flag = (thr > 0 && r->score > thr) || !isfinite(r->score) ||
                  r->nonfinite > 0;
  if (self->recent && r->nonfinite == 0)
    txl_baseline_add(self->recent, r->score); /* a non-finite one is not */
  /* and a session far shorter than the stream's: its lines may all be
   * normal, the anomaly is what is missing (lib/anomaly/baseline.h) */
  double bar = 0;
  if (self->lengths) {
    if (warm || !txl_baseline_short_session_bar(self->lengths, &bar))
      bar = 0;
    txl_baseline_add(self->lengths, (double)r->lines);
  }
  gboolean is_short = bar > 0 && (double)r->lines < bar;
  flag = flag || is_short;
  /* how far past its bars: above 1 exactly when flagged, so sorting by it
   * puts what was flagged first (docs/notes/2026-11-29-session-level.md);
   * a session with non-finite costs is flagged with no number to rank */
  gdouble level = r->nonfinite > 0 ? NAN
                  : txl_session_level(r->score, thr, r->lines, bar);
  if (B(self)->learning)
    gst_txl_learn_session_end(B(self)->learning, r->key, flag);
  GstStructure *s = gst_structure_new("txl-session",
      "key", G_TYPE_STRING, r->key,
      "reason", G_TYPE_STRING, reason_name(r->reason),
      "first-line", G_TYPE_INT64, first,
      "last-line", G_TYPE_INT64, last,
      "lines", G_TYPE_INT64, r->lines,
      "tokens", G_TYPE_INT64, r->tokens,
      "bytes", G_TYPE_UINT64, (guint64)r->bytes,
      "nll", G_TYPE_DOUBLE, r->nll,
      "score", G_TYPE_DOUBLE, r->score,
      "score-kind", G_TYPE_STRING, score_name(self->kind),
      "max-line", G_TYPE_DOUBLE, r->max_line_mean,
      "max-line-sum", G_TYPE_DOUBLE, r->max_line_sum,
      "max-token", G_TYPE_DOUBLE, r->max_token,
      "end-nll", G_TYPE_DOUBLE, r->end_nll,
      "threshold", G_TYPE_DOUBLE, thr,
      "level", G_TYPE_DOUBLE, level,
      "nonfinite", G_TYPE_INT64, r->nonfinite,
      "flag", G_TYPE_BOOLEAN, flag, NULL);
  if (self->recent)
    gst_structure_set(s, "warmup", G_TYPE_BOOLEAN, warm, "short",
                      G_TYPE_BOOLEAN, is_short, NULL);
  if (sp)
    g_hash_table_remove(self->spans, r->key);
  /* an evicted session that comes back starts with an empty memory, and
   * scores as a new one: say so once, it costs detection quality */
  if (r->reason == TXL_SESSION_END_EVICTED && !self->warned_evicted) {
    self->warned_evicted = TRUE;
    GST_OBJECT_LOCK(self);
    guint64 bound = self->max_memory;
    guint most = self->max_sessions, open = self->open_sessions;
    GST_OBJECT_UNLOCK(self);
    GST_ELEMENT_WARNING(self, RESOURCE, NO_SPACE_LEFT,
        ("sessions are being evicted: more are open than max-sessions or "
         "max-session-memory allow"),
        ("session %s was ended as \"evicted\" (least recently used) with "
         "%" G_GINT64_FORMAT " sessions open; if it comes back it starts "
         "with an empty memory. Raise max-session-memory (now %"
         G_GUINT64_FORMAT " bytes) or max-sessions (now %u) if this log "
         "keeps this many sessions open", r->key,
         (gint64)open, bound, most));
  }
  GST_DEBUG_OBJECT(self, "session %s %s: %" G_GINT64_FORMAT " lines, score "
                   "%.4f%s", r->key, reason_name(r->reason), r->lines,
                   r->score, flag ? " (flagged)" : "");
  gst_element_post_message(GST_ELEMENT(self),
      gst_message_new_element(GST_OBJECT(self), gst_structure_copy(s)));
  Ended *e = g_new(Ended, 1);
  e->last_seq = r->last_line;
  e->s = s;
  g_queue_push_tail(&self->ended, e);
}

/* ---- streams --------------------------------------------------------------- */

/* "3,7.5,10" -> doubles; FALSE on anything else (an empty string: none) */
static gboolean
parse_list(const gchar *str, GArray *out)
{
  g_array_set_size(out, 0);
  if (!str || !*str)
    return TRUE;
  gchar **parts = g_strsplit(str, ",", -1);
  gboolean ok = TRUE;
  for (int i = 0; parts[i] && ok; i++) {
    gchar *t = g_strstrip(parts[i]), *end = NULL;
    gdouble v = g_ascii_strtod(t, &end);
    ok = *t && end && !*end && v >= 0 && isfinite(v);
    if (ok)
      g_array_append_val(out, v);
  }
  g_strfreev(parts);
  return ok;
}

static void
free_stream(GstTxlScorerBase *base)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  g_clear_pointer(&self->sessions, txl_sessions_free);
  g_clear_pointer(&self->sl, g_array_unref);
  g_clear_pointer(&self->ids, g_array_unref);
  g_clear_pointer(&self->spans, g_hash_table_unref);
  g_clear_pointer(&self->done_lines, g_array_unref);
  g_clear_pointer(&self->idle_after, g_array_unref);
  g_clear_pointer(&self->open_thr, g_array_unref);
  g_clear_pointer(&self->recent, txl_baseline_free);
  g_clear_pointer(&self->lengths, txl_baseline_free);
  g_clear_pointer(&self->tfmt, g_free);
  g_clear_pointer(&self->opts_key, g_free);
  g_queue_clear_full(&self->ended, gst_txl_sessions_ended_free);
}

enum { SET_KEY = 1, SET_SCORE = 2, SET_THRESHOLD = 4, SET_END_MARKER = 8 };

void
gst_txl_sessions_note_state(GstTxlScorerBase *base)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  guint64 b = self->sessions ? txl_sessions_bytes(self->sessions) : 0;
  guint n = self->sessions ? txl_sessions_count(self->sessions) : 0;
  GST_OBJECT_LOCK(self);
  base->state_bytes = b;
  self->open_sessions = n;
  GST_OBJECT_UNLOCK(self);
  gst_txl_learn_publish(B(self)->learning, &self->learn);
}

static gboolean
new_stream(GstTxlScorerBase *base, GError **error)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  /* What `txl eval` measured with this model, where the application did
   * not say otherwise: the same key, score kind, end marker and threshold
   * flag the same sessions as the evaluation (docs/anomaly.md). */
  const TxlCalibration *cal = txl_model_calibration(base->model);
  if (cal && !cal->sessions)
    cal = NULL;
  GST_OBJECT_LOCK(self);
  if (!(self->user_set & SET_KEY)) {
    g_free(self->key);
    self->key = g_strdup(cal ? cal->session_key : DEFAULT_KEY);
    self->key_group = cal ? cal->session_key_group : 0;
  }
  if (!(self->user_set & SET_SCORE))
    self->score = cal ? cal->session_score : TXL_SESSION_SCORE_MEAN;
  if (!(self->user_set & SET_THRESHOLD))
    self->threshold = cal ? cal->session_threshold : 0.0;
  if (!(self->user_set & SET_END_MARKER))
    self->end_marker = cal ? cal->session_end_marker : FALSE;
  gchar *key = g_strdup(self->key);
  o.key_group = self->key_group;
  gboolean field_ok = TRUE;
  if (self->key_field && *self->key_field) {
    /* a record line's field (lib/text/record.h): its value, between the
     * separator before "name=" and the next one */
    for (const char *c = self->key_field; *c; c++)
      field_ok &= g_ascii_isalnum(*c) || *c == '_' || *c == '.' || *c == '-';
    g_free(key);
    key = g_strdup_printf("(?<=[\\x1e\\x1f])%s=\\K[^\\x1e\\x1f]+",
                          self->key_field);
    o.key_group = 0;
  }
  o.segment = base->segment;
  o.stream.mem_len = base->mem_len;
  o.stream.clamp_len = base->clamp_len;
  o.stream.same_length = base->same_length;
  o.flush_lines = base->flush_on_newline;
  o.prime = TRUE;
  o.score_end = self->end_marker;
  o.max_bytes = self->max_memory;
  o.max_sessions = self->max_sessions;
  o.idle_lines = self->idle_lines;
  o.score = self->score;
  /* learning changes the weights under open sessions: each is judged by
   * the weights in use when it ends, as the sessions beside it are */
  o.rescore = self->learn.on;
  self->thr = self->threshold;
  self->kind = self->score;
  gboolean running = !(self->user_set & SET_THRESHOLD) &&
                     !(cal && cal->session_threshold > 0);
  self->idle_after = g_array_new(FALSE, FALSE, sizeof(gdouble));
  self->open_thr = g_array_new(FALSE, FALSE, sizeof(gdouble));
  gboolean lists_ok = parse_list(self->idle_after_s, self->idle_after) &&
                      parse_list(self->open_thr_s, self->open_thr);
  self->tfmt = self->time_format && *self->time_format
                   ? g_strdup(self->time_format) : NULL;
  GST_OBJECT_UNLOCK(self);
  if (!field_ok || !lists_ok) {
    g_free(key);
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID, !field_ok
        ? "session-field takes a field name: letters, digits, '_', '.' "
          "and '-'"
        : "session-idle-after and session-open-thresholds take "
          "comma-separated non-negative numbers");
    return FALSE;
  }
  self->now = 0;
  if (running) {
    self->recent = txl_baseline_new(TXL_BASELINE_MAD, TXL_SESSION_RULE_WINDOW,
                                    TXL_SESSION_RULE_WARMUP, 0, NULL);
    self->lengths = txl_baseline_new(TXL_BASELINE_MAD,
        TXL_SESSION_RULE_WINDOW, TXL_SESSION_RULE_WARMUP, 0, NULL);
  }
  if (self->idle_after->len > 0) {
    o.idle_after = (const double *)self->idle_after->data;
    o.n_idle_after = self->idle_after->len;
    /* sessions still open at the end of the stream are unfinished */
    o.finish_open = TRUE;
  }
  o.key_regex = key;
  self->sessions = txl_sessions_new(base->model, &o, gst_txl_sessions_on_line,
                                    gst_txl_sessions_on_session, self, error);
  /* kept for a restore, which must build its sessions the same way */
  self->opts = o;
  self->opts_key = key;
  if (!self->sessions || !gst_txl_sessions_learn_start(self, error))
    return FALSE;
  gst_txl_sessions_note_state(base);
  self->sl = gst_txl_sessions_sl_new(0);
  self->sl_head = 0;
  self->sl_seq0 = 1;
  self->ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
  self->cur_line = 0;
  self->cur_tok_bytes = 0;
  self->line_start = 0;
  self->spans = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                      g_free);
  self->done_lines = g_array_new(FALSE, FALSE, sizeof(GstTxlDoneLine));
  self->failed = FALSE;
  self->warned_evicted = FALSE;
  return TRUE;
}

/* The line being assembled is complete: find its text and key, push it. */
static gboolean
push_line(GstTxlSessions *self, gboolean at_end, GError **error)
{
  if (self->cur_line <= 0)
    return TRUE;
  const GstTxlText *t = &B(self)->text;
  const char *text = NULL;
  gsize len = 0, bytes = 0;
  guint64 text_end = t->frontier;
  GByteArray *decoded = NULL;
  if (t->started && self->line_start >= t->offset &&
      self->line_start <= t->offset + t->data->len) {
    gsize at = (gsize)(self->line_start - t->offset);
    const char *p = (const char *)t->data->data + at;
    gsize avail = t->data->len - at;
    const char *nl = memchr(p, '\n', avail);
    if (nl || at_end) {
      text = p;
      len = nl ? (gsize)(nl - p) : avail;
      bytes = nl ? len + 1 : len;
      text_end = self->line_start + bytes;
    }
  }
  if (!text) {
    /* no text meta: the tokens' own text (normalised fields decode to
     * their placeholders) */
    decoded = g_byte_array_new();
    txl_tokenizer_decode(txl_model_tokenizer(B(self)->model),
                         (const int32_t *)self->ids->data, self->ids->len,
                         decoded, NULL);
    text = (const char *)decoded->data;
    len = decoded->len;
    if (len && text[len - 1] == '\n')
      len--;
    bytes = self->cur_tok_bytes;
  }
  char *key = txl_sessions_key(self->sessions, text ? text : "", len);
  const char *k = key ? key : "";
  if (!decoded) /* a record line's header (record.h) was not scored */
    bytes -= MIN(bytes, txl_record_header_len(text, len));
  Span *sp = g_hash_table_lookup(self->spans, k);
  if (!sp) {
    sp = g_new(Span, 1);
    sp->first = self->cur_line;
    g_hash_table_insert(self->spans, g_strdup(k), sp);
  }
  sp->last = self->cur_line;
  if (self->tfmt && self->idle_after->len > 0) {
    /* the clock: the line's timestamp, else the last one read */
    char buf[128];
    gsize n = MIN(len, sizeof buf - 1);
    memcpy(buf, text ? text : "", text ? n : 0);
    buf[text ? n : 0] = '\0';
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!decoded && strptime(buf, self->tfmt, &tm))
      self->now = MAX(self->now, (gdouble)timegm(&tm));
    if (!txl_sessions_set_time(self->sessions, self->now, error)) {
      g_free(key);
      if (decoded)
        g_byte_array_unref(decoded);
      return FALSE;
    }
  }
  SLine x = { .line = self->cur_line, .text_end = text_end,
              .ref_nll = NAN };
  gst_txl_sessions_learn_keep(self, &x);
  g_array_append_val(self->sl, x);
  gint64 seq = txl_sessions_push_tokens(self->sessions, k,
                                        (const int32_t *)self->ids->data,
                                        self->ids->len, bytes, error);
  gst_txl_sessions_note_state(B(self));
  g_free(key);
  if (decoded)
    g_byte_array_unref(decoded);
  g_array_set_size(self->ids, 0);
  self->cur_line = 0;
  self->cur_tok_bytes = 0;
  if (text_end > self->line_start)
    self->line_start = text_end;
  if (seq < 0)
    return FALSE;
  g_warn_if_fail(seq == self->sl_seq0 + (gint64)self->sl->len - 1);
  return !self->failed && gst_txl_sessions_learn_run(self, error);
}

/* Sends the lines scored so far in line order, with their text, then the
 * sessions whose last line has gone out. */
static GstFlowReturn
push_out(GstTxlSessions *self, gboolean all)
{
  GstTxlText *text = &B(self)->text;
  /* Nothing counts as sent until the push succeeded: lines and text a
   * failed push (flushing at shutdown) could not deliver stay here, so the
   * shutdown snapshot keeps them and the next run sends them. */
  guint head = self->sl_head;
  guint64 frontier = text->frontier;
  g_array_set_size(self->done_lines, 0);
  while (head < self->sl->len) {
    SLine *x = &g_array_index(self->sl, SLine, head);
    if (!x->done)
      break;
    GstTxlDoneLine d = { x->line, x->bytes, x->s, x->flags, x->ref_nll };
    g_array_append_val(self->done_lines, d);
    frontier = MAX(frontier, x->text_end);
    head++;
  }
  gsize ntext = gst_txl_text_ready(text, frontier, all);
  GstFlowReturn ret = GST_FLOW_OK;
  if (self->done_lines->len || ntext) {
    GstBuffer *buf = gst_buffer_new();
    for (guint i = 0; i < self->done_lines->len; i++) {
      const GstTxlDoneLine *d =
          &g_array_index(self->done_lines, GstTxlDoneLine, i);
      GstTxlLineMeta *m =
          gst_buffer_add_txl_line_meta(buf, d->line, d->bytes, &d->s);
      m->flags = d->flags;
      m->ref_nll = d->ref_nll;
    }
    g_array_set_size(self->done_lines, 0);
    gst_txl_text_attach(text, buf, ntext);
    GST_BUFFER_PTS(buf) = B(self)->last_pts;
    GST_BUFFER_DTS(buf) = B(self)->last_dts;
    ret = gst_pad_push(B(self)->srcpad, buf);
    if (ret != GST_FLOW_OK)
      return ret;
    /* what txlsink's state accounts for, for a consistent snapshot */
    B(self)->out_count++;
    gst_txl_text_consume(text, ntext);
  }
  self->sl_head = head;
  text->frontier = frontier;
  gint64 sent_seq = self->sl_seq0 + self->sl_head; /* first not sent */
  if (self->sl_head > 4096 && self->sl_head * 2 > self->sl->len) {
    g_array_remove_range(self->sl, 0, self->sl_head);
    self->sl_seq0 += self->sl_head;
    self->sl_head = 0;
  }
  /* ended sessions whose lines have all gone out, in the order they ended;
   * one that cannot be sent stays, with those after it */
  for (GList *it = self->ended.head; it;) {
    GList *next = it->next;
    Ended *e = it->data;
    if (all || e->last_seq < sent_seq) {
      GstEvent *ev = gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
                                          gst_structure_copy(e->s));
      if (gst_pad_push_event(B(self)->srcpad, ev))
        B(self)->out_count++;
      else if (GST_PAD_IS_FLUSHING(B(self)->srcpad))
        break; /* shutting down: kept for the snapshot */
      /* else refused downstream, as any event may be: not kept */
      g_queue_delete_link(&self->ended, it);
      gst_structure_free(e->s);
      g_free(e);
    }
    it = next;
  }
  return ret;
}

/* End of a stream: the last line, every open session ended and reported,
 * everything out. */
static GstFlowReturn
finish(GstTxlScorerBase *base)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  if (!self->sessions)
    return GST_FLOW_OK;
  GError *err = NULL;
  if (!push_line(self, TRUE, &err) ||
      !txl_sessions_finish(self->sessions, &err) ||
      !gst_txl_sessions_learn_run(self, &err))
    return gst_txl_scorer_base_score_error(base, err);
  gst_txl_sessions_note_state(base);
  return push_out(self, TRUE);
}

static GstFlowReturn
push_scored(GstTxlScorerBase *base)
{
  return push_out(GST_TXL_SESSIONS(base), FALSE);
}

/* A line is complete: into its session, and what is ready goes out
 * unless downstream is flushing (*held). */
static GstFlowReturn
end_line(GstTxlSessions *self, gboolean *held, gboolean *ok, GError **err)
{
  GstFlowReturn ret = GST_FLOW_OK;
  *ok = push_line(self, FALSE, err);
  if (*ok && !*held)
    ret = push_out(self, FALSE);
  if (ret == GST_FLOW_FLUSHING)
    *held = TRUE, ret = GST_FLOW_OK;
  return ret;
}

/* The lines of a buffer's tokens go to their sessions.  What is ready goes
 * out after every line, not every buffer: the order of lines and session
 * results downstream then depends on the lines only, not on how the input
 * was cut into buffers (a stream resumed from a snapshot is cut
 * elsewhere). */
static GstFlowReturn
score(GstTxlScorerBase *base, const guint8 *records, gsize n)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  if (base->text_first)
    self->line_start = base->text.frontier = base->text.offset;
  GError *err = NULL;
  gboolean ok = TRUE;
  base->in_tokens += n;
  GstFlowReturn ret = GST_FLOW_OK;
  /* Downstream flushing (shutting down, a seek) refuses what is scored:
   * it stays in the element's state (the next push or the snapshot takes
   * it) and the rest of the buffer is still taken in, so that every token
   * txltokenizer delivered is here, as its count of delivered tokens says
   * and the snapshot's consistency check expects. */
  gboolean held = FALSE;
  for (gsize i = 0; i < n && ok && ret == GST_FLOW_OK; i++) {
    TxlTokenRecord t;
    txl_token_record_read(records + i * TXL_TOKEN_RECORD_SIZE, &t);
    /* a token of a later line ends a line that had no line-end flag */
    if (self->cur_line > 0 && t.line != self->cur_line)
      ret = end_line(self, &held, &ok, &err);
    if (!ok || ret != GST_FLOW_OK)
      break;
    self->cur_line = t.line;
    self->cur_tok_bytes += t.byte_len;
    g_array_append_val(self->ids, t.id);
    if (t.flags & TXL_RECORD_LINE_END)
      ret = end_line(self, &held, &ok, &err);
  }
  if (!ok)
    return gst_txl_scorer_base_score_error(base, err);
  if (ret == GST_FLOW_OK && !held)
    ret = push_out(self, FALSE);
  if (ret == GST_FLOW_FLUSHING)
    held = TRUE, ret = GST_FLOW_OK;
  /* held: the base takes no snapshot now */
  return ret == GST_FLOW_OK && held ? GST_FLOW_FLUSHING : ret;
}

/* A new stream (STREAM_START): the old stream's sessions end first. */
static gboolean
stream_start(GstTxlScorerBase *base, GError **error)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  if ((!self->sessions || txl_sessions_lines(self->sessions) == 0) &&
      self->cur_line <= 0)
    return TRUE;
  GstFlowReturn ret = finish(base);
  if (ret != GST_FLOW_OK)
    GST_DEBUG_OBJECT(self, "ending the last stream: %s",
                     gst_flow_get_name(ret));
  return gst_txl_scorer_base_new_stream(base, error);
}

static gboolean
prepare(GstTxlScorerBase *base)
{
  GST_OBJECT_LOCK(base);
  gboolean no_key = !GST_TXL_SESSIONS(base)->key ||
                    !*GST_TXL_SESSIONS(base)->key;
  GST_OBJECT_UNLOCK(base);
  if (no_key)
    GST_ELEMENT_ERROR(base, RESOURCE, SETTINGS,
                      ("Invalid session settings: session-key is empty "
                       "(use txlmodel for one stream)"), (NULL));
  return !no_key;
}

static gboolean
live(GstTxlScorerBase *base)
{
  return GST_TXL_SESSIONS(base)->sessions != NULL;
}

static guint64
progress(GstTxlScorerBase *base)
{
  return base->in_tokens;
}

static gboolean
save(GstTxlScorerBase *base, const gchar *path, const TxlSnapshotOptions *o,
     GHashTable *sect, gsize *bytes, GError **error)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  gst_txl_learn_save_section(B(self)->learning, sect,
                             GST_TXL_LEARN_SESSIONS_SECTION, NULL);
  return txl_sessions_save(self->sessions, path, o, sect, bytes, error);
}

/* A restore builds its sessions as new_stream built the running ones, and
 * continues a snapshot only the way it was written: learning or not. */
static gpointer
load(GstTxlScorerBase *base, const gchar *path, gboolean check_only,
     GHashTable **sect, GError **error)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  TxlSessions *s = check_only
      ? txl_sessions_load(base->model, path, &self->opts, NULL, NULL, NULL,
                          sect, error)
      : txl_sessions_load(base->model, path, &self->opts,
                          gst_txl_sessions_on_line,
                          gst_txl_sessions_on_session, self, sect, error);
  return gst_txl_learn_loaded_new(GST_ELEMENT(self), &self->learn, s,
                                  (GDestroyNotify)txl_sessions_free, sect,
                                  GST_TXL_LEARN_SESSIONS_SECTION, path,
                                  error);
}

/* ---- element ------------------------------------------------------------- */

#define F(id, field, ...) TXL_PROP(id, GstTxlSessions, field, __VA_ARGS__)
static const TxlPropField prop_fields[] = {
  GST_TXL_LEARN_PROPS(GstTxlSessions, PROP_LEARN),
  F(PROP_SESSION_KEY, key, TXL_STRING("session-key", "Session key",
      "Regular expression (PCRE) found anywhere in a line's text: the match "
      "is the line's session; lines where it finds nothing share the "
      "session \"\" (unset: the model's calibration, else " DEFAULT_KEY ")",
      DEFAULT_KEY, TXL_RW_READY)),
  F(PROP_SESSION_FIELD, key_field, TXL_STRING("session-field",
      "Session field", "A field of record lines (txlsyslogsrc's host, app, "
      "procid...) whose value is the line's session; set, it replaces "
      "session-key", NULL, TXL_RW_READY)),
  F(PROP_SESSION_KEY_GROUP, key_group, TXL_INT("session-key-group",
      "Session key group", "Capture group of session-key that is the key "
      "(0: the whole match; set with session-key)", 0, 99, 0, TXL_RW_READY)),
  F(PROP_MAX_SESSIONS, max_sessions, TXL_UINT("max-sessions",
      "Maximum sessions", "Open sessions at most; the least recently used "
      "is ended (\"evicted\") beyond (0 = no bound)", 0, G_MAXUINT, 0, TXL_RW_READY)),
  F(PROP_MAX_SESSION_MEMORY, max_memory, TXL_UINT64("max-session-memory",
      "Maximum session memory", "Bytes all open sessions may hold together "
      "(memory rows, pending tokens and lines); the least recently used are "
      "evicted beyond (0 = no bound; at least one session's most)", 0,
      G_MAXUINT64, DEFAULT_MEMORY, TXL_RW_READY)),
  F(PROP_SESSION_IDLE_LINES, idle_lines, TXL_UINT64("session-idle-lines",
      "Session idle lines", "End a session after this many lines of other "
      "sessions without one of its own (0 = never)", 0, G_MAXUINT64, 0, TXL_RW_READY)),
  F(PROP_SESSION_SCORE, score, TXL_ENUM("session-score", "Session score",
      "How a session's line scores become its score (unset: the model's "
      "calibration, else mean)", gst_txl_session_score_get_type,
      TXL_SESSION_SCORE_MEAN, TXL_RW_READY)),
  F(PROP_SESSION_THRESHOLD, threshold, TXL_DOUBLE("session-threshold",
      "Session threshold", "A session whose score exceeds this is flagged "
      "(0 = none is). Unset: the threshold `txl eval` measured, which the "
      "model file carries, else the running rule: 1.75 x the 95th "
      "percentile of the last 1000 ended sessions, flagged or not, after 50 "
      "(\"warmup\" until then; docs/anomaly.md)", 0.0,
      G_MAXDOUBLE, 0.0, TXL_RW_READY)),
  F(PROP_SESSION_END_MARKER, end_marker, TXL_BOOLEAN("session-end-marker",
      "Session end marker", "Score an empty line when a session ends (the "
      "model's surprise that it ends there; models trained with `txl eval "
      "--end`; unset: the model's calibration)", FALSE, TXL_RW_READY)),
  F(PROP_SESSION_TIME_FORMAT, time_format, TXL_STRING("session-time-format",
      "Session time format", "strptime format of the timestamp at the start "
      "of a line (read as UTC seconds; a line without one keeps the last): "
      "the clock of session-idle-after; empty: the line count",
      "%y%m%d %H%M%S", TXL_RW_READY)),
  F(PROP_SESSION_IDLE_AFTER, idle_after_s, TXL_STRING("session-idle-after",
      "Session idle timeouts", "Comma-separated idle timeouts (seconds of "
      "log time, or lines) for a session of 1, 2, ... lines, the last for "
      "longer ones: a session quiet longer has ended (reason idle, end "
      "marker scored); sessions still open at the end of the stream are "
      "reported with reason open and no end marker (`txl eval "
      "--session-rule live` writes DIR/txlsessions.txt); empty: none", "",
      TXL_RW_READY)),
  F(PROP_SESSION_OPEN_THRESHOLDS, open_thr_s, TXL_STRING(
      "session-open-thresholds", "Open session thresholds", "Comma-separated "
      "thresholds for sessions open at the end of the stream or evicted with "
      "1, 2, ... lines, the last for longer ones; session-threshold then "
      "applies to ended sessions only; empty: session-threshold for all", "",
      TXL_RW_READY)),
  F(PROP_OPEN_SESSIONS, open_sessions, TXL_UINT("open-sessions",
      "Open sessions", "Sessions open now; read-only", 0, G_MAXUINT, 0,
      TXL_RO)),
};
#undef F

/* What the application chose itself; the rest follows the model's
 * calibration. */
static void
user_chose(GObject *object, guint id)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(object);
  if (id == PROP_SESSION_KEY || id == PROP_SESSION_KEY_GROUP ||
      id == PROP_SESSION_FIELD)
    self->user_set |= SET_KEY;
  else if (id == PROP_SESSION_SCORE)
    self->user_set |= SET_SCORE;
  else if (id == PROP_SESSION_THRESHOLD)
    self->user_set |= SET_THRESHOLD;
  else if (id == PROP_SESSION_END_MARKER)
    self->user_set |= SET_END_MARKER;
}

static const TxlPropTable props = {
  .fields = prop_fields, .n = G_N_ELEMENTS(prop_fields),
  .changed = user_chose,
};

static void
gst_txl_sessions_class_init(GstTxlSessionsClass *klass)
{
  GstTxlScorerBaseClass *base_class = GST_TXL_SCORER_BASE_CLASS(klass);

  txl_element_class_init(GST_ELEMENT_CLASS(klass), &props,
      &gst_txl_sessions_debug, "txlsessions", "txl sessions",
      "Filter/Analyzer/Text",
      "Scores interleaved sessions (a key found in each line by a regex), "
      "each in its own Transformer-XL memory; per-line scores go out in "
      "line order, each ended session posts a \"txl-session\" element "
      "message and event");
  base_class->section = "txlsessions";
  base_class->per_line = TRUE;
  base_class->settings = "session";
  base_class->not_ours = "%s: not a txlsessions element's snapshot (no "
                         "txlsessions state)";
  GST_TXL_SCORER_BASE_SET_COMMON_HOOKS(base_class);
  base_class->prepare = prepare;
  base_class->publish = gst_txl_sessions_note_state;
  base_class->save_own = gst_txl_sessions_save_own;
  base_class->parse_own = gst_txl_sessions_parse_own;
  base_class->drop_own = gst_txl_sessions_drop_own;
  base_class->apply = gst_txl_sessions_apply;
}

static void
gst_txl_sessions_init(GstTxlSessions *self)
{
  txl_props_init(self, &props);
  g_queue_init(&self->ended);
}
