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

/* LogRecords refused one by one, the rest of the request taken (OTLP's
 * partial success): a record whose body is missing or empty (nothing to
 * score), whose own bytes are not well-formed protobuf (its length fitted
 * its ScopeLogs: the rest of the request is intact), or, in JSON, a
 * logRecords element that is not an object. */
typedef struct {
  guint64 count;
  const char *first; /* why the first one was refused; NULL when none */
} TxlOtlpRejected;

/* Appends one record line per LogRecord taken to out and counts them in
 * *records, those refused in *rejected (may be NULL).  A malformed request
 * around the records (its ResourceLogs, Resource or ScopeLogs, or JSON
 * that does not parse: TXL_ERROR_FORMAT), or one whose lines come to more
 * than max_out bytes (each line repeats its resource's fields, so a small
 * request can decode to far more) or whose JSON holds more than
 * TXL_JSON_MAX_BATCH_VALUES values (TXL_ERROR_INVALID), is all or nothing:
 * FALSE, an error, out as it was and nothing counted. */
gboolean txl_otlp_logs_protobuf(const guint8 *data, gsize len,
                                const char *session_attr, gsize max_out,
                                GString *out, guint64 *records,
                                TxlOtlpRejected *rejected, GError **error);
gboolean txl_otlp_logs_json(const char *data, gsize len,
                            const char *session_attr, gsize max_out,
                            GString *out, guint64 *records,
                            TxlOtlpRejected *rejected, GError **error);

#endif
