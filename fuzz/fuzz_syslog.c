/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: syslog off the network (lib/ingest/syslog.h).  The
 * input is one TCP connection's bytes, cut where its first byte says; each
 * frame is parsed and written as a record line, which must then read back
 * as a header (or none) followed by a message free of control bytes. */
#include "record.h"
#include "syslog.h"
#include "fuzz_check.h" /* after record.h: check_record */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void
on_frame(const char *p, gsize n, gpointer data)
{
  TxlSyslogMsg m;
  txl_syslog_parse(p, n, &m);
  if (m.msg.p < p || m.msg.p + m.msg.n > p + n)
    abort();
  GString *s = data;
  g_string_truncate(s, 0);
  txl_syslog_append_record(&m, s);
  check_record(s->str, s->len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  gsize piece = (gsize)data[0] + 1;
  const char *in = (const char *)data + 1;
  gsize len = size - 1;
  GString *s = g_string_new(NULL);
  TxlSyslogFramer *f = txl_syslog_framer_new(64 + data[0]);
  for (gsize at = 0; at < len; at += piece)
    txl_syslog_framer_push(f, in + at, MIN(piece, len - at), on_frame, s);
  txl_syslog_framer_finish(f, on_frame, s);
  txl_syslog_framer_free(f);
  on_frame(in, len, s); /* the whole input as one datagram */
  g_string_free(s, TRUE);
  return 0;
}
