/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Alerts to Alertmanager and webhooks (txld_alert.h). */
#include "txld_alert.h"
#include "txl_formats.h"
#include "txl_text.h"

#include <libsoup/soup.h>
#include <math.h>
#include <string.h>

static SoupSession *session; /* main thread only */
static guint inflight;       /* main thread only */

struct TxldAlertStats {
  gint ref;
  GMutex lock;
  TxldAlertCounts c;
};

TxldAlertStats *
txld_alert_stats_new(void)
{
  TxldAlertStats *s = g_new0(TxldAlertStats, 1);
  s->ref = 1;
  g_mutex_init(&s->lock);
  return s;
}

static TxldAlertStats *
stats_ref(TxldAlertStats *s)
{
  g_atomic_int_inc(&s->ref);
  return s;
}

void
txld_alert_stats_unref(TxldAlertStats *s)
{
  if (s && g_atomic_int_dec_and_test(&s->ref)) {
    g_mutex_clear(&s->lock);
    g_free(s);
  }
}

void
txld_alert_stats_get(TxldAlertStats *s, TxldAlertCounts *out)
{
  g_mutex_lock(&s->lock);
  *out = s->c;
  g_mutex_unlock(&s->lock);
}

typedef struct {
  char *url;
  GBytes *body;
  TxldAlertStats *stats;
  guint tries; /* sent so far */
} Request;

static void
request_free(Request *r)
{
  g_free(r->url);
  g_bytes_unref(r->body);
  txld_alert_stats_unref(r->stats);
  g_free(r);
}

/* which: offset of the counter in TxldAlertCounts */
static void
count(Request *r, gsize which)
{
  g_mutex_lock(&r->stats->lock);
  (*(guint64 *)((char *)&r->stats->c + which))++;
  g_mutex_unlock(&r->stats->lock);
}

/* Whether a failed try may succeed later: no answer at all (refused,
 * reset, timed out), the receiver's own trouble (5xx) or its rate limit
 * (429).  Any other 4xx says the request itself is wrong: sent again it
 * would fail again. */
static gboolean
retryable(guint status)
{
  return status == 0 || status == 429 || (status >= 500 && status < 600);
}

/* Leading and trailing blanks are allowed; a delay of more digits than
 * fit a gint64 is the bound, not an overflow. */
gint64
txld_alert_retry_after_ms(const char *value, gint64 now_us)
{
  const gint64 max_ms = (gint64)TXLD_ALERT_RETRY_AFTER_MAX_S * 1000;
  if (!value)
    return -1;
  const char *p = value;
  while (*p == ' ' || *p == '\t')
    p++;
  if (g_ascii_isdigit(*p)) {
    /* delay-seconds: 1*DIGIT, however long (saturates at the bound) */
    gint64 s = 0;
    for (; g_ascii_isdigit(*p); p++)
      s = MIN(s * 10 + (*p - '0'), (gint64)TXLD_ALERT_RETRY_AFTER_MAX_S + 1);
    while (*p == ' ' || *p == '\t')
      p++;
    return *p || s == 0 ? -1 : MIN(s * 1000, max_ms);
  }
  /* an HTTP-date (libsoup takes the obsolete forms too) */
  GDateTime *t = *p ? soup_date_time_new_from_http_string(p) : NULL;
  if (!t)
    return -1;
  gint64 ms = g_date_time_to_unix(t) * 1000 - now_us / 1000;
  g_date_time_unref(t);
  return ms <= 0 ? -1 : MIN(ms, max_ms);
}

static void post(Request *r);

static gboolean
retry(gpointer data)
{
  post(data);
  return G_SOURCE_REMOVE;
}

static void
sent(GObject *source, GAsyncResult *res, gpointer data)
{
  (void)source;
  Request *r = data;
  SoupMessage *msg = soup_session_get_async_result_message(session, res);
  GError *err = NULL;
  GBytes *reply = soup_session_send_and_read_finish(session, res, &err);
  /* a transport error leaves no HTTP status: 0 */
  guint status = msg && !err ? soup_message_get_status(msg) : 0;
  if (reply)
    g_bytes_unref(reply);
  if (status >= 200 && status < 300) {
    count(r, G_STRUCT_OFFSET(TxldAlertCounts, sent));
  } else if (retryable(status) && r->tries <= TXLD_ALERT_RETRIES) {
    /* the request stays in flight while it waits, so a dead receiver
     * holds at most TXLD_ALERT_INFLIGHT of them; later alerts are dropped */
    count(r, G_STRUCT_OFFSET(TxldAlertCounts, retries));
    /* a 429 or 5xx may say when to come back; else 1, 2, 4 s */
    gint64 after_ms = status ? txld_alert_retry_after_ms(
        soup_message_headers_get_one(soup_message_get_response_headers(msg),
                                     "Retry-After"), g_get_real_time()) : -1;
    guint delay_ms = TXLD_ALERT_RETRY_MS << (r->tries - 1);
    if (after_ms >= 0)
      delay_ms = (guint)after_ms;
    g_clear_error(&err);
    g_timeout_add(delay_ms, retry, r);
    return;
  } else {
    count(r, G_STRUCT_OFFSET(TxldAlertCounts, failed));
    g_warning("alert to %s failed after %u %s: %s", r->url, r->tries,
              r->tries == 1 ? "try" : "tries",
              err ? err->message : soup_status_get_phrase(status));
  }
  g_clear_error(&err);
  inflight--;
  request_free(r);
}

/* One try of a request already counted in flight. */
static void
post(Request *r)
{
  SoupMessage *msg = soup_message_new(SOUP_METHOD_POST, r->url);
  if (!msg) {
    count(r, G_STRUCT_OFFSET(TxldAlertCounts, failed));
    inflight--;
    request_free(r);
    return;
  }
  soup_message_set_request_body_from_bytes(msg, "application/json", r->body);
  r->tries++;
  soup_session_send_and_read_async(session, msg, G_PRIORITY_DEFAULT, NULL,
                                   sent, r);
  g_object_unref(msg);
}

static gboolean
start(gpointer data)
{
  Request *r = data;
  if (!session) {
    session = soup_session_new();
    soup_session_set_timeout(session, 10);
    soup_session_set_user_agent(session, "txld");
  }
  if (inflight >= TXLD_ALERT_INFLIGHT) {
    count(r, G_STRUCT_OFFSET(TxldAlertCounts, dropped));
    request_free(r);
    return G_SOURCE_REMOVE;
  }
  inflight++;
  post(r);
  return G_SOURCE_REMOVE;
}

static void
queue(const char *url, GString *body, TxldAlertStats *stats)
{
  Request *r = g_new0(Request, 1);
  r->url = g_strdup(url);
  r->body = g_string_free_to_bytes(body);
  r->stats = stats_ref(stats);
  g_main_context_invoke(NULL, start, r);
}

static void
append_time(GString *o, gint64 us)
{
  char buf[TXL_RECORD_TIME_MAX];
  txl_record_time(buf, sizeof buf, us / G_USEC_PER_SEC, 0, 0);
  g_string_append_printf(o, "\"%s\"", buf);
}

/* "key": "value" pairs of the record fields that make good labels. */
static void
append_fields(GString *o, const GstStructure *f, const char *const *only)
{
  if (!f)
    return;
  for (int i = 0; i < gst_structure_n_fields(f); i++) {
    const char *k = gst_structure_nth_field_name(f, i);
    const char *v = gst_structure_get_string(f, k);
    gboolean wanted = !only;
    for (guint j = 0; only && only[j]; j++)
      wanted |= strcmp(only[j], k) == 0;
    if (!v || !wanted)
      continue;
    g_string_append(o, ", ");
    txl_json_append_string(o, k, strlen(k));
    g_string_append(o, ": ");
    txl_json_append_string(o, v, strlen(v));
  }
}

/* An Alertmanager alert is begun with its name and pipeline as its first
 * labels; the caller appends its other labels, then its annotations
 * ("}, \"annotations\": {...", left open), and alertmanager_post closes
 * them, adds the times and queues it to base's API v2. */
static GString *
alertmanager_begin(const char *name, const char *pipeline)
{
  GString *o = g_string_new("[{\"labels\": {\"alertname\": ");
  txl_json_append_string(o, name, strlen(name));
  g_string_append(o, ", \"pipeline\": ");
  txl_json_append_string(o, pipeline, strlen(pipeline));
  return o;
}

static void
alertmanager_post(const char *base, GString *o, gint64 time_us,
                  TxldAlertStats *stats)
{
  g_string_append(o, "}, \"startsAt\": ");
  append_time(o, time_us);
  g_string_append(o, ", \"endsAt\": ");
  append_time(o, time_us + (gint64)TXLD_ALERT_HOLD_S * G_USEC_PER_SEC);
  g_string_append(o, "}]");
  gchar *url = g_strdup_printf("%s%sapi/v2/alerts", base,
                               g_str_has_suffix(base, "/") ? "" : "/");
  queue(url, o, stats);
  g_free(url);
}

void
txld_alert_send(const char *alertmanager, const char *webhook,
                const TxldAlert *a, TxldAlertStats *stats)
{
  const char *text = a->text ? a->text : "";
  if (alertmanager && *alertmanager) {
    /* one alert per pipeline and source: Alertmanager folds repeats into
     * it, the annotations say the latest line */
    static const char *const labels[] = { "host", "app", "session", NULL };
    GString *o = alertmanager_begin("TxlAnomaly", a->pipeline);
    append_fields(o, a->fields, labels);
    g_string_append(o, "}, \"annotations\": {\"summary\": ");
    txl_json_append_string(o, text, MIN(strlen(text), 1024));
    g_string_append_printf(o, ", \"line\": \"%" G_GINT64_FORMAT "\", "
                           "\"bits_per_byte\": \"%.3f\"", a->line, a->worst);
    alertmanager_post(alertmanager, o, a->time_us, stats);
  }
  if (webhook && *webhook) {
    GString *o = g_string_new("{\"pipeline\": ");
    txl_json_append_string(o, a->pipeline, strlen(a->pipeline));
    g_string_append_printf(o, ", \"line\": %" G_GINT64_FORMAT ", \"bpb\": ",
                           a->line);
    txl_json_append_double(o, "%.6f", a->bpb);
    g_string_append(o, ", \"worst\": ");
    txl_json_append_double(o, "%.6f", a->worst);
    g_string_append_printf(o, ", \"time\": %.6f, \"text\": ",
                           a->time_us / 1e6);
    txl_json_append_string(o, text, strlen(text));
    g_string_append(o, ", \"fields\": {");
    gsize at = o->len;
    append_fields(o, a->fields, NULL);
    if (o->len > at)
      g_string_erase(o, (gssize)at, 2); /* the first ", " */
    g_string_append(o, "}}");
    queue(webhook, o, stats);
  }
}

void
txld_alert_send_session(const char *alertmanager, const char *webhook,
                        const TxldSessionAlert *a, TxldAlertStats *stats)
{
  const char *key = a->key ? a->key : "";
  const char *reason = a->reason ? a->reason : "";
  gsize key_len = MIN(strlen(key), TXLD_ALERT_KEY_MAX);
  /* a session whose score broke has no level, and is flagged */
  char level_txt[G_ASCII_DTOSTR_BUF_SIZE] = "none";
  if (isfinite(a->level))
    g_snprintf(level_txt, sizeof level_txt, "%.3f", a->level);
  if (alertmanager && *alertmanager) {
    /* one alert per session: its key is a label */
    GString *o = alertmanager_begin("TxlAnomalousSession", a->pipeline);
    g_string_append(o, ", \"session\": ");
    txl_json_append_string(o, key, key_len);
    g_autofree char *summary = g_strdup_printf(
        "session %.*s: %" G_GINT64_FORMAT " lines, level %s%s",
        (int)key_len, key, a->lines, level_txt, a->is_short ? ", short" : "");
    g_string_append(o, "}, \"annotations\": {\"summary\": ");
    txl_json_append_string(o, summary, strlen(summary));
    g_string_append_printf(o, ", \"lines\": \"%" G_GINT64_FORMAT "\", "
                           "\"level\": \"%s\", \"short\": \"%s\", "
                           "\"reason\": ", a->lines, level_txt,
                           a->is_short ? "true" : "false");
    txl_json_append_string(o, reason, strlen(reason));
    alertmanager_post(alertmanager, o, a->time_us, stats);
  }
  if (webhook && *webhook) {
    /* the session's JSON object as txlsink and txld's output write it */
    GString *o = g_string_new("{\"pipeline\": ");
    txl_json_append_string(o, a->pipeline, strlen(a->pipeline));
    g_string_append_printf(o, ", \"time\": %.6f, \"session\": %s}",
                           a->time_us / 1e6, a->json ? a->json : "null");
    queue(webhook, o, stats);
  }
}

gboolean
txld_alert_url_ok(const char *url)
{
  GUri *u = g_uri_parse(url, G_URI_FLAGS_NONE, NULL);
  if (!u)
    return FALSE;
  const char *scheme = g_uri_get_scheme(u);
  gboolean ok = scheme && (strcmp(scheme, "http") == 0 ||
                           strcmp(scheme, "https") == 0) &&
                g_uri_get_host(u) && *g_uri_get_host(u);
  g_uri_unref(u);
  return ok;
}
