/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txld's HTTP connections: the listening socket, accept, and the limits
 * that keep one client (or a thousand) from taking the HTTP side down
 * (docs/txld.md, "HTTP limits").  txld accepts connections itself and
 * hands each one to libsoup (soup_server_accept_iostream), because
 * libsoup 3's own listener removes its accept source for good at the first
 * failed accept(), such as EMFILE, and logs nothing. */
#ifndef TXLD_HTTPCONN_H
#define TXLD_HTTPCONN_H

#include <libsoup/soup.h>

#define TXLD_HTTP_DEFAULT_TIMEOUT 10.0
#define TXLD_HTTP_DEFAULT_MAX_CONNECTIONS 256
#define TXLD_HTTP_DEFAULT_MAX_BODY (64 * 1024)
/* log batches (txld_ingest.c): Vector, Fluent Bit and OTLP exporters send
 * a few MB at most in one request */
#define TXLD_HTTP_DEFAULT_MAX_INGEST_BODY (4 * 1024 * 1024)
/* what a handler may take on top of the timeout before its answer must be
 * out: POST /pipelines/NAME/snapshot waits up to 10 s for the element */
#define TXLD_HTTP_ANSWER_GRACE 10.0

typedef struct {
  double timeout_s;        /* a whole request must arrive within it */
  guint max_connections;   /* open at once; more are answered 503 */
  guint64 max_body;        /* request body bytes; more: 413 */
  guint64 max_ingest_body; /* the same for the ingest endpoints, whose
                            * bodies alone are read into memory */
} TxldHttpLimits;

typedef struct {
  guint open;              /* connections open now */
  guint64 accepted, refused, timed_out, too_large, accept_errors;
} TxldHttpStats;

/* Listens on addr (port 0: any free port) with a backlog of SOMAXCONN and
 * serves every accepted connection through server. */
gboolean txld_httpconn_listen(SoupServer *server, GSocketAddress *addr,
                              const TxldHttpLimits *limits, guint *bound_port,
                              GError **error);
void txld_httpconn_stop(void);
void txld_httpconn_stats(TxldHttpStats *out);

#endif
