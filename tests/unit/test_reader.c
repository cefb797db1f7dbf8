/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Record reader (lib/ingest/reader.h): JSON lines of the common shapes into
 * record lines, CR dropped, continuation lines joined, cut records; the
 * same output however the input is cut and across saved states. */
#include "testutil.h"
#include "reader.h"
#include "record.h"
#include "tu_test.h"

#define RS "\x1e"
#define US "\x1f"

/* The reader's output for in, pushed in pieces of piece bytes (0: whole),
 * its state saved and restored into a new reader after every push when
 * resume is set. */
static gchar *
read_all(const TxlRecordReaderOptions *o, const char *in, gsize piece,
         gboolean resume)
{
  GError *err = NULL;
  TxlRecordReader *r = txl_record_reader_new(o, &err);
  g_assert_no_error(err);
  GString *out = g_string_new(NULL);
  gsize len = strlen(in);
  for (gsize at = 0; at < len;) {
    gsize n = piece ? MIN(piece, len - at) : len;
    txl_record_reader_push(r, in + at, n, out);
    at += n;
    if (resume) {
      GBytes *st = txl_record_reader_save(r);
      txl_record_reader_free(r);
      r = txl_record_reader_new(o, &err);
      g_assert_true(txl_record_reader_restore(r, st, &err));
      g_bytes_unref(st);
    }
  }
  txl_record_reader_finish(r, out);
  txl_record_reader_free(r);
  return g_string_free(out, FALSE);
}

static void
check_pieces(const TxlRecordReaderOptions *o, const char *in, const char *want)
{
  for (gsize piece = 0; piece < 12; piece++)
    for (int resume = 0; resume < 2; resume++) {
      gchar *got = read_all(o, in, piece, resume);
      g_assert_cmpstr(got, ==, want);
      g_free(got);
    }
}

/* check_pieces, then the same options with *field (one of o's) set to bad:
 * the reader refuses them, with a reason. */
static void
check_then_refused(TxlRecordReaderOptions *o, const char *in, const char *want,
                   const char **field, const char *bad)
{
  check_pieces(o, in, want);
  *field = bad;
  g_autoptr(GError) err = NULL;
  g_assert_null(txl_record_reader_new(o, &err));
  g_assert_nonnull(err);
}

TU_TEST("/reader/json-shapes", test_json_shapes)
{
  TxlRecordReaderOptions o = TXL_RECORD_READER_OPTIONS_DEFAULT;
  /* Docker json-file, journalctl -o json, a JSON logger, a plain line, a
   * line that only looks like JSON, a record line already */
  const char *in =
      "{\"log\":\"GET /x 200\\n\",\"stream\":\"stdout\",\"time\":\"2026-11-25T10:00:00Z\"}\n"
      "{\"MESSAGE\":\"Started foo\",\"_HOSTNAME\":\"h1\",\"SYSLOG_IDENTIFIER\":\"systemd\","
      "\"PRIORITY\":\"6\",\"__REALTIME_TIMESTAMP\":\"1700000000000000\"}\r\n"
      "{\"level\":\"error\",\"msg\":\"db down\",\"ts\":1.5,\"n\":{\"deep\":[1,2]}}\n"
      "plain\ttext line\r\n"
      "{not json\n"
      RS "app=x" RS "already a record\n";
  const char *want =
      RS "time=2026-11-25T10:00:00Z" RS "GET /x 200\n"
      RS "host=h1" US "app=systemd" US "time=1700000000000000" US "severity=info" RS
      "Started foo\n"
      RS "time=1.5" US "severity=error" RS "db down\n"
      "plain\ttext line\n"
      "{not json\n"
      RS "app=x" RS "already a record\n";
  check_pieces(&o, in, want);
  GError *err = NULL;
  TxlRecordReader *r = txl_record_reader_new(&o, &err);
  GString *out = g_string_new(NULL);
  txl_record_reader_push(r, in, strlen(in), out);
  TxlRecordReaderStats st;
  txl_record_reader_stats(r, &st);
  g_assert_cmpuint(st.records, ==, 6);
  g_assert_cmpuint(st.bad_json, ==, 1);
  g_assert_cmpuint(st.no_message, ==, 0);
  txl_record_reader_free(r);
  g_string_free(out, TRUE);
}

TU_TEST("/reader/json-fields-set", test_json_fields_set)
{
  TxlRecordReaderOptions o = TXL_RECORD_READER_OPTIONS_DEFAULT;
  o.message_field = "event.text";
  o.host_field = "src";
  o.session_field = "kubernetes.pod_name";
  const char *in =
      "{\"event\":{\"text\":\"hello\\u0007there\"},\"src\":\"a\",\"message\":\"not this\","
      "\"kubernetes\":{\"pod_name\":\"web-1\"}}\n"
      "{\"other\":\"no message here\"}\n";
  const char *want =
      RS "host=a" US "session=web-1" RS "hello there\n"
      "{\"other\":\"no message here\"}\n";
  /* then a field name that is not one */
  check_then_refused(&o, in, want, &o.message_field, "a b");
  /* nor are dots without a name between, before or after them */
  const char *dots[] = { ".", "..", "a..b", ".a", "a." };
  for (guint i = 0; i < G_N_ELEMENTS(dots); i++) {
    o.message_field = dots[i];
    g_autoptr(GError) err = NULL;
    g_assert_null(txl_record_reader_new(&o, &err));
    g_assert_nonnull(err);
  }
}

TU_TEST("/reader/text-continuation", test_text_continuation)
{
  TxlRecordReaderOptions o = TXL_RECORD_READER_OPTIONS_DEFAULT;
  o.format = TXL_FORMAT_TEXT;
  o.continuation = "^(\\s|Caused by:)";
  const char *in = "Exception in thread main\r\n"
                   "\n"
                   "\tat a.B.c(B.java:1)\n"
                   "Caused by: x\n"
                   "next line\n"
                   "{\"msg\":\"json is text here\"}\n"
                   "  tail";
  const char *want2 = "Exception in thread main\n"
                      "\tat a.B.c(B.java:1) Caused by: x\n"
                      "next line\n"
                      "{\"msg\":\"json is text here\"}   tail";
  check_then_refused(&o, in, want2, &o.continuation, "(");
}

TU_TEST("/reader/cut-and-state", test_cut_and_state)
{
  TxlRecordReaderOptions o = TXL_RECORD_READER_OPTIONS_DEFAULT;
  o.max_record = 64;
  gchar *big = g_strnfill(200, 'x');
  gchar *in = g_strconcat(big, "\nok\n", NULL);
  gchar *want = g_strconcat("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                            "\nok\n", NULL);
  check_pieces(&o, in, want);
  g_free(big);
  g_free(in);
  g_free(want);
  /* malformed states are refused */
  GError *err = NULL;
  TxlRecordReader *r = txl_record_reader_new(&o, &err);
  static const guint8 bad[] = { 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
                                '\n', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
  GBytes *b = g_bytes_new_static(bad, sizeof bad);
  g_assert_false(txl_record_reader_restore(r, b, &err));
  g_assert_nonnull(err);
  g_clear_error(&err);
  g_bytes_unref(b);
  txl_record_reader_free(r);
}

TU_MAIN()
