/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Record lines: a log line with named fields riding in front of it.
 *
 * Sources that parse a protocol (syslog, JSON lines, the journal) know more
 * than the message: host, program, severity, time.  They write each record
 * as one line of text,
 *
 *     RS key=value US key=value ... RS message LF
 *
 * (RS = 0x1E, US = 0x1F, ASCII's record and unit separators), so that the
 * fields travel through every element, queue and snapshot exactly as the
 * text does.  The tokenizer skips the header: only the message is scored
 * and counted in a line's bytes.  A line that does not start with RS is a
 * plain line, all message.  Keys are [A-Za-z0-9_.-]; values and messages
 * never hold a control byte (the writer turns each into a space), so RS,
 * US and LF cannot be forged from inside a field. */
#ifndef TXL_RECORD_H
#define TXL_RECORD_H

#include <glib.h>

/* The field a source writes its resume position into (txljournalsrc: the
 * entry's journal cursor): txltokenizer keeps the last one it took in. */
#define TXL_RECORD_CURSOR "cursor"

#define TXL_RECORD_RS 0x1e
#define TXL_RECORD_US 0x1f
/* A header longer than this is not one: the tokenizer reads the rest of
 * the line as text, so a stray RS cannot hide a whole stream. */
#define TXL_RECORD_MAX_HEADER 8192

typedef struct {
  const char *key;
  const char *value; /* need not be NUL-terminated */
  gssize len;        /* bytes of value, -1: up to its NUL */
} TxlRecordField;

/* Appends one record line (with its LF) to out.  Fields with a NULL or
 * empty value are left out; without any, the line is the message alone.
 * Control bytes in values and message become spaces; a key that is not
 * [A-Za-z0-9_.-]+ is left out. */
void txl_record_append(GString *out, const TxlRecordField *fields, gsize n,
                       const char *msg, gsize msg_len);

/* Whether the encoder's next byte starts a line (so a record header may
 * follow): what a reader of the same bytes needs to find headers itself. */
typedef struct _TxlEncoder TxlEncoder;
gboolean txl_encoder_at_line_start(const TxlEncoder *e);

/* Bytes of line's header, both RS included: 0 for a plain line (or one
 * whose header does not close within TXL_RECORD_MAX_HEADER). */
gsize txl_record_header_len(const char *line, gsize len);

/* Walks the fields of a header (as txl_record_header_len measured it):
 * start with *pos = 0; each call gives the next field and returns TRUE. */
gboolean txl_record_next_field(const char *line, gsize header_len,
                               gsize *pos, const char **key, gsize *key_len,
                               const char **value, gsize *value_len);

/* The value of one field, or FALSE when the header has none. */
gboolean txl_record_get(const char *line, gsize header_len, const char *key,
                        const char **value, gsize *value_len);

/* The "time" field every source writes: an instant since the epoch as
 * RFC 3339 UTC, "2026-11-25T17:02:09.621898Z", with `digits` decimals
 * (0, 3, 6 or 9) of the fraction frac (in units of 10^-digits s).  An
 * empty string when it cannot be written.  buf: TXL_RECORD_TIME_MAX. */
#define TXL_RECORD_TIME_MAX 48
void txl_record_time(char *buf, gsize size, gint64 sec, guint64 frac,
                     guint digits);

/* Syslog's name of a severity 0..7 ("emerg" ... "debug"), the "severity"
 * field every source writes; NULL outside that range. */
const char *txl_record_severity_name(int level);

/* Appends the header's fields as one JSON object ({} without any). */
void txl_record_append_json(GString *out, const char *line, gsize header_len);

#endif
