/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* OTLP logs (OpenTelemetry's ExportLogsServiceRequest, opentelemetry-proto
 * logs v1) into record lines (record.h), for txld's POST /v1/logs
 * (docs/ingest.md).  Both encodings of OTLP/HTTP: protobuf, read by a
 * small bounded decoder of the wire format (only the messages and fields
 * below), and JSON (json-glib, after a depth check).
 *
 * Each LogRecord becomes one line: its body (a string as it is, any other
 * value as its JSON text), with fields
 *
 *   app      the resource attribute service.name
 *   host     the resource attribute host.name
 *   severity severityText, or the name of severityNumber (INFO, WARN...)
 *   time     timeUnixNano (observedTimeUnixNano when 0), RFC 3339 UTC
 *   session  the attribute named by session_attr, log record first,
 *            then resource
 *
 * Strings are copied byte for byte: bytes that are not UTF-8 reach the
 * line unchanged (record lines only turn control bytes into spaces). */
#ifndef TXL_OTLP_H
#define TXL_OTLP_H

#include <glib.h>

/* AnyValue nesting (arrays and key-value lists in a body or attribute)
 * deeper than this is refused: the decoder recurses once per level. */
#define TXL_OTLP_MAX_DEPTH 32

/* Appends one record line per LogRecord to out and counts them in
 * *records.  All or nothing: on a malformed request FALSE, an error, and
 * out as it was. */
gboolean txl_otlp_logs_protobuf(const guint8 *data, gsize len,
                                const char *session_attr, GString *out,
                                guint64 *records, GError **error);
gboolean txl_otlp_logs_json(const char *data, gsize len,
                            const char *session_attr, GString *out,
                            guint64 *records, GError **error);

#endif
