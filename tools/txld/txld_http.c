/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txld's HTTP side (libsoup 3), on the daemon's main loop, loopback by
 * default: nothing here authenticates, so exposing it is an explicit
 * --listen choice.
 *
 *   GET  /                         the live page (txld_page.h)
 *   GET  /metrics                  Prometheus text format 0.0.4
 *   GET  /pipelines                every pipeline as JSON, with config errors
 *   GET  /pipelines/NAME           one pipeline
 *   GET  /api/recent[?pipeline=N]  recent per-line scores and anomalies
 *   POST /pipelines/NAME/snapshot  snapshot now
 *   POST /reload                   as SIGHUP
 *   POST /pipelines/NAME/lines, /v1/logs...   log ingest (txld_ingest.c)
 *
 * Handlers run on the main thread, as the supervisor does, so the
 * pipeline list needs no lock; the per-pipeline numbers that streaming
 * threads write are read under each pipeline's mutex. */
#include "txld.h"
#include "txld_httpconn.h"
#include "txld_ingest.h"
#include "txld_log.h"
#include "txld_page.h"

#include "txl_formats.h"
#include "txl_kernels.h"

#include <libsoup/soup.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static SoupServer *server;

/* ---- JSON helpers ----------------------------------------------------------- */

static void
json_str(GString *o, const char *s)
{
  if (s)
    txl_json_append_string(o, s, strlen(s));
  else
    g_string_append(o, "null");
}

static void
json_num(GString *o, double v)
{
  txl_json_append_double(o, "%.6g", v);
}

static double
since_snapshot_s(TxldPipeline *p, gint64 now)
{
  /* none yet: everything since the pipeline first started is at risk */
  gint64 t = p->last_snapshot_us ? p->last_snapshot_us : p->created_us;
  return (now - t) / 1e6;
}

/* One pipeline as a JSON object. */
static void
pipeline_json(GString *o, TxldPipeline *p)
{
  TxldConf *c = p->conf;
  gint64 now = g_get_monotonic_time();
  g_string_append(o, "{\"name\": ");
  json_str(o, c->name);
  g_string_append(o, ", \"file\": ");
  json_str(o, c->file);
  g_string_append_printf(o, ", \"state\": \"%s\", \"launch\": ",
                         txld_state_name(p->state));
  /* a long description is in the file; the answer carries its start */
  g_autofree char *launch = txld_bounded(c->launch, TXLD_ECHO_MAX);
  json_str(o, launch);
  g_string_append_printf(o, ", \"restart\": \"%s\", \"runs\": %u, \"restarts\": %u, "
                         "\"ends\": %u, \"errors\": %u, \"last_error\": ",
                         txld_restart_name(c->restart), p->runs, p->restarts,
                         p->ends, p->errors);
  g_autofree char *last_error = txld_bounded(p->last_error, TXLD_ECHO_MAX);
  json_str(o, last_error);
  if (p->state == TXLD_BACKOFF)
    g_string_append_printf(o, ", \"restart_in_s\": %.3g", p->next_delay);
  g_mutex_lock(&p->lock);
  g_string_append_printf(o, ", \"tokens\": %" G_GUINT64_FORMAT ", \"lines\": %"
                         G_GUINT64_FORMAT ", \"anomalies\": %" G_GUINT64_FORMAT
                         ", \"perplexity\": ", p->tokens, p->lines,
                         p->anomalies);
  json_num(o, p->last_ppl);
  g_string_append(o, ", \"bpb\": ");
  json_num(o, p->last_bpb);
  g_string_append(o, ", \"tokens_per_second\": ");
  json_num(o, p->tokens_per_s);
  g_string_append_printf(o, ", \"state_memory_bytes\": %" G_GUINT64_FORMAT
                         ", \"learn_rounds\": %" G_GUINT64_FORMAT
                         ", \"sessions\": %" G_GUINT64_FORMAT
                         ", \"session_anomalies\": %" G_GUINT64_FORMAT,
                         p->state_bytes, p->learn_rounds, p->sessions,
                         p->session_anomalies);
  g_string_append(o, ", \"snapshot\": {\"path\": ");
  json_str(o, c->snapshot);
  g_string_append_printf(o, ", \"supported\": %s, \"interval_s\": %u, "
                         "\"every_tokens\": %" G_GUINT64_FORMAT
                         ", \"restore\": %s, \"count\": %" G_GUINT64_FORMAT
                         ", \"seconds_since\": %.3f",
                         p->snapshots_supported ? "true" : "false",
                         c->snapshot_interval, c->snapshot_tokens,
                         c->restore ? "true" : "false", p->snapshots,
                         since_snapshot_s(p, now));
  if (p->last_snapshot_us)
    g_string_append_printf(o, ", \"last_time\": %.6f, \"last_bytes\": %"
                           G_GUINT64_FORMAT ", \"last_tokens\": %"
                           G_GUINT64_FORMAT ", \"last_duration_s\": %.6f",
                           p->last_snapshot_wall_us / 1e6,
                           p->last_snapshot_bytes, p->last_snapshot_tokens,
                           p->last_snapshot_duration);
  g_string_append(o, ", \"last_reason\": ");
  json_str(o, p->last_snapshot_reason);
  g_string_append(o, "}, \"restored_tokens\": ");
  if (p->restored_tokens >= 0)
    g_string_append_printf(o, "%" G_GINT64_FORMAT, p->restored_tokens);
  else
    g_string_append(o, "null");
  g_string_append(o, ", \"output\": ");
  json_str(o, c->output);
  g_mutex_unlock(&p->lock);
  g_string_append(o, "}");
}

static GString *
pipelines_json(TxldDaemon *d)
{
  GString *o = g_string_new("{\"pipelines\": [");
  for (guint i = 0; i < d->pipelines->len; i++) {
    if (i)
      g_string_append(o, ", ");
    pipeline_json(o, d->pipelines->pdata[i]);
  }
  g_string_append(o, "], \"config_errors\": [");
  for (guint i = 0; i < d->config_errors->len; i++) {
    if (i)
      g_string_append(o, ", ");
    json_str(o, d->config_errors->pdata[i]);
  }
  g_string_append_printf(o, "], \"config_dir\": ");
  json_str(o, d->config_dir);
  g_string_append_printf(o, ", \"reloads\": %u, \"uptime_s\": %.3f}\n",
                         d->reloads,
                         (g_get_real_time() - d->started_us) / 1e6);
  return o;
}

/* Recent lines and anomalies, for the live page. */
static GString *
recent_json(TxldDaemon *d, const char *only, guint limit)
{
  GString *o = g_string_new(NULL);
  g_string_append_printf(o, "{\"now\": %.3f, \"pipelines\": [",
                         g_get_real_time() / 1e6);
  gboolean first = TRUE;
  for (guint i = 0; i < d->pipelines->len; i++) {
    TxldPipeline *p = d->pipelines->pdata[i];
    if (only && strcmp(only, p->conf->name) != 0)
      continue;
    if (!first)
      g_string_append(o, ", ");
    first = FALSE;
    g_string_append(o, "{\"name\": ");
    json_str(o, p->conf->name);
    g_string_append_printf(o, ", \"state\": \"%s\", ",
                           txld_state_name(p->state));
    g_mutex_lock(&p->lock);
    g_string_append_printf(o, "\"lines_total\": %" G_GUINT64_FORMAT
                           ", \"anomalies_total\": %" G_GUINT64_FORMAT
                           ", \"session_anomalies_total\": %" G_GUINT64_FORMAT
                           ", \"tokens_per_second\": ", p->lines, p->anomalies,
                           p->session_anomalies);
    json_num(o, p->tokens_per_s);
    g_string_append(o, ", \"lines\": [");
    guint64 n = MIN(p->ring_count, (guint64)MIN(limit, TXLD_RING_LINES));
    for (guint64 k = p->ring_count - n; k < p->ring_count; k++) {
      TxldLine *r = &p->ring[k % TXLD_RING_LINES];
      g_string_append_printf(o, "%s[%.3f, %" G_GINT64_FORMAT ", ",
                             k == p->ring_count - n ? "" : ", ",
                             r->time_us / 1e6, r->line);
      json_num(o, r->ppl);
      g_string_append(o, ", ");
      json_num(o, r->bpb);
      g_string_append_printf(o, ", %s]", r->flag ? "true" : "false");
    }
    g_string_append(o, "], \"anomalies\": [");
    guint64 na = MIN(p->anomalies_count, TXLD_RING_ANOMALIES);
    for (guint64 k = p->anomalies_count - na; k < p->anomalies_count; k++) {
      TxldAnomaly *a = &p->anomalies_ring[k % TXLD_RING_ANOMALIES];
      g_string_append_printf(o, "%s{\"time\": %.3f, \"line\": %" G_GINT64_FORMAT
                             ", \"bpb\": ",
                             k == p->anomalies_count - na ? "" : ", ",
                             a->time_us / 1e6, a->line);
      json_num(o, a->bpb);
      g_string_append(o, ", \"worst\": ");
      json_num(o, a->worst);
      g_string_append(o, ", \"text\": ");
      json_str(o, a->text);
      g_string_append(o, "}");
    }
    g_string_append(o, "], \"sessions\": [");
    guint64 ns = MIN(p->sessions_count, TXLD_RING_SESSIONS);
    for (guint64 k = p->sessions_count - ns; k < p->sessions_count; k++) {
      TxldSession *x = &p->sessions_ring[k % TXLD_RING_SESSIONS];
      g_string_append_printf(o, "%s{\"time\": %.3f, \"session\": ",
                             k == p->sessions_count - ns ? "" : ", ",
                             x->time_us / 1e6);
      json_str(o, x->key);
      g_string_append_printf(o, ", \"lines\": %" G_GINT64_FORMAT
                             ", \"last_line\": %" G_GINT64_FORMAT
                             ", \"level\": ", x->lines, x->last_line);
      json_num(o, x->level);
      g_string_append_printf(o, ", \"short\": %s}",
                             x->is_short ? "true" : "false");
    }
    g_mutex_unlock(&p->lock);
    g_string_append(o, "]}");
  }
  g_string_append(o, "]}\n");
  return o;
}

/* ---- Prometheus ------------------------------------------------------------ */

typedef enum { M_TOKENS, M_LINES, M_ANOMALIES, M_PPL, M_RATE, M_STATE,
               M_SINCE, M_SNAPSHOTS, M_RESTARTS, M_ENDS, M_ERRORS, M_UP,
               M_ALERTS_SENT, M_ALERTS_FAILED, M_ALERTS_DROPPED, M_ALERTS_RETRIES,
               M_LEARN, M_SESSIONS, M_SESSION_ANOMALIES, M_REPEATS,
               N_METRICS } Metric; /* in the order of metrics[] */

static const struct { const char *name, *type, *help; } metrics[N_METRICS] = {
  { "txld_pipeline_tokens_total", "counter", "Tokens scored since txld started." },
  { "txld_pipeline_lines_total", "counter", "Lines scored since txld started." },
  { "txld_pipeline_anomalies_total", "counter", "Lines flagged as anomalies." },
  { "txld_pipeline_perplexity", "gauge", "Perplexity of the last scored line." },
  { "txld_pipeline_tokens_per_second", "gauge", "Tokens scored per second over the last 5 s." },
  { "txld_pipeline_state_memory_bytes", "gauge", "Bytes of recurrent state the pipeline's txlmodel and txlsessions elements hold now." },
  { "txld_pipeline_seconds_since_snapshot", "gauge", "Seconds since the last snapshot (or restore, or first start)." },
  { "txld_pipeline_snapshots_total", "counter", "Snapshots written." },
  { "txld_pipeline_restarts_total", "counter", "Times the pipeline was started again after an error." },
  { "txld_pipeline_ends_total", "counter", "Ends of stream (input read to its end); with restart=always each is followed by a new run, which is not counted as a restart." },
  { "txld_pipeline_errors_total", "counter", "ERROR messages from the pipeline." },
  { "txld_pipeline_up", "gauge", "1 while the pipeline is PLAYING." },
  { "txld_pipeline_alerts_sent_total", "counter", "Flagged lines accepted by the alertmanager or webhook (2xx)." },
  { "txld_pipeline_alerts_failed_total", "counter", "Alert requests that failed for good (a 4xx, or no answer, 5xx or 429 after the last retry)." },
  { "txld_pipeline_alerts_dropped_total", "counter", "Alerts dropped because too many requests were on their way." },
  { "txld_pipeline_alerts_retries_total", "counter", "Alert requests tried again after no answer, a 5xx or a 429." },
  { "txld_pipeline_learn_rounds", "gauge", "Rounds of learning on the stream whose weights took over in the pipeline's txlmodel and txlsessions learn=true elements (restored streams count from their start)." },
  { "txld_pipeline_sessions_total", "counter", "Sessions txlsessions ended and judged." },
  { "txld_pipeline_session_anomalies_total", "counter", "Sessions flagged as anomalies (score over its threshold, or far shorter than the stream's)." },
  { "txld_pipeline_repeats_total", "counter", "Lines over the bar that repeat the kind of a line flagged within the last 100 lines: a burst is one anomaly and one alert, its other lines count here." },
};

static void
prom_value(GString *o, double v)
{
  if (isnan(v))
    g_string_append(o, "NaN");
  else if (isinf(v))
    g_string_append(o, v > 0 ? "+Inf" : "-Inf");
  else
    g_string_append_printf(o, "%.17g", v);
}

/* One histogram of every pipeline (Prometheus: cumulative buckets with
 * their upper bound, then sum and count), from the pipeline's fields at
 * these offsets. */
typedef struct {
  const char *name, *help;
  const double *bounds;
  int n;
  gsize le, sum, count; /* G_STRUCT_OFFSET in TxldPipeline */
} Histogram;

static void
histogram(TxldDaemon *d, GString *o, const Histogram *h)
{
  g_string_append_printf(o, "# HELP %s %s\n# TYPE %s histogram\n", h->name,
                         h->help, h->name);
  for (guint i = 0; i < d->pipelines->len; i++) {
    TxldPipeline *p = d->pipelines->pdata[i];
    const char *n = p->conf->name;
    const guint64 *le = G_STRUCT_MEMBER_P(p, h->le);
    g_mutex_lock(&p->lock);
    for (int b = 0; b < h->n; b++) {
      g_string_append_printf(o, "%s_bucket{pipeline=\"%s\",le=\"", h->name, n);
      prom_value(o, h->bounds[b]);
      g_string_append_printf(o, "\"} %" G_GUINT64_FORMAT "\n", le[b]);
    }
    g_string_append_printf(o, "%s_sum{pipeline=\"%s\"} ", h->name, n);
    prom_value(o, G_STRUCT_MEMBER(double, p, h->sum));
    g_string_append_printf(o, "\n%s_count{pipeline=\"%s\"} %" G_GUINT64_FORMAT
                           "\n", h->name, n,
                           G_STRUCT_MEMBER(guint64, p, h->count));
    g_mutex_unlock(&p->lock);
  }
}

static void
histograms(TxldDaemon *d, GString *o)
{
  static const double score[] = TXLD_SCORE_BOUNDS;
  static const double latency[] = TXLD_LATENCY_BOUNDS;
  static const Histogram hs[] = {
    { "txld_pipeline_line_score_bits_per_byte", "The scored lines' worst "
      "part, bits per byte (what thresholds judge).", score,
      TXLD_N_SCORE_BOUNDS, G_STRUCT_OFFSET(TxldPipeline, score_le),
      G_STRUCT_OFFSET(TxldPipeline, score_sum),
      G_STRUCT_OFFSET(TxldPipeline, score_n) },
    { "txld_pipeline_line_latency_seconds", "From a line's arrival (a live "
      "source's timestamp) to its score.", latency, TXLD_N_LATENCY_BOUNDS,
      G_STRUCT_OFFSET(TxldPipeline, latency_le),
      G_STRUCT_OFFSET(TxldPipeline, latency_sum),
      G_STRUCT_OFFSET(TxldPipeline, latency_n) },
  };
  for (guint i = 0; i < G_N_ELEMENTS(hs); i++)
    histogram(d, o, &hs[i]);
}

/* The usual process_* metrics (the Prometheus client libraries' names),
 * from /proc, and build_info. */
static void
process_metrics(TxldDaemon *d, GString *o)
{
  long rss_pages = 0, vsize_pages = 0;
  g_autofree char *statm = NULL;
  if (g_file_get_contents("/proc/self/statm", &statm, NULL, NULL))
    sscanf(statm, "%ld %ld", &vsize_pages, &rss_pages);
  long page = sysconf(_SC_PAGESIZE);
  double cpu = (double)clock() / CLOCKS_PER_SEC;
  guint fds = 0;
  GDir *dir = g_dir_open("/proc/self/fd", 0, NULL);
  if (dir) {
    while (g_dir_read_name(dir))
      fds++;
    g_dir_close(dir);
  }
  struct rlimit rl;
  double max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (double)rl.rlim_cur : 0;
  g_string_append_printf(o,
      "# HELP process_cpu_seconds_total User and system CPU time spent.\n"
      "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.3f\n"
      "# HELP process_resident_memory_bytes Resident memory size.\n"
      "# TYPE process_resident_memory_bytes gauge\n"
      "process_resident_memory_bytes %ld\n"
      "# HELP process_virtual_memory_bytes Virtual memory size.\n"
      "# TYPE process_virtual_memory_bytes gauge\n"
      "process_virtual_memory_bytes %ld\n"
      "# HELP process_open_fds Open file descriptors.\n"
      "# TYPE process_open_fds gauge\nprocess_open_fds %u\n"
      "# HELP process_max_fds Limit of open file descriptors.\n"
      "# TYPE process_max_fds gauge\nprocess_max_fds %.0f\n"
      "# HELP process_start_time_seconds Start time since the epoch.\n"
      "# TYPE process_start_time_seconds gauge\n"
      "process_start_time_seconds %.3f\n"
      "# HELP txld_build_info txld's version and the matrix kernel it runs "
      "(generic, avx2 or avx512), as labels; always 1.\n"
      "# TYPE txld_build_info gauge\n"
      "txld_build_info{version=\"%s\",gstreamer=\"%u.%u.%u\",kernel=\"%s\"} 1\n",
      cpu, rss_pages * page, vsize_pages * page, fds, max_fds,
      d->started_us / 1e6, TXLD_VERSION, GST_VERSION_MAJOR, GST_VERSION_MINOR,
      GST_VERSION_MICRO, txl_cpu_level_name(txl_cpu_level()));
}

/* /readyz: every pipeline that should run is PLAYING (one ended by its
 * restart policy counts as ready; one starting, backing off or broken
 * does not). */
static GString *
readiness(TxldDaemon *d, guint *status)
{
  GString *o = g_string_new(NULL);
  for (guint i = 0; i < d->pipelines->len; i++) {
    TxldPipeline *p = d->pipelines->pdata[i];
    if (p->state == TXLD_RUNNING || p->state == TXLD_FINISHED)
      continue;
    g_string_append_printf(o, "%s: %s\n", p->conf->name,
                           txld_state_name(p->state));
  }
  *status = o->len ? 503 : 200;
  if (!o->len)
    g_string_append(o, "ready\n");
  return o;
}

static GString *
metrics_text(TxldDaemon *d)
{
  GString *o = g_string_new(NULL);
  gint64 now = g_get_monotonic_time();
  for (int m = 0; m < N_METRICS; m++) {
    g_string_append_printf(o, "# HELP %s %s\n# TYPE %s %s\n", metrics[m].name,
                           metrics[m].help, metrics[m].name, metrics[m].type);
    for (guint i = 0; i < d->pipelines->len; i++) {
      TxldPipeline *p = d->pipelines->pdata[i];
      double v = 0;
      TxldAlertCounts ac;
      txld_alert_stats_get(p->alerts, &ac);
      g_mutex_lock(&p->lock);
      switch ((Metric)m) {
      case M_TOKENS: v = p->tokens; break;
      case M_LINES: v = p->lines; break;
      case M_ANOMALIES: v = p->anomalies; break;
      case M_PPL: v = p->last_ppl; break;
      case M_RATE: v = p->tokens_per_s; break;
      case M_STATE: v = p->state_bytes; break;
      case M_SINCE: v = since_snapshot_s(p, now); break;
      case M_SNAPSHOTS: v = p->snapshots; break;
      case M_RESTARTS: v = p->restarts; break;
      case M_ENDS: v = p->ends; break;
      case M_ALERTS_SENT: v = ac.sent; break;
      case M_ALERTS_FAILED: v = ac.failed; break;
      case M_ALERTS_DROPPED: v = ac.dropped; break;
      case M_ALERTS_RETRIES: v = ac.retries; break;
      case M_ERRORS: v = p->errors; break;
      case M_UP: v = p->state == TXLD_RUNNING; break;
      case M_LEARN: v = p->learn_rounds; break;
      case M_SESSIONS: v = p->sessions; break;
      case M_SESSION_ANOMALIES: v = p->session_anomalies; break;
      case M_REPEATS: v = p->repeats; break;
      default: break;
      }
      g_mutex_unlock(&p->lock);
      /* names are [A-Za-z0-9_.-]: nothing to escape in the label */
      g_string_append_printf(o, "%s{pipeline=\"%s\"} ", metrics[m].name,
                             p->conf->name);
      prom_value(o, v);
      g_string_append_c(o, '\n');
    }
  }
  long rss_pages = 0;
  g_autofree char *statm = NULL;
  if (g_file_get_contents("/proc/self/statm", &statm, NULL, NULL))
    sscanf(statm, "%*s %ld", &rss_pages);
  g_string_append_printf(o,
      "# HELP txld_pipelines Pipelines configured.\n# TYPE txld_pipelines gauge\n"
      "txld_pipelines %u\n"
      "# HELP txld_config_errors Configuration files skipped as bad.\n"
      "# TYPE txld_config_errors gauge\ntxld_config_errors %u\n"
      "# HELP txld_reloads_total Configuration reloads.\n"
      "# TYPE txld_reloads_total counter\ntxld_reloads_total %u\n"
      "# HELP txld_resident_memory_bytes Resident memory of the daemon.\n"
      "# TYPE txld_resident_memory_bytes gauge\ntxld_resident_memory_bytes %ld\n",
      d->pipelines->len, d->config_errors->len, d->reloads,
      rss_pages * sysconf(_SC_PAGESIZE));
  histograms(d, o);
  txld_ingest_metrics(d, o);
  process_metrics(d, o);
  TxldHttpStats hs;
  txld_httpconn_stats(&hs);
  g_string_append_printf(o,
      "# HELP txld_http_connections HTTP connections open now.\n"
      "# TYPE txld_http_connections gauge\ntxld_http_connections %u\n"
      "# HELP txld_http_connections_total HTTP connections accepted.\n"
      "# TYPE txld_http_connections_total counter\n"
      "txld_http_connections_total %" G_GUINT64_FORMAT "\n"
      "# HELP txld_http_refused_total HTTP connections refused at the "
      "connection limit.\n# TYPE txld_http_refused_total counter\n"
      "txld_http_refused_total %" G_GUINT64_FORMAT "\n"
      "# HELP txld_http_timeouts_total HTTP connections closed at the "
      "timeout.\n# TYPE txld_http_timeouts_total counter\n"
      "txld_http_timeouts_total %" G_GUINT64_FORMAT "\n"
      "# HELP txld_http_body_refused_total Requests refused for their body "
      "size.\n# TYPE txld_http_body_refused_total counter\n"
      "txld_http_body_refused_total %" G_GUINT64_FORMAT "\n"
      "# HELP txld_http_accept_errors_total Failed accepts (EMFILE...).\n"
      "# TYPE txld_http_accept_errors_total counter\n"
      "txld_http_accept_errors_total %" G_GUINT64_FORMAT "\n",
      hs.open, hs.accepted, hs.refused, hs.timed_out, hs.too_large,
      hs.accept_errors);
  return o;
}

/* ---- routing ---------------------------------------------------------------- */

static void
reply(SoupServerMessage *msg, guint status, const char *type, GString *body)
{
  soup_server_message_set_status(msg, status, NULL);
  SoupMessageHeaders *h = soup_server_message_get_response_headers(msg);
  soup_message_headers_replace(h, "Cache-Control", "no-store");
  /* one request per connection (txld_httpconn.c): say so */
  soup_message_headers_replace(h, "Connection", "close");
  gsize len = body->len;
  soup_server_message_set_response(msg, type, SOUP_MEMORY_TAKE,
                                   g_string_free(body, FALSE), len);
}

static void
reply_error(SoupServerMessage *msg, guint status, const char *text)
{
  GString *o = g_string_new("{\"ok\": false, \"error\": ");
  json_str(o, text);
  g_string_append(o, "}\n");
  reply(msg, status, "application/json", o);
}

#define JSON "application/json"
#define SNAP_WAIT_US (10 * G_USEC_PER_SEC)

/* POST /pipelines/NAME/snapshot waits for the element's txl-snapshot
 * message: written at once when the stream is idle, after the current
 * buffer when it is busy (txlmodel's 'snapshot' signal defers then). */
typedef struct {
  TxldDaemon *d;
  SoupServerMessage *msg;
  char *name;
  guint64 want; /* p->asked_snapshots once every txlmodel has written */
  gint64 deadline;
  gboolean paused;
} SnapWait;

static gboolean
snap_poll(gpointer data)
{
  SnapWait *w = data;
  TxldPipeline *p = txld_daemon_find(w->d, w->name);
  guint64 count = 0;
  if (p) {
    g_mutex_lock(&p->lock);
    count = p->asked_snapshots;
    g_mutex_unlock(&p->lock);
  }
  if (p && count < w->want && p->pipeline &&
      g_get_monotonic_time() < w->deadline)
    return G_SOURCE_CONTINUE;
  if (!p || !p->pipeline)
    reply_error(w->msg, 409, "the pipeline stopped before its snapshot");
  else if (count < w->want)
    reply_error(w->msg, 504, "the snapshot was requested but not written "
                "within 10 s");
  else {
    GString *o = g_string_new("{\"ok\": true, \"pipeline\": ");
    json_str(o, p->conf->name);
    g_mutex_lock(&p->lock);
    g_string_append(o, ", \"path\": ");
    json_str(o, p->asked_path);
    g_string_append_printf(o, ", \"bytes\": %" G_GUINT64_FORMAT
                           ", \"tokens\": %" G_GUINT64_FORMAT
                           ", \"duration_s\": %.6f, \"reason\": "
                           "\"signal\"}\n", p->asked_bytes,
                           p->asked_tokens, p->asked_duration);
    g_mutex_unlock(&p->lock);
    reply(w->msg, 200, JSON, o);
  }
  if (w->paused)
    soup_server_message_unpause(w->msg);
  g_object_unref(w->msg);
  g_free(w->name);
  g_free(w);
  return G_SOURCE_REMOVE;
}

static void
handler(SoupServer *srv, SoupServerMessage *msg, const char *path,
        GHashTable *query, gpointer data)
{
  TxldDaemon *d = data;
  if (txld_ingest_handle(d, msg, path))
    return;
  const char *method = soup_server_message_get_method(msg);
  gboolean get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  gboolean post = strcmp(method, "POST") == 0;

  if (get && strcmp(path, "/") == 0) {
    reply(msg, 200, "text/html; charset=utf-8", g_string_new(TXLD_PAGE));
    return;
  }
  if (get && strcmp(path, "/healthz") == 0) {
    /* answered by the main loop: the daemon is not stuck */
    reply(msg, 200, "text/plain; charset=utf-8", g_string_new("ok\n"));
    return;
  }
  if (get && strcmp(path, "/readyz") == 0) {
    guint status;
    GString *body = readiness(d, &status);
    reply(msg, status, "text/plain; charset=utf-8", body);
    return;
  }
  if (get && strcmp(path, "/metrics") == 0) {
    reply(msg, 200, "text/plain; version=0.0.4; charset=utf-8",
          metrics_text(d));
    return;
  }
  if (get && (strcmp(path, "/pipelines") == 0 ||
              strcmp(path, "/pipelines/") == 0)) {
    reply(msg, 200, JSON, pipelines_json(d));
    return;
  }
  if (get && strcmp(path, "/api/recent") == 0) {
    const char *only = query ? g_hash_table_lookup(query, "pipeline") : NULL;
    const char *lim = query ? g_hash_table_lookup(query, "limit") : NULL;
    guint limit = lim ? (guint)g_ascii_strtoull(lim, NULL, 10) : 300;
    reply(msg, 200, JSON, recent_json(d, only, limit));
    return;
  }
  if (post && strcmp(path, "/reload") == 0) {
    txld_daemon_reload(d);
    reply(msg, 200, JSON, pipelines_json(d));
    return;
  }
  if (g_str_has_prefix(path, "/pipelines/")) {
    g_autofree char *name = g_strdup(path + strlen("/pipelines/"));
    char *slash = strchr(name, '/');
    const char *action = NULL;
    if (slash) {
      *slash = '\0';
      action = slash + 1;
    }
    TxldPipeline *p = txld_daemon_find(d, name);
    if (!p) {
      reply_error(msg, 404, "no such pipeline");
      return;
    }
    if (get && !action) {
      GString *o = g_string_new(NULL);
      pipeline_json(o, p);
      g_string_append_c(o, '\n');
      reply(msg, 200, JSON, o);
      return;
    }
    if (action && strcmp(action, "snapshot") == 0) {
      if (!post) {
        soup_message_headers_replace(
            soup_server_message_get_response_headers(msg), "Allow", "POST");
        reply_error(msg, 405, "use POST");
        return;
      }
      g_mutex_lock(&p->lock);
      guint64 before = p->asked_snapshots;
      g_mutex_unlock(&p->lock);
      g_autoptr(GError) e = NULL;
      if (!txld_pipeline_snapshot(p, &e)) {
        reply_error(msg, e->code == G_IO_ERROR_FAILED ? 500 : 409,
                    e->message);
        return;
      }
      SnapWait *w = g_new0(SnapWait, 1);
      w->d = d;
      w->msg = g_object_ref(msg);
      w->name = g_strdup(name);
      w->want = before + p->models->len;
      w->deadline = g_get_monotonic_time() + SNAP_WAIT_US;
      if (snap_poll(w) == G_SOURCE_CONTINUE) {
        /* the streaming thread was busy: the element writes it after the
         * current buffer; answer once its txl-snapshot has come */
        soup_server_message_pause(msg);
        w->paused = TRUE;
        g_timeout_add(10, snap_poll, w);
      }
      return;
    }
  }
  reply_error(msg, 404, "not found: GET /, /metrics, /healthz, /readyz, /pipelines, "
              "/pipelines/NAME, /api/recent; POST /pipelines/NAME/snapshot, "
              "/reload");
}

gboolean
txld_http_start(TxldDaemon *d, const char *address, guint port,
                const TxldHttpLimits *limits, guint *bound_port,
                GError **error)
{
  g_autoptr(GSocketAddress) addr = g_inet_socket_address_new_from_string(
      address, port);
  if (!addr) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                "'%s' is not an IP address", address);
    return FALSE;
  }
  server = soup_server_new("server-header", "txld", NULL);
  soup_server_add_handler(server, NULL, handler, d, NULL);
  if (!txld_httpconn_listen(server, addr, limits, bound_port, error)) {
    g_clear_object(&server);
    return FALSE;
  }
  return TRUE;
}

void
txld_http_reply(SoupServerMessage *msg, guint status, const char *type,
                GString *body)
{
  reply(msg, status, type, body);
}

void
txld_http_stop(void)
{
  txld_httpconn_stop();
  if (server)
    soup_server_disconnect(server);
  g_clear_object(&server);
}
