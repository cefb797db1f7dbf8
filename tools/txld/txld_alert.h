/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Anomalies out as alerts: Alertmanager's API v2 and a generic webhook
 * (docs/alerts.md).  A flagged line or session is turned into a request on
 * the streaming thread and sent from the main loop; at most TXLD_ALERT_INFLIGHT
 * requests are on their way (retries included), later alerts are dropped
 * and counted, so a slow or dead receiver never holds up scoring nor grows
 * memory. */
#ifndef TXLD_ALERT_H
#define TXLD_ALERT_H

#include <gst/gst.h>

#define TXLD_ALERT_INFLIGHT 64
/* a try that got no answer, a 5xx or a 429 is made again this many times,
 * after TXLD_ALERT_RETRY_MS, then twice and four times as long (1, 2, 4 s),
 * or after the answer's Retry-After when it has a usable one, at most
 * TXLD_ALERT_RETRY_AFTER_MAX_S; a request waiting so still counts in flight */
#define TXLD_ALERT_RETRIES 3
#define TXLD_ALERT_RETRY_MS 1000
#define TXLD_ALERT_RETRY_AFTER_MAX_S 60
/* how long Alertmanager keeps an alert active after its last line */
#define TXLD_ALERT_HOLD_S 300

typedef struct {
  guint64 sent, failed, dropped;
  guint64 retries; /* tries made again (a request's last failure is in failed) */
} TxldAlertCounts;

/* A pipeline's alert counters, shared with its requests in flight (which
 * may outlive a pipeline removed by a reload): reference-counted. */
typedef struct TxldAlertStats TxldAlertStats;
TxldAlertStats *txld_alert_stats_new(void);
void txld_alert_stats_unref(TxldAlertStats *s);
void txld_alert_stats_get(TxldAlertStats *s, TxldAlertCounts *out);

typedef struct {
  const char *pipeline;
  gint64 line;
  double bpb, worst;
  const char *text;
  const GstStructure *fields; /* record fields (host, app, session...), or NULL */
  gint64 time_us;             /* wall clock */
} TxldAlert;

/* Queues the alert to Alertmanager (base URL, e.g. http://127.0.0.1:9093)
 * and/or the webhook URL; either may be NULL.  Any thread. */
void txld_alert_send(const char *alertmanager, const char *webhook,
                     const TxldAlert *a, TxldAlertStats *stats);

/* The longest session key an alert carries, in bytes (a key comes from
 * the log, whose lines may be long). */
#define TXLD_ALERT_KEY_MAX 256

/* A flagged session (txlsessions' "txl-session" structure, as read). */
typedef struct {
  const char *pipeline;
  const char *key;    /* sent as at most TXLD_ALERT_KEY_MAX bytes */
  const char *reason; /* or NULL */
  gint64 lines;
  double level;       /* NAN: none (a score that is not finite) */
  gboolean is_short;
  const char *json;   /* its JSON object as txlsink wrote it, or NULL */
  gint64 time_us;     /* wall clock */
} TxldSessionAlert;

/* Queues it as an Alertmanager alert named TxlAnomalousSession with the
 * session's key as a label, and/or as the webhook's {"pipeline", "time",
 * "session": json}.  Any thread. */
void txld_alert_send_session(const char *alertmanager, const char *webhook,
                             const TxldSessionAlert *a, TxldAlertStats *stats);

/* A Retry-After value (RFC 9110 10.2.3) as the wait in milliseconds:
 * delay-seconds, or an HTTP-date compared with now_us (wall clock, as
 * g_get_real_time()); at most TXLD_ALERT_RETRY_AFTER_MAX_S.  -1 when value
 * is NULL, unparsable, negative, zero or a date not after now: the fixed
 * schedule applies then. */
gint64 txld_alert_retry_after_ms(const char *value, gint64 now_us);

/* Whether url is an http:// or https:// URL with a host. */
gboolean txld_alert_url_ok(const char *url);

#endif
