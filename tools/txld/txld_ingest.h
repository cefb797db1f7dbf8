/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* HTTP ingest (docs/ingest.md): log lines posted to txld go into the
 * pipeline's `appsrc name=ingest`, one buffer per accepted request.
 *
 *   POST /pipelines/NAME/lines     NDJSON, a JSON array, or plain lines
 *   POST /pipelines/NAME/v1/logs   OTLP/HTTP logs, protobuf or JSON
 *   POST /v1/logs                  the same, to the pipeline with otlp=true
 *
 * A pipeline takes them with `ingest = true` (or `otlp = true`).  Bearer
 * token (ingest-token-file), 429 with Retry-After while the appsrc holds
 * more than ingest-max-queue bytes, 503 while the pipeline is not running. */
#ifndef TXLD_INGEST_H
#define TXLD_INGEST_H

#include "txld.h"

/* The name of the appsrc that a pipeline's launch description gives its
 * ingest source. */
#define TXLD_INGEST_ELEMENT "ingest"

/* --ingest-max-body: also the most a compressed body may decode to */
extern guint64 txld_ingest_max_body;

/* At start: the daemon whose pipelines the requests go to. */
void txld_ingest_init(TxldDaemon *d, guint64 max_body);

/* Once a request's headers are in, before its body is read: FALSE with
 * the answer (404: no such ingest pipeline, 401: no valid token) when it
 * would be refused anyway, so that no body is kept for it. */
gboolean txld_ingest_admit(const char *path, SoupMessageHeaders *headers,
                           guint *status, const char **why);

/* Whether requests to path have a body that is read (under
 * --ingest-max-body): the ingest endpoints. */
gboolean txld_ingest_path(const char *path);

/* Answers path when it is an ingest endpoint (TRUE). */
gboolean txld_ingest_handle(TxldDaemon *d, SoupServerMessage *msg,
                            const char *path);

/* After the pipeline is built, before it starts: sets up its appsrc. */
void txld_ingest_prepare(TxldPipeline *p);

/* The ingest counters of every pipeline, Prometheus text. */
void txld_ingest_metrics(TxldDaemon *d, GString *o);

#endif
