/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txld, the scoring service (docs/txld.md): the daemon's state, shared by
 * the supervisor (txld.c) and the HTTP side (txld_http.c). */
#ifndef TXLD_H
#define TXLD_H

#include "txld_pipeline.h"
#include "txld_httpconn.h"

typedef struct {
  char *config_dir;
  char *state_dir;
  GPtrArray *pipelines;     /* TxldPipeline*, in configuration order */
  GPtrArray *config_errors; /* char*: "FILE: key 'K' in [pipeline]: why" */
  GMainLoop *loop;
  gint64 started_us;        /* wall clock */
  guint reloads;
} TxldDaemon;

TxldPipeline *txld_daemon_find(TxldDaemon *d, const char *name);

/* Re-reads the configuration directory and starts, stops or restarts
 * only the pipelines whose file changed (SIGHUP, POST /reload). */
void txld_daemon_reload(TxldDaemon *d);

/* The HTTP server: GET /, /metrics, /pipelines, /pipelines/NAME,
 * /api/recent; POST /pipelines/NAME/snapshot, /reload. */
gboolean txld_http_start(TxldDaemon *d, const char *address, guint port,
                         const TxldHttpLimits *limits, guint *bound_port,
                         GError **error);
void txld_http_stop(void);
/* An answer with txld's usual headers (takes body). */
void txld_http_reply(SoupServerMessage *msg, guint status, const char *type,
                     GString *body);

#endif
