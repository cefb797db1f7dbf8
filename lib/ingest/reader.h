/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A log stream's lines turned into record lines (record.h), as txltokenizer
 * reads them with `format` set:
 *
 * - JSON lines (Docker, Kubernetes, `journalctl -o json`, Vector, Fluent
 *   Bit): the message field becomes the text, time, host, app, severity
 *   and a chosen session field ride in the header.  Field names are
 *   detected from the common shapes unless set.
 * - text lines: a trailing CR is dropped; lines matching a continuation
 *   rule (a stack trace's "\tat ...") join the record before them.
 *
 * Streaming: bytes go in however they were cut, complete record lines come
 * out; the state between pushes is bytes (get/set) for snapshots. */
#ifndef TXL_READER_H
#define TXL_READER_H

#include <glib.h>

typedef enum {
  TXL_FORMAT_RAW = 0,  /* bytes pass through untouched */
  TXL_FORMAT_AUTO = 1, /* a line that is a JSON object is JSON, others text */
  TXL_FORMAT_JSON = 2, /* every line is JSON; one that is not is text, counted */
  TXL_FORMAT_TEXT = 3, /* text lines (CR dropped, continuation joined) */
} TxlFormat;

typedef struct {
  TxlFormat format;
  /* JSON paths ("kubernetes.pod_name"); NULL or "": detect (reader.c's
   * lists); session: NULL = none */
  const char *message_field, *time_field, *host_field, *session_field;
  /* GRegex (PCRE): a text line it matches continues the record before it;
   * NULL or "": none */
  const char *continuation;
  gsize max_record; /* bytes of one record at most (longer: cut) */
} TxlRecordReaderOptions;

#define TXL_RECORD_READER_OPTIONS_DEFAULT                                             \
  { TXL_FORMAT_AUTO, NULL, NULL, NULL, NULL, NULL, 1u << 20 }

typedef struct _TxlRecordReader TxlRecordReader;

/* NULL with error for a bad continuation rule or field path. */
TxlRecordReader *txl_record_reader_new(const TxlRecordReaderOptions *o, GError **error);
void txl_record_reader_free(TxlRecordReader *r);
/* Appends the record lines completed by data to out. */
void txl_record_reader_push(TxlRecordReader *r, const char *data, gsize len,
                     GString *out);
/* End of input: what is held (a line without its end, a record waiting
 * for continuation lines) goes out; an unterminated last line stays
 * without a line end. */
void txl_record_reader_finish(TxlRecordReader *r, GString *out);

/* Counters since creation: JSON lines without a message field (scored as
 * their whole text), lines that looked like JSON but did not parse, and
 * records cut at max_record. */
typedef struct {
  guint64 records, no_message, bad_json, cut;
} TxlRecordReaderStats;
void txl_record_reader_stats(const TxlRecordReader *r, TxlRecordReaderStats *s);

/* What is held between pushes, as bytes; set checks them (FALSE, nothing
 * changed, on malformed bytes). */
GBytes *txl_record_reader_save(const TxlRecordReader *r);
gboolean txl_record_reader_restore(TxlRecordReader *r, GBytes *state,
                            GError **error);

#endif
