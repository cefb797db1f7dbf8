/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Syslog as it arrives on the network: framing of a TCP byte stream
 * (RFC 6587: octet counting and newline framing), and the messages
 * themselves (RFC 5424 and the traditional RFC 3164 form), turned into
 * record lines (record.h) whose message is what gets scored. */
#ifndef TXL_SYSLOG_H
#define TXL_SYSLOG_H

#include <glib.h>

typedef struct {
  const char *p;
  gsize n;
} TxlSpan;

/* One message, its parts pointing into the parsed bytes; an absent part
 * (or RFC 5424's nil value "-") is empty. */
typedef struct {
  int pri;      /* 0..191, -1 without one */
  int version;  /* 1 for RFC 5424, 0 otherwise */
  TxlSpan time, host, app, procid, msgid, sd, msg;
} TxlSyslogMsg;

/* Never fails: what is not a header is message (a line without PRI is all
 * message).  A trailing CR/LF and RFC 5424's UTF-8 BOM are left out. */
void txl_syslog_parse(const char *data, gsize len, TxlSyslogMsg *out);

/* Appends the message as one record line: fields host, app, procid,
 * msgid, time, facility, severity, sd; the message as its text. */
void txl_syslog_append_record(const TxlSyslogMsg *m, GString *out);

/* ---- framing of one TCP connection ------------------------------------ */

typedef struct _TxlSyslogFramer TxlSyslogFramer;

/* Called with each complete frame (its bytes stay valid for the call). */
typedef void (*TxlFrameFunc)(const char *frame, gsize len, gpointer data);

/* Frames longer than max_frame bytes are cut there: the first max_frame
 * bytes are delivered, the rest dropped, and the frame counts as
 * malformed. */
TxlSyslogFramer *txl_syslog_framer_new(gsize max_frame);
void txl_syslog_framer_free(TxlSyslogFramer *f);
/* Each frame found in data goes to func; either framing is recognised per
 * frame: one that starts with a number, a space and '<' (a PRI) is
 * octet-counted, any other is read up to its line end.  Returns how many
 * malformed frames it met: frames cut at max_frame. */
guint txl_syslog_framer_push(TxlSyslogFramer *f, const char *data, gsize len,
                             TxlFrameFunc func, gpointer user_data);
/* The connection ended: a frame it was reading is delivered as it is
 * (counted malformed when its octet count promised more). */
guint txl_syslog_framer_finish(TxlSyslogFramer *f, TxlFrameFunc func,
                               gpointer user_data);

#endif
