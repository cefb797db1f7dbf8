/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* See txld_httpconn.h.  Every accepted connection gets a Conn: its socket,
 * a deadline timer and the body bytes of its current request.  libsoup
 * knows the connection only as the GIOStream handed to it, so a request's
 * Conn is found through the remote-address object, which libsoup keeps
 * (the very object passed to soup_server_accept_iostream) and returns
 * from soup_server_message_get_remote_address.
 *
 * Closing a connection early (deadline passed, body too large) is a
 * shutdown(2) of both directions, never a close: libsoup's read then sees
 * end of stream and closes the socket itself, and no descriptor number is
 * freed under a source that still polls it.
 *
 * Without a libsoup listener, libsoup closes each connection after its
 * answer (no keep-alive): one request per connection, which also means an
 * idle connection is simply one that has not sent a whole request. */
#include "txld_httpconn.h"
#include "txld_ingest.h"
#include "txld_log.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define CONN_KEY "txld-conn"
#define ACCEPT_BATCH 64         /* accepts per wake-up, so others run too */
#define ACCEPT_BATCH_US 20000   /* and at most this long (µs) */
#define ACCEPT_RETRY_MS 100     /* after EMFILE and the like */
#define LOG_EVERY_US (10 * G_USEC_PER_SEC)
/* The ingest bodies being read, all connections together, may hold this
 * many times --ingest-max-body (64 MiB by default); a body that would
 * pass it gets 503 with Retry-After, or 256 connections of 4 MiB each
 * would hold a gigabyte. */
#define INGEST_HELD_BODIES 16

typedef struct {
  GSocket *sock;           /* not a reference: the Conn dies with it */
  GSocketAddress *remote;  /* a reference; carries CONN_KEY */
  guint timer;
  guint64 body;            /* bytes of the current request's body */
  guint64 max;             /* its limit */
  gboolean ingest;         /* an ingest endpoint's (--ingest-max-body) */
  gboolean rejected;
  guint64 held;            /* its part of ingest_held */
} Conn;

/* At most one log record per LOG_EVERY_US for each kind of event, with
 * the count of those not logged: a flood must not flood the journal. */
typedef struct {
  gint64 last_us;
  guint64 quiet;
} RateLimit;

static SoupServer *srv;
static GSocket *listener;
static GSource *accept_source;
static guint retry_id;
static TxldHttpLimits lim;
static TxldHttpStats stats;
static RateLimit rl_full, rl_accept, rl_timeout, rl_large;
static guint64 ingest_held; /* bytes of ingest bodies being read */

static gboolean
may_log(RateLimit *r, guint64 *quiet)
{
  gint64 now = g_get_monotonic_time();
  if (r->last_us && now - r->last_us < LOG_EVERY_US) {
    r->quiet++;
    return FALSE;
  }
  *quiet = r->quiet;
  r->quiet = 0;
  r->last_us = now;
  return TRUE;
}

static const char *
also(guint64 quiet)
{
  static char buf[64];
  if (!quiet)
    return "";
  g_snprintf(buf, sizeof buf, " (and %" G_GUINT64_FORMAT " more since the "
             "last such message)", quiet);
  return buf;
}

/* ---- one connection ---------------------------------------------------------- */

/* The connection's body no longer held (answered, or gone). */
static void
conn_release(Conn *k)
{
  ingest_held -= k->held;
  k->held = 0;
}

static void
conn_gone(gpointer data, GObject *was_socket)
{
  Conn *k = data;
  (void)was_socket;
  conn_release(k);
  if (k->timer)
    g_source_remove(k->timer);
  g_object_set_data(G_OBJECT(k->remote), CONN_KEY, NULL);
  g_object_unref(k->remote);
  g_free(k);
  stats.open--;
}

static gboolean
conn_expired(gpointer data)
{
  Conn *k = data;
  k->timer = 0;
  stats.timed_out++;
  guint64 quiet;
  if (may_log(&rl_timeout, &quiet))
    txld_log(G_LOG_LEVEL_MESSAGE, NULL, "HTTP: closed a connection that did "
             "not send a whole request, or take its answer, in time "
             "(--http-timeout %.3g s)%s", lim.timeout_s, also(quiet));
  /* libsoup sees end of stream and closes it (see the top) */
  g_socket_shutdown(k->sock, TRUE, TRUE, NULL);
  return G_SOURCE_REMOVE;
}

static void
conn_arm(Conn *k, double seconds)
{
  if (k->timer)
    g_source_remove(k->timer);
  k->timer = g_timeout_add((guint)MAX(1.0, seconds * 1000.0), conn_expired, k);
}

static Conn *
conn_of(SoupServerMessage *msg)
{
  GSocketAddress *a = soup_server_message_get_remote_address(msg);
  return a ? g_object_get_data(G_OBJECT(a), CONN_KEY) : NULL;
}

static const char *
limit_option(const Conn *k)
{
  return k->ingest ? "--ingest-max-body" : "--http-max-body";
}

/* An answer before the body is read: written straight to the socket
 * (libsoup would read the whole body first, even with a status set), then
 * both directions shut, so nothing more of the body is read. */
static void
conn_refuse(Conn *k, SoupServerMessage *msg, guint status, const char *headers,
            const char *error)
{
  k->rejected = TRUE;
  soup_server_message_set_status(msg, status, NULL);
  g_autofree char *body = g_strdup_printf("{\"ok\": false, \"error\": \"%s\"}\n",
                                          error);
  g_autofree char *resp = g_strdup_printf(
      "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\n%s"
      "Content-Length: %zu\r\nConnection: close\r\nServer: txld\r\n\r\n%s",
      status, status == 413 ? "Content Too Large"
                            : soup_status_get_phrase(status),
      headers, strlen(body), body);
  g_socket_send_with_blocking(k->sock, resp, strlen(resp), FALSE, NULL, NULL);
  g_socket_shutdown(k->sock, TRUE, TRUE, NULL);
}

/* Holds `more` bytes of an ingest body against the shared budget, or
 * answers 503 (the client may try again in a moment). */
static void
conn_hold(Conn *k, SoupServerMessage *msg, guint64 more)
{
  if (k->rejected || !k->ingest || !more)
    return;
  guint64 budget = lim.max_ingest_body * INGEST_HELD_BODIES;
  if (ingest_held + more > budget) {
    stats.too_large++;
    conn_refuse(k, msg, SOUP_STATUS_SERVICE_UNAVAILABLE, "Retry-After: 1\r\n",
                "other clients' bodies fill what txld reads at once; try "
                "again");
    guint64 quiet;
    if (may_log(&rl_large, &quiet))
      txld_log(G_LOG_LEVEL_MESSAGE, NULL, "HTTP: refused an ingest body for "
               "now: %" G_GUINT64_FORMAT " bytes of bodies being read, at "
               "most %" G_GUINT64_FORMAT " (%d x --ingest-max-body)%s",
               ingest_held, budget, INGEST_HELD_BODIES, also(quiet));
    return;
  }
  ingest_held += more;
  k->held += more;
}

static void
on_finished(SoupServerMessage *msg, gpointer data)
{
  (void)data;
  Conn *k = conn_of(msg);
  if (k)
    conn_release(k);
}

/* 413 before the body is read */
static void
conn_reject_body(Conn *k, SoupServerMessage *msg, guint64 declared)
{
  if (k->rejected)
    return;
  stats.too_large++;
  g_autofree char *error = g_strdup_printf(
      "the request body is over the limit of %" G_GUINT64_FORMAT " bytes (%s)",
      k->max, limit_option(k));
  conn_refuse(k, msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE, "", error);
  guint64 quiet;
  if (may_log(&rl_large, &quiet))
    txld_log(G_LOG_LEVEL_MESSAGE, NULL, "HTTP: refused a request body of %s%"
             G_GUINT64_FORMAT " bytes, over the limit of %" G_GUINT64_FORMAT
             " (%s)%s", declared ? "" : "at least ",
             declared ? declared : k->body, k->max, limit_option(k),
             also(quiet));
}

static void
on_got_headers(SoupServerMessage *msg, gpointer data)
{
  (void)data;
  Conn *k = conn_of(msg);
  SoupMessageHeaders *h = soup_server_message_get_request_headers(msg);
  /* an ingest endpoint's body is kept, under its own limit */
  GUri *uri = soup_server_message_get_uri(msg);
  guint status;
  const char *why;
  if (k && uri && !txld_ingest_admit(g_uri_get_path(uri), h, &status, &why)) {
    /* refused whatever the body: none is read (why holds no quote) */
    conn_refuse(k, msg, status, status == 401 ? "WWW-Authenticate: Bearer "
                "realm=\"txld\"\r\n" : "", why);
    return;
  }
  /* libsoup reads "Content-Length: -5" as no body and the request goes
   * on without it: a length that is not a number is a bad request */
  const char *cl = soup_message_headers_get_one(h, "Content-Length");
  if (k && cl && (!*cl || strspn(cl, "0123456789") != strlen(cl))) {
    conn_refuse(k, msg, 400, "", "a Content-Length that is not one number");
    return;
  }
  if (k && uri && txld_ingest_path(g_uri_get_path(uri))) {
    k->max = lim.max_ingest_body;
    k->ingest = TRUE;
    soup_message_body_set_accumulate(
        soup_server_message_get_request_body(msg), TRUE);
  }
  if (k && soup_message_headers_get_encoding(h) == SOUP_ENCODING_CONTENT_LENGTH) {
    goffset n = soup_message_headers_get_content_length(h);
    if (n > 0 && (guint64)n > k->max)
      conn_reject_body(k, msg, (guint64)n);
    else if (n > 0)
      conn_hold(k, msg, (guint64)n);
  }
}

/* chunked (or close-delimited) bodies: counted as they come */
static void
on_got_chunk(SoupServerMessage *msg, GBytes *chunk, gpointer data)
{
  (void)data;
  Conn *k = conn_of(msg);
  if (!k)
    return;
  k->body += g_bytes_get_size(chunk);
  if (k->body > k->max)
    conn_reject_body(k, msg, 0);
  else if (k->body > k->held)
    conn_hold(k, msg, k->body - k->held);
}

static void
on_request_started(SoupServer *server, SoupServerMessage *msg, gpointer data)
{
  (void)server;
  (void)data;
  Conn *k = conn_of(msg);
  if (k) {
    k->body = 0;
    k->max = lim.max_body;
    k->ingest = FALSE;
  }
  /* only the ingest endpoints read a body (on_got_headers): by default none
   * is kept in memory */
  soup_message_body_set_accumulate(soup_server_message_get_request_body(msg),
                                   FALSE);
  g_signal_connect(msg, "got-headers", G_CALLBACK(on_got_headers), NULL);
  g_signal_connect(msg, "got-chunk", G_CALLBACK(on_got_chunk), NULL);
  g_signal_connect(msg, "finished", G_CALLBACK(on_finished), NULL);
}

/* The whole request is in: the handler runs, and the answer must be out
 * within the grace the slowest handler needs, plus the timeout. */
static void
on_request_read(SoupServer *server, SoupServerMessage *msg, gpointer data)
{
  (void)server;
  (void)data;
  Conn *k = conn_of(msg);
  if (k)
    conn_arm(k, lim.timeout_s + TXLD_HTTP_ANSWER_GRACE);
}

/* ---- accept -------------------------------------------------------------------- */

static const char refuse_503[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    "Content-Length: 67\r\nRetry-After: 1\r\nConnection: close\r\n"
    "Server: txld\r\n\r\n"
    "{\"ok\": false, \"error\": \"too many connections, try again later\"}\n";

static void
refuse(GSocket *c)
{
  stats.refused++;
  g_socket_send_with_blocking(c, refuse_503, strlen(refuse_503), FALSE, NULL,
                              NULL);
  g_socket_close(c, NULL);
  g_object_unref(c);
  guint64 quiet;
  if (may_log(&rl_full, &quiet))
    txld_log(G_LOG_LEVEL_WARNING, NULL, "HTTP: %u connections open, the limit "
             "(--http-max-connections %u): refusing new ones with 503%s",
             stats.open, lim.max_connections, also(quiet));
}

static void
hand_over(GSocket *c)
{
  g_autoptr(GSocketAddress) local = g_socket_get_local_address(c, NULL);
  GSocketAddress *remote = g_socket_get_remote_address(c, NULL);
  if (!local || !remote) {
    /* the client went away between connect and accept */
    g_clear_object(&remote);
    g_socket_close(c, NULL);
    g_object_unref(c);
    return;
  }
  g_socket_set_option(c, IPPROTO_TCP, TCP_NODELAY, TRUE, NULL);
  Conn *k = g_new0(Conn, 1);
  k->sock = c;
  k->remote = remote;
  g_object_set_data(G_OBJECT(remote), CONN_KEY, k);
  g_object_weak_ref(G_OBJECT(c), conn_gone, k);
  stats.open++;
  stats.accepted++;
  conn_arm(k, lim.timeout_s);
  GSocketConnection *io = g_socket_connection_factory_create_connection(c);
  g_object_unref(c); /* io holds it; the Conn goes when io does */
  soup_server_accept_iostream(srv, G_IO_STREAM(io), local, remote, NULL);
  g_object_unref(io);
}

static gboolean on_acceptable(GSocket *s, GIOCondition cond, gpointer data);

static void
watch_listener(void)
{
  accept_source = g_socket_create_source(listener, G_IO_IN, NULL);
  g_source_set_callback(accept_source, (GSourceFunc)(void (*)(void))on_acceptable,
                        NULL, NULL);
  g_source_attach(accept_source, NULL);
}

static gboolean
resume_accept(gpointer data)
{
  (void)data;
  retry_id = 0;
  watch_listener();
  return G_SOURCE_REMOVE;
}

static void
accept_failed(const GError *e)
{
  stats.accept_errors++;
  guint64 quiet;
  if (!may_log(&rl_accept, &quiet))
    return;
  struct rlimit rl = { 0 };
  getrlimit(RLIMIT_NOFILE, &rl);
  gboolean fds = g_error_matches(e, G_IO_ERROR,
                                 G_IO_ERROR_TOO_MANY_OPEN_FILES) ||
                 strstr(e->message, "open files") != NULL;
  txld_log(G_LOG_LEVEL_WARNING, NULL, "HTTP: cannot accept a connection: %s "
           "(%u HTTP connections open, descriptor limit %llu): retrying every "
           "%d ms%s%s", e->message, stats.open, (unsigned long long)rl.rlim_cur,
           ACCEPT_RETRY_MS,
           fds ? "; raise LimitNOFILE= (ulimit -n) or lower "
                 "--http-max-connections" : "",
           also(quiet));
}

static gboolean
on_acceptable(GSocket *s, GIOCondition cond, gpointer data)
{
  (void)cond;
  (void)data;
  /* soup may serve a request whose bytes are all there inside
   * hand_over(): a batch ends once it has taken a while, so that a stop
   * (SIGTERM) or a timer waiting in the loop comes before the next
   * connection, however many clients keep the queue full */
  gint64 until = g_get_monotonic_time() + ACCEPT_BATCH_US;
  for (int i = 0; i < ACCEPT_BATCH && g_get_monotonic_time() < until; i++) {
    g_autoptr(GError) e = NULL;
    GSocket *c = g_socket_accept(s, NULL, &e);
    if (!c) {
      if (g_error_matches(e, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        return G_SOURCE_CONTINUE;
      /* EMFILE leaves the connection queued and the socket readable:
       * watching it would spin, so look again a little later, and as
       * soon as descriptors are free the queue is served again */
      accept_failed(e);
      g_source_unref(accept_source);
      accept_source = NULL;
      retry_id = g_timeout_add(ACCEPT_RETRY_MS, resume_accept, NULL);
      return G_SOURCE_REMOVE;
    }
    if (stats.open >= lim.max_connections)
      refuse(c);
    else
      hand_over(c);
  }
  return G_SOURCE_CONTINUE;
}

gboolean
txld_httpconn_listen(SoupServer *server, GSocketAddress *addr,
                     const TxldHttpLimits *limits, guint *bound_port,
                     GError **error)
{
  lim = *limits;
  GSocket *s = g_socket_new(g_socket_address_get_family(addr),
                            G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, error);
  if (!s)
    return FALSE;
  if (g_socket_address_get_family(addr) == G_SOCKET_FAMILY_IPV6)
    g_socket_set_option(s, IPPROTO_IPV6, IPV6_V6ONLY, TRUE, NULL);
  g_socket_set_blocking(s, FALSE);
  /* the kernel caps it at net.core.somaxconn; GSocket's default is 10 */
  g_socket_set_listen_backlog(s, SOMAXCONN);
  if (!g_socket_bind(s, addr, TRUE, error) || !g_socket_listen(s, error)) {
    g_object_unref(s);
    return FALSE;
  }
  g_autoptr(GSocketAddress) bound = g_socket_get_local_address(s, error);
  if (!bound) {
    g_object_unref(s);
    return FALSE;
  }
  *bound_port = g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
  srv = server;
  listener = s;
  g_signal_connect(server, "request-started", G_CALLBACK(on_request_started),
                   NULL);
  g_signal_connect(server, "request-read", G_CALLBACK(on_request_read), NULL);
  watch_listener();
  return TRUE;
}

void
txld_httpconn_stop(void)
{
  if (accept_source) {
    g_source_destroy(accept_source);
    g_source_unref(accept_source);
    accept_source = NULL;
  }
  if (retry_id)
    g_source_remove(retry_id);
  retry_id = 0;
  if (listener)
    g_socket_close(listener, NULL);
  g_clear_object(&listener);
  srv = NULL;
}

void
txld_httpconn_stats(TxldHttpStats *out)
{
  *out = stats;
}
