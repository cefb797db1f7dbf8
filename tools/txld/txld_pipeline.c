/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One supervised pipeline (txld_pipeline.h).
 *
 * Snapshots are the scoring elements' business (txlmodel, txlsessions):
 * txld only points each at its file (snapshot-location, -interval, -tokens, restore)
 * and the element restores at start and writes at shutdown (PAUSED to
 * READY), at intervals and when its 'snapshot' signal is emitted.  txld
 * learns about them from the element's txl-snapshot / txl-restore bus
 * messages, which it reads in a bus sync handler: the snapshot written
 * while the pipeline goes to NULL is posted when the bus is about to be
 * flushed, so an asynchronous watch would never see it.
 *
 * Restarts: an ERROR tears the pipeline down (which snapshots it) and
 * starts it again after restart-delay, doubling up to restart-max-delay
 * while runs keep failing within STABLE_US of their start; end of stream
 * (a TCP client that hung up) restarts at once under restart=always. */
#include "txld_pipeline.h"
#include "txld_ingest.h"
#include "txld_log.h"

#include "txl_formats.h"
#include "txl.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* a run longer than this resets the back-off */
#define STABLE_US (10 * G_USEC_PER_SEC)

const char *
txld_state_name(TxldState s)
{
  static const char *const names[] = { "stopped", "starting", "running",
                                       "backoff", "failed", "finished" };
  return names[s];
}

TxldPipeline *
txld_pipeline_new(TxldConf *conf)
{
  TxldPipeline *p = g_new0(TxldPipeline, 1);
  p->conf = conf;
  p->models = g_ptr_array_new_with_free_func(gst_object_unref);
  p->restored_tokens = -1;
  p->created_us = g_get_monotonic_time();
  p->last_ppl = NAN;
  p->last_bpb = NAN;
  g_mutex_init(&p->lock);
  p->alerts = txld_alert_stats_new();
  return p;
}

static void
close_output(TxldPipeline *p)
{
  g_mutex_lock(&p->lock);
  if (p->output)
    fclose(p->output);
  p->output = NULL;
  g_mutex_unlock(&p->lock);
}

void
txld_pipeline_free(TxldPipeline *p)
{
  if (!p)
    return;
  txld_pipeline_stop(p);
  close_output(p);
  g_ptr_array_unref(p->models);
  for (guint i = 0; i < TXLD_RING_ANOMALIES; i++)
    g_free(p->anomalies_ring[i].text);
  for (guint i = 0; i < TXLD_RING_SESSIONS; i++)
    g_free(p->sessions_ring[i].key);
  txl_free_each(g_free, p->last_error, p->last_snapshot_reason, p->asked_path,
                p->last_snapshot_path);
  g_mutex_clear(&p->lock);
  txld_alert_stats_unref(p->alerts);
  txld_conf_free(p->conf);
  g_free(p);
}

/* ---- numbers from the streaming threads --------------------------------- */

/* One line appended to the pipeline's `output` (under its lock); o is
 * freed. */
static void
write_output(TxldPipeline *p, GString *o)
{
  if (fwrite(o->str, 1, o->len, p->output) != o->len ||
      fflush(p->output) != 0)
    txld_log(G_LOG_LEVEL_WARNING, p->conf->name, "writing %s: %s",
             p->conf->output, g_strerror(errno));
  g_string_free(o, TRUE);
}

/* txlsink's JSON object for a line or a session (the signals' "json"),
 * with the time it was scored added before its closing brace, appended to
 * `output` (under the pipeline's lock). */
static void
append_output(TxldPipeline *p, const char *json, gint64 now_us)
{
  gsize n = strlen(json);
  if (n == 0 || json[n - 1] != '}')
    return;
  GString *o = g_string_new_len(json, (gssize)n - 1);
  g_string_append_printf(o, ", \"time\": %.6f}\n", now_us / 1e6);
  write_output(p, o);
}

/* txlsink's line-scored signal, on its streaming thread: counts, the
 * ring the live page plots, and the line appended to `output` as txlsink
 * wrote it, with the time (txlsink's location is truncated at every
 * start; this file survives restarts). */
static void
on_line_scored(GstElement *sink, GstStructure *s, gpointer data)
{
  TxldPipeline *p = data;
  gint64 line = 0, tokens = 0;
  double ppl = NAN, bpb = NAN, worst = NAN;
  gboolean flag = FALSE, repeat = FALSE;
  gst_structure_get_boolean(s, "repeat", &repeat);
  gst_structure_get(s, "line", G_TYPE_INT64, &line, "tokens", G_TYPE_INT64,
                    &tokens, "ppl", G_TYPE_DOUBLE, &ppl, "bpb", G_TYPE_DOUBLE,
                    &bpb, "worst", G_TYPE_DOUBLE, &worst, "flag",
                    G_TYPE_BOOLEAN, &flag, NULL);
  const char *text = gst_structure_get_string(s, "text");
  gint64 now = g_get_real_time();
  GstClockTime latency = GST_CLOCK_TIME_NONE;
  if (gst_structure_has_field(s, "latency"))
    gst_structure_get(s, "latency", GST_TYPE_CLOCK_TIME, &latency, NULL);

  g_mutex_lock(&p->lock);
  if (GST_CLOCK_TIME_IS_VALID(latency)) {
    static const double bounds[] = TXLD_LATENCY_BOUNDS;
    double sec = (double)latency / GST_SECOND;
    for (int b = 0; b < TXLD_N_LATENCY_BOUNDS; b++)
      p->latency_le[b] += sec <= bounds[b];
    p->latency_sum += sec;
    p->latency_n++;
  }
  p->lines++;
  p->tokens += tokens > 0 ? (guint64)tokens : 0;
  if (tokens > 0) {
    p->last_ppl = ppl;
    p->last_bpb = bpb;
  }
  if (tokens > 0 && isfinite(worst)) {
    static const double bounds[] = TXLD_SCORE_BOUNDS;
    for (int b = 0; b < TXLD_N_SCORE_BOUNDS; b++)
      p->score_le[b] += worst <= bounds[b];
    p->score_sum += worst;
    p->score_n++;
  }
  TxldLine *r = &p->ring[p->ring_count++ % TXLD_RING_LINES];
  *r = (TxldLine){ now, line, ppl, bpb, flag };
  p->repeats += repeat;
  if (flag) {
    p->anomalies++;
    TxldAnomaly *a =
        &p->anomalies_ring[p->anomalies_count++ % TXLD_RING_ANOMALIES];
    g_free(a->text);
    *a = (TxldAnomaly){ now, line, bpb, worst, g_strdup(text ? text : "") };
  }
  const TxldConf *c = p->conf;
  if (flag && (c->alertmanager || c->webhook)) {
    GstStructure *fields = NULL;
    if (gst_structure_has_field(s, "fields"))
      gst_structure_get(s, "fields", GST_TYPE_STRUCTURE, &fields, NULL);
    TxldAlert al = { c->name, line, bpb, worst, text, fields, now };
    txld_alert_send(c->alertmanager, c->webhook, &al, p->alerts);
    if (fields)
      gst_structure_free(fields);
  }
  const char *json = gst_structure_get_string(s, "json");
  if (p->output && json)
    append_output(p, json, now);
  g_mutex_unlock(&p->lock);
}

/* txlsink's session-scored signal (txlsessions upstream), on its
 * streaming thread: counts, the session's JSON line (the signal's "json")
 * appended to `output` with the time, and a flagged session as an alert. */
static void
on_session_scored(GstElement *sink, GstStructure *s, gpointer data)
{
  (void)sink;
  TxldPipeline *p = data;
  gboolean flag = FALSE;
  gst_structure_get_boolean(s, "flag", &flag);
  gint64 now = g_get_real_time();
  /* the session's JSON object as txlsink wrote it */
  const char *json = gst_structure_get_string(s, "json");
  const TxldConf *c = p->conf;
  g_mutex_lock(&p->lock);
  p->sessions++;
  p->session_anomalies += flag;
  if (flag) {
    /* read once: the ring for the live page, and the alert */
    TxldSession *r =
        &p->sessions_ring[p->sessions_count++ % TXLD_RING_SESSIONS];
    const char *key = gst_structure_get_string(s, "key");
    g_free(r->key);
    *r = (TxldSession){ .time_us = now, .level = NAN,
                        .key = g_strndup(key ? key : "", TXLD_ALERT_KEY_MAX) };
    gst_structure_get_int64(s, "lines", &r->lines);
    gst_structure_get_int64(s, "last-line", &r->last_line);
    gst_structure_get_double(s, "level", &r->level);
    gst_structure_get_boolean(s, "short", &r->is_short);
    if (c->alertmanager || c->webhook) {
      TxldSessionAlert a = { c->name, r->key,
                             gst_structure_get_string(s, "reason"), r->lines,
                             r->level, r->is_short, json, now };
      txld_alert_send_session(c->alertmanager, c->webhook, &a, p->alerts);
    }
  }
  if (p->output && json)
    append_output(p, json, now);
  g_mutex_unlock(&p->lock);
}

/* txl-snapshot and txl-restore, on whatever thread posted them. */
static GstBusSyncReply
sync_handler(GstBus *bus, GstMessage *m, gpointer data)
{
  TxldPipeline *p = data;
  if (GST_MESSAGE_TYPE(m) != GST_MESSAGE_ELEMENT)
    return GST_BUS_PASS;
  const GstStructure *s = gst_message_get_structure(m);
  gboolean snap = gst_structure_has_name(s, "txl-snapshot");
  if (!snap && !gst_structure_has_name(s, "txl-restore"))
    return GST_BUS_PASS;
  guint64 bytes = 0, tokens = 0;
  double duration = 0.0;
  gst_structure_get_uint64(s, "bytes", &bytes);
  gst_structure_get_uint64(s, "tokens", &tokens);
  gst_structure_get_double(s, "duration", &duration);
  const char *path = gst_structure_get_string(s, "path");
  const char *reason = gst_structure_get_string(s, "reason");
  g_mutex_lock(&p->lock);
  if (snap) {
    p->snapshots++;
    p->last_snapshot_us = g_get_monotonic_time();
    p->last_snapshot_wall_us = g_get_real_time();
    p->last_snapshot_bytes = bytes;
    p->last_snapshot_tokens = tokens;
    p->last_snapshot_duration = duration;
    g_free(p->last_snapshot_reason);
    p->last_snapshot_reason = g_strdup(reason ? reason : "");
    if (reason && strcmp(reason, "signal") == 0) {
      p->asked_snapshots++;
      p->asked_bytes = bytes;
      p->asked_tokens = tokens;
      p->asked_duration = duration;
      g_free(p->asked_path);
      p->asked_path = g_strdup(path ? path : "");
    }
  } else {
    p->restores++;
    p->restored_tokens = (gint64)tokens;
    /* the restored file is as good as a snapshot just taken */
    p->last_snapshot_us = g_get_monotonic_time();
    p->last_snapshot_wall_us = g_get_real_time();
    p->last_snapshot_bytes = bytes;
    p->last_snapshot_tokens = tokens;
  }
  if (path) {
    g_free(p->last_snapshot_path);
    p->last_snapshot_path = g_strdup(path);
  }
  g_mutex_unlock(&p->lock);
  txld_log(snap ? G_LOG_LEVEL_INFO : G_LOG_LEVEL_MESSAGE, p->conf->name,
           "%s %s: %" G_GUINT64_FORMAT " bytes, %" G_GUINT64_FORMAT
           " tokens, %.1f ms%s%s", snap ? "snapshot" : "restored",
           path ? path : "?", bytes, tokens, duration * 1e3,
           snap ? ", " : "", snap && reason ? reason : "");
  return GST_BUS_PASS;
}

/* ---- lifecycle ------------------------------------------------------------ */

static void schedule_restart(TxldPipeline *p, gboolean failed);

/* Stops the current run.  Setting NULL makes every txlmodel write its
 * snapshot on the way through READY; the sync handler sees the message. */
/* The sum of an unsigned property over the pipeline's scoring elements
 * that have it (an older plugin may lack it); FALSE when none has. */
static gboolean
sum_over_models(TxldPipeline *p, const char *name, guint64 *sum)
{
  gboolean any = FALSE;
  *sum = 0;
  for (guint i = 0; i < p->models->len; i++) {
    GObject *m = p->models->pdata[i];
    if (!g_object_class_find_property(G_OBJECT_GET_CLASS(m), name))
      continue;
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_TYPE_UINT64); /* a guint property converts */
    g_object_get_property(m, name, &v);
    *sum += g_value_get_uint64(&v);
    g_value_unset(&v);
    any = TRUE;
  }
  return any;
}

/* Learning on the stream (learn=true): the rounds landed in the
 * pipeline's scoring elements; a stopped pipeline keeps its last count. */
static void
read_learn_rounds(TxldPipeline *p)
{
  guint64 rounds;
  sum_over_models(p, "learn-rounds", &rounds);
  if (p->models->len) {
    g_mutex_lock(&p->lock);
    p->learn_rounds = rounds;
    g_mutex_unlock(&p->lock);
  }
}

static void
teardown(TxldPipeline *p, gboolean from_watch)
{
  if (p->restart_source) {
    g_source_remove(p->restart_source);
    p->restart_source = 0;
  }
  if (!p->pipeline)
    return;
  if (p->bus_watch && !from_watch)
    g_source_remove(p->bus_watch);
  p->bus_watch = 0;
  gst_element_set_state(p->pipeline, GST_STATE_NULL);
  read_learn_rounds(p);
  GstBus *bus = gst_element_get_bus(p->pipeline);
  gst_bus_set_sync_handler(bus, NULL, NULL, NULL);
  gst_object_unref(bus);
  if (p->sink)
    g_signal_handlers_disconnect_by_data(p->sink, p);
  g_clear_object(&p->sink);
  g_ptr_array_set_size(p->models, 0);
  gst_clear_object(&p->pipeline);
}

static void
set_error(TxldPipeline *p, const char *msg)
{
  g_free(p->last_error);
  /* it may quote the configuration (a launch token): kept bounded */
  p->last_error = txld_bounded(msg, TXLD_ECHO_MAX);
}

static gboolean
bus_cb(GstBus *bus, GstMessage *m, gpointer data)
{
  TxldPipeline *p = data;
  switch (GST_MESSAGE_TYPE(m)) {
  case GST_MESSAGE_ERROR: {
    g_autoptr(GError) e = NULL;
    g_autofree char *dbg = NULL;
    gst_message_parse_error(m, &e, &dbg);
    g_autofree char *src = gst_object_get_path_string(GST_MESSAGE_SRC(m));
    g_autofree char *msg = g_strdup_printf("%s: %s", src, e->message);
    set_error(p, msg);
    p->errors++;
    g_autofree char *dbg_short = txld_bounded(dbg, TXLD_ECHO_MAX);
    txld_log(G_LOG_LEVEL_WARNING, p->conf->name, "error: %s (%s)",
             p->last_error, dbg_short ? dbg_short : "");
    teardown(p, TRUE);
    schedule_restart(p, TRUE);
    return G_SOURCE_REMOVE;
  }
  case GST_MESSAGE_EOS:
    txld_log(G_LOG_LEVEL_MESSAGE, p->conf->name, "end of stream");
    teardown(p, TRUE);
    schedule_restart(p, FALSE);
    return G_SOURCE_REMOVE;
  case GST_MESSAGE_WARNING: {
    g_autoptr(GError) e = NULL;
    g_autofree char *dbg = NULL;
    gst_message_parse_warning(m, &e, &dbg);
    g_autofree char *src = gst_object_get_path_string(GST_MESSAGE_SRC(m));
    txld_log(G_LOG_LEVEL_WARNING, p->conf->name, "warning from %s: %s", src,
             e->message);
    break;
  }
  case GST_MESSAGE_STATE_CHANGED:
    if (GST_MESSAGE_SRC(m) == GST_OBJECT(p->pipeline)) {
      GstState old, now;
      gst_message_parse_state_changed(m, &old, &now, NULL);
      if (now == GST_STATE_PLAYING && old != GST_STATE_PLAYING)
        txld_log(G_LOG_LEVEL_INFO, p->conf->name, "playing");
    }
    break;
  default:
    break;
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
restart_cb(gpointer data)
{
  TxldPipeline *p = data;
  p->restart_source = 0;
  /* an end of input (a file read to its end, a source that finished) is
   * no failure: only restarts after an error count as restarts */
  if (p->last_failed)
    p->restarts++;
  txld_log(G_LOG_LEVEL_MESSAGE, p->conf->name, "restarting (%s)",
           p->last_failed ? "after an error" : "after its end of stream");
  txld_pipeline_start(p);
  return G_SOURCE_REMOVE;
}

static void
schedule_restart(TxldPipeline *p, gboolean failed)
{
  TxldConf *c = p->conf;
  p->last_failed = failed;
  if (!failed)
    p->ends++;
  gboolean again = c->restart == TXLD_RESTART_ALWAYS ||
                   (failed && c->restart == TXLD_RESTART_ON_FAILURE);
  if (!again) {
    p->state = TXLD_FINISHED;
    txld_log(G_LOG_LEVEL_MESSAGE, p->conf->name, "not restarted (restart=%s)",
             txld_restart_name(c->restart));
    return;
  }
  gint64 ran = g_get_monotonic_time() - p->started_us;
  if (ran >= STABLE_US)
    p->failures = 0;
  double delay;
  if (!failed && ran >= G_USEC_PER_SEC) {
    delay = 0.0; /* a stream that ended after a real run: serve the next */
  } else {
    /* exponential back-off: delay, 2 delay, 4 delay ... up to the cap */
    delay = c->restart_delay * pow(2.0, MIN(p->failures, 30));
    delay = MIN(delay, c->restart_max_delay);
    p->failures++;
  }
  p->next_delay = delay;
  p->state = TXLD_BACKOFF;
  txld_log(failed ? G_LOG_LEVEL_WARNING : G_LOG_LEVEL_MESSAGE, p->conf->name,
           "restarting in %.3g s%s", delay,
           p->snapshots_supported && c->snapshot ? " from its last snapshot"
                                                 : "");
  p->restart_source = g_timeout_add((guint)(delay * 1000.0), restart_cb, p);
}

static gboolean
is_factory(GstElement *e, const char *name)
{
  GstElementFactory *f = gst_element_get_factory(e);
  return f && strcmp(GST_OBJECT_NAME(f), name) == 0;
}

/* Every scoring element (txlmodel, txlsessions: both snapshot their state
 * and report state-bytes) and the first txlsink, at any depth of bins. */
static void
find_elements(TxldPipeline *p)
{
  GstIterator *it = gst_bin_iterate_recurse(GST_BIN(p->pipeline));
  GValue v = G_VALUE_INIT;
  gboolean done = FALSE;
  while (!done) {
    switch (gst_iterator_next(it, &v)) {
    case GST_ITERATOR_OK: {
      GstElement *e = g_value_get_object(&v);
      if (is_factory(e, "txlmodel") || is_factory(e, "txlsessions"))
        g_ptr_array_add(p->models, gst_object_ref(e));
      /* txljson emits txlsink's signals as its own */
      else if ((is_factory(e, "txlsink") || is_factory(e, "txljson")) &&
               !p->sink)
        p->sink = gst_object_ref(e);
      g_value_reset(&v);
      break;
    }
    case GST_ITERATOR_RESYNC:
      g_ptr_array_set_size(p->models, 0);
      g_clear_object(&p->sink);
      gst_iterator_resync(it);
      break;
    default:
      done = TRUE;
    }
  }
  g_value_unset(&v);
  gst_iterator_free(it);
  /* bin iteration goes sink to source: put the models in source order so
   * that the first one keeps the plain snapshot name */
  for (guint i = 0, j = p->models->len; i + 1 < j; i++, j--) {
    gpointer t = p->models->pdata[i];
    p->models->pdata[i] = p->models->pdata[j - 1];
    p->models->pdata[j - 1] = t;
  }
}

/* snapshot-location etc. on every scoring element, when it has them. */
static void
configure_snapshots(TxldPipeline *p)
{
  TxldConf *c = p->conf;
  p->snapshots_supported = FALSE;
  for (guint i = 0; i < p->models->len; i++) {
    GstElement *m = p->models->pdata[i];
    if (!g_object_class_find_property(G_OBJECT_GET_CLASS(m),
                                      "snapshot-location")) {
      if (!p->warned_no_snapshots)
        txld_log(G_LOG_LEVEL_WARNING, c->name, "%s has no "
                 "snapshot-location property (an older plugin): no snapshots, "
                 "a restart starts from empty memory", GST_OBJECT_NAME(m));
      p->warned_no_snapshots = TRUE;
      continue;
    }
    p->snapshots_supported = TRUE;
    if (!c->snapshot)
      continue;
    g_autofree char *path = i == 0 ? g_strdup(c->snapshot)
                                   : g_strdup_printf("%s.%u", c->snapshot, i);
    g_object_set(m, "snapshot-location", path, "restore", c->restore, NULL);
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(m),
                                     "snapshot-interval"))
      g_object_set(m, "snapshot-interval", c->snapshot_interval, NULL);
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(m),
                                     "snapshot-tokens"))
      g_object_set(m, "snapshot-tokens", c->snapshot_tokens, NULL);
  }
}

/* The output file, appended to: a regular file or none yet.  Opened
 * without blocking (a FIFO with no reader would hold the main loop in
 * open(), and one with a reader in every write), then checked. */
static FILE *
open_output(const char *path, const char **why)
{
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    return NULL;
  }
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC,
                0644);
  if (fd < 0 || fstat(fd, &st) != 0) {
    *why = g_strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *why = "not a regular file";
  } else {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "a");
    if (f)
      return f;
    *why = g_strerror(errno);
  }
  if (fd >= 0)
    close(fd);
  return NULL;
}

gboolean
txld_pipeline_start(TxldPipeline *p)
{
  TxldConf *c = p->conf;
  teardown(p, FALSE);
  g_mutex_lock(&p->lock);
  if (c->output && !p->output) {
    const char *why = NULL;
    p->output = open_output(c->output, &why);
    if (!p->output)
      txld_log(G_LOG_LEVEL_WARNING, c->name, "%s: key 'output': cannot "
               "open %s: %s", c->file, c->output, why);
  }
  p->restored_tokens = -1;
  g_mutex_unlock(&p->lock);

  g_autoptr(GError) e = NULL;
  GstElement *pipe = gst_parse_launch_full(c->launch, NULL,
                                           GST_PARSE_FLAG_FATAL_ERRORS, &e);
  if (!pipe) {
    g_autofree char *msg = g_strdup_printf("%s: key 'launch' in [" TXLD_GROUP
                                           "]: %s", c->file, e->message);
    set_error(p, msg);
    p->state = TXLD_FAILED;
    txld_log(G_LOG_LEVEL_WARNING, c->name, "%s", p->last_error);
    return FALSE;
  }
  if (!GST_IS_PIPELINE(pipe)) {
    /* a single element: put it in a pipeline of its own */
    GstElement *bin = gst_pipeline_new(NULL);
    gst_bin_add(GST_BIN(bin), pipe);
    pipe = bin;
  }
  gst_object_set_name(GST_OBJECT(pipe), c->name);
  p->pipeline = gst_object_ref_sink(pipe);
  find_elements(p);
  configure_snapshots(p);
  txld_ingest_prepare(p);
  if (p->sink) {
    g_signal_connect(p->sink, "line-scored", G_CALLBACK(on_line_scored), p);
    g_signal_connect(p->sink, "session-scored",
                     G_CALLBACK(on_session_scored), p);
  }
  else
    txld_log(G_LOG_LEVEL_MESSAGE, c->name, "no txlsink or txljson: lines are not counted");

  GstBus *bus = gst_element_get_bus(p->pipeline);
  gst_bus_set_sync_handler(bus, sync_handler, p, NULL);
  p->bus_watch = gst_bus_add_watch(bus, bus_cb, p);
  gst_object_unref(bus);

  p->runs++;
  p->state = TXLD_STARTING;
  p->started_us = g_get_monotonic_time();
  txld_log(G_LOG_LEVEL_MESSAGE, c->name, "starting (%u scoring element%s, snapshot %s)",
           p->models->len, p->models->len == 1 ? "" : "s",
           c->snapshot && p->snapshots_supported
                               ? c->snapshot : "off");
  /* a failed state change posts an ERROR, which the watch handles; a
   * source that waits for a client (tcpserversrc) leaves the pipeline
   * prerolling, which counts as running: it is serving */
  if (gst_element_set_state(p->pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE && p->state == TXLD_STARTING)
    p->state = TXLD_RUNNING;
  return TRUE;
}

void
txld_pipeline_stop(TxldPipeline *p)
{
  gboolean had = p->pipeline != NULL;
  teardown(p, FALSE);
  if (p->state != TXLD_FAILED)
    p->state = TXLD_STOPPED;
  if (had)
    txld_log(G_LOG_LEVEL_MESSAGE, p->conf->name, "stopped");
}

gboolean
txld_pipeline_snapshot(TxldPipeline *p, GError **error)
{
  if (!p->pipeline || !p->models->len) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                "pipeline '%s' has no running txlmodel or txlsessions",
                p->conf->name);
    return FALSE;
  }
  for (guint i = 0; i < p->models->len; i++) {
    GstElement *m = p->models->pdata[i];
    if (!g_signal_lookup("snapshot", G_OBJECT_TYPE(m))) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                  "%s has no 'snapshot' action signal",
                  GST_OBJECT_NAME(m));
      return FALSE;
    }
    gboolean ok = FALSE;
    g_signal_emit_by_name(m, "snapshot", NULL, &ok);
    if (!ok) {
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                  "%s could not write its snapshot (see the log)",
                  GST_OBJECT_NAME(m));
      return FALSE;
    }
  }
  return TRUE;
}

/* The state's size as the snapshot header gives it (memory in use,
 * pending tokens, the other elements' sections). */
static guint64
state_bytes_of(const char *path)
{
  g_autoptr(GString) json = g_string_new(NULL);
  if (!txl_snapshot_describe(path, json, NULL))
    return 0;
  const char *k = strstr(json->str, "\"state_bytes\": ");
  return k ? g_ascii_strtoull(k + 15, NULL, 10) : 0;
}

void
txld_pipeline_tick(TxldPipeline *p)
{
  gint64 now = g_get_monotonic_time();
  g_mutex_lock(&p->lock);
  guint64 tokens = p->tokens;
  g_autofree char *path = g_strdup(p->last_snapshot_path);
  guint64 written = p->snapshots + p->restores;
  g_mutex_unlock(&p->lock);

  /* a window of the last 5 seconds */
  guint n = G_N_ELEMENTS(p->rate_tokens);
  if (p->rate_n == n) {
    memmove(p->rate_tokens, p->rate_tokens + 1, (n - 1) * sizeof *p->rate_tokens);
    memmove(p->rate_us, p->rate_us + 1, (n - 1) * sizeof *p->rate_us);
    p->rate_n--;
  }
  p->rate_tokens[p->rate_n] = tokens;
  p->rate_us[p->rate_n] = now;
  p->rate_n++;
  if (p->rate_n >= 2) {
    double dt = (p->rate_us[p->rate_n - 1] - p->rate_us[0]) / 1e6;
    p->tokens_per_s = dt > 0 ? (p->rate_tokens[p->rate_n - 1] -
                                p->rate_tokens[0]) / dt : 0.0;
  }

  /* the state grows until the memory is full: the element says how much it
   * holds now; an older plugin only through each new snapshot's header */
  guint64 live;
  gboolean have_live = sum_over_models(p, "state-bytes", &live);
  read_learn_rounds(p);
  if (have_live) {
    g_mutex_lock(&p->lock);
    p->state_bytes = live;
    g_mutex_unlock(&p->lock);
  } else if (path && written != p->state_read_at) {
    p->state_read_at = written;
    guint64 b = state_bytes_of(path);
    g_mutex_lock(&p->lock);
    p->state_bytes = b;
    g_mutex_unlock(&p->lock);
  }
}
