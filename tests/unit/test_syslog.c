/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Syslog (lib/ingest/syslog.h): RFC 5424 and RFC 3164 messages split into
 * fields and message, and RFC 6587 framing of a TCP stream, found the same
 * however the bytes arrive. */
#include "testutil.h"
#include "record.h"
#include "syslog.h"
#include "tu_test.h"

static void
assert_span(TxlSpan s, const char *want)
{
  g_assert_cmpmem(s.p, s.n, want, strlen(want));
}

TU_TEST("/syslog/rfc5424", test_rfc5424)
{
  const char *m1 = "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com "
                   "evntslog - ID47 [exampleSDID@32473 iut=\"3\" "
                   "note=\"a \\] b\"][x@1 k=\"v\"] \xef\xbb\xbf" "An entry\r\n";
  TxlSyslogMsg m;
  txl_syslog_parse(m1, strlen(m1), &m);
  g_assert_cmpint(m.pri, ==, 165);
  g_assert_cmpint(m.version, ==, 1);
  assert_span(m.time, "2003-10-11T22:14:15.003Z");
  assert_span(m.host, "mymachine.example.com");
  assert_span(m.app, "evntslog");
  assert_span(m.procid, "");
  assert_span(m.msgid, "ID47");
  assert_span(m.sd, "[exampleSDID@32473 iut=\"3\" note=\"a \\] b\"][x@1 k=\"v\"]");
  assert_span(m.msg, "An entry");
  GString *s = g_string_new(NULL);
  txl_syslog_append_record(&m, s);
  gsize h = txl_record_header_len(s->str, s->len);
  g_assert_cmpuint(h, >, 0);
  g_assert_cmpstr(s->str + h, ==, "An entry\n");
  const char *v;
  gsize vl;
  tu_assert_field(s->str, h, "severity", "notice"); /* 165 = local4.notice */
  tu_assert_field(s->str, h, "facility", "local4");
  g_assert_false(txl_record_get(s->str, h, "procid", &v, &vl));
  g_string_free(s, TRUE);

  const char *m2 = "<14>1 - - - - - - just text";
  txl_syslog_parse(m2, strlen(m2), &m);
  g_assert_cmpint(m.pri, ==, 14);
  assert_span(m.host, "");
  assert_span(m.sd, "");
  assert_span(m.msg, "just text");
}

TU_TEST("/syslog/rfc3164", test_rfc3164)
{
  static const struct {
    const char *in, *time, *host, *app, *pid, *msg;
  } cases[] = {
    { "<34>Oct 11 22:14:15 mymachine su: 'su root' failed",
      "Oct 11 22:14:15", "mymachine", "su", "", "'su root' failed" },
    { "<13>Nov  5 16:45:27 web1 sshd[123]: Accepted password\n",
      "Nov  5 16:45:27", "web1", "sshd", "123", "Accepted password" },
    { "<13>Nov 25 16:45:27 myapp: local, no host",
      "Nov 25 16:45:27", "", "myapp", "", "local, no host" },
    { "<13>2026-11-25T16:45:27.120+00:00 h1 cron[9]: job",
      "2026-11-25T16:45:27.120+00:00", "h1", "cron", "9", "job" },
    { "<13>Nov 25 16:45:27 h2 no tag here",
      "Nov 25 16:45:27", "h2", "", "", "no tag here" },
    { "<13>not a time", "", "", "", "", "not a time" },
    { "plain line without pri", "", "", "", "", "plain line without pri" },
    { "<999>bad pri", "", "", "", "", "<999>bad pri" },
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    TxlSyslogMsg m;
    txl_syslog_parse(cases[i].in, strlen(cases[i].in), &m);
    assert_span(m.time, cases[i].time);
    assert_span(m.host, cases[i].host);
    assert_span(m.app, cases[i].app);
    assert_span(m.procid, cases[i].pid);
    assert_span(m.msg, cases[i].msg);
    g_assert_cmpint(m.version, ==, 0);
  }
}

typedef struct {
  GPtrArray *frames;
} Got;

static void
on_frame(const char *p, gsize n, gpointer data)
{
  Got *g = data;
  g_ptr_array_add(g->frames, g_strndup(p, n));
}

/* Frames of `in` fed in pieces of `piece` bytes (0: whole). */
static guint
frame_all(const char *in, gsize len, gsize piece, gsize max, Got *g)
{
  TxlSyslogFramer *f = txl_syslog_framer_new(max);
  guint bad = 0;
  for (gsize at = 0; at < len;) {
    gsize n = piece ? MIN(piece, len - at) : len;
    bad += txl_syslog_framer_push(f, in + at, n, on_frame, g);
    at += n;
  }
  bad += txl_syslog_framer_finish(f, on_frame, g);
  txl_syslog_framer_free(f);
  return bad;
}

TU_TEST("/syslog/framing", test_framing)
{
  /* octet counting (a frame may hold a line end), newline framing, CRLF,
   * lines that start with numbers but no count, a last frame without its
   * line end */
  const char in[] = "11 <13>hello A"
                    "13 <13>two\nlines"
                    "<13>newline framed\r\n"
                    "\n"
                    "5x <13>not a count\n"
                    "261103 080000 35 INFO plain\n"
                    "7 <13>abc"
                    "<13>no end";
  const char *want[] = { "<13>hello A", "<13>two\nlines",
                         "<13>newline framed\r", "5x <13>not a count",
                         "261103 080000 35 INFO plain", "<13>abc",
                         "<13>no end" };
  for (gsize piece = 0; piece < 9; piece++) {
    Got g = { g_ptr_array_new_with_free_func(g_free) };
    guint bad = frame_all(in, sizeof in - 1, piece, 1024, &g);
    g_assert_cmpuint(bad, ==, 0);
    g_assert_cmpuint(g.frames->len, ==, G_N_ELEMENTS(want));
    for (guint i = 0; i < g.frames->len; i++)
      g_assert_cmpstr(g_ptr_array_index(g.frames, i), ==, want[i]);
    g_ptr_array_unref(g.frames);
  }
  /* cut at max bytes, counted; the next frame is intact */
  Got g = { g_ptr_array_new_with_free_func(g_free) };
  const char big[] = "20 <bcdefghijklmnopqrst"
                     "abcdefghij-long-line\n"
                     "ok\n";
  g_assert_cmpuint(frame_all(big, sizeof big - 1, 3, 8, &g), ==, 2);
  g_assert_cmpuint(g.frames->len, ==, 3);
  g_assert_cmpstr(g_ptr_array_index(g.frames, 0), ==, "<bcdefgh");
  g_assert_cmpstr(g_ptr_array_index(g.frames, 1), ==, "abcdefgh");
  g_assert_cmpstr(g_ptr_array_index(g.frames, 2), ==, "ok");
  g_ptr_array_unref(g.frames);
  /* a count the connection's end cut short */
  g.frames = g_ptr_array_new_with_free_func(g_free);
  g_assert_cmpuint(frame_all("30 <short", 9, 0, 64, &g), ==, 1);
  g_assert_cmpuint(g.frames->len, ==, 1);
  g_assert_cmpstr(g_ptr_array_index(g.frames, 0), ==, "<short");
  g_ptr_array_unref(g.frames);
  /* too many digits is no count */
  g.frames = g_ptr_array_new_with_free_func(g_free);
  g_assert_cmpuint(frame_all("12345678901 <x\n", 15, 0, 64, &g), ==, 0);
  g_assert_cmpstr(g_ptr_array_index(g.frames, 0), ==, "12345678901 <x");
  g_ptr_array_unref(g.frames);
}

TU_MAIN()
