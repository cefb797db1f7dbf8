/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Log normalisation rules: what each rule replaces on realistic lines,
 * what it must leave alone, and linear time on hostile lines. */
#include "normalize.h"
#include "txl.h"

#include <string.h>
#include "tu_test.h"

static void
on_field(TxlNormRule r, gsize start, gsize end, gpointer data)
{
  GArray *f = data;
  gsize v[3] = { r, start, end };
  g_array_append_vals(f, v, 3);
}

/* The line with each field replaced by its placeholder. */
static char *
normalize(guint rules, const char *line)
{
  GArray *f = g_array_new(FALSE, FALSE, sizeof(gsize));
  gsize len = strlen(line), at = 0;
  txl_norm_scan(rules, (const guchar *)line, len, on_field, f);
  GString *out = g_string_new(NULL);
  for (guint i = 0; i < f->len; i += 3) {
    gsize r = g_array_index(f, gsize, i), s = g_array_index(f, gsize, i + 1),
          e = g_array_index(f, gsize, i + 2);
    g_assert_cmpuint(s, >=, at);
    g_assert_cmpuint(e, >, s);
    g_string_append_len(out, line + at, (gssize)(s - at));
    g_string_append(out, txl_norm_placeholder(r));
    at = e;
  }
  g_string_append(out, line + at);
  g_array_free(f, TRUE);
  return g_string_free(out, FALSE);
}

#define CHECK(rules, in, want)                                                 \
  do {                                                                         \
    char *got_ = normalize(rules, in);                                         \
    g_assert_cmpstr(got_, ==, want);                                           \
    g_free(got_);                                                              \
  } while (0)

TU_TEST("/normalize/loghub-like", test_loghub_like)
{
  const guint A = TXL_NORM_ALL;
  /* syslog (Linux, OpenSSH) */
  CHECK(A, "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication "
           "failure; uid=0 euid=0 rhost=218.188.2.4 ",
        "<TS> combo sshd(pam_unix)[<NUM>]: authentication failure; uid=0 "
        "euid=0 rhost=<IP> ");
  CHECK(A, "Jul  1 09:01:05 calvisitor-10-105-160-95 kernel[0]: x",
        "<TS> calvisitor-<NUM>-<NUM>-<NUM>-<NUM> kernel[0]: x");
  /* HDFS: bare numbers, block ids with a sign, ip:port */
  CHECK(A, "081109 203615 148 INFO dfs.DataNode$PacketResponder: "
           "PacketResponder 1 for block blk_-6952295868487656571 terminating",
        "<NUM> <NUM> <NUM> INFO dfs.DataNode$PacketResponder: "
        "PacketResponder 1 for block blk_<NUM> terminating");
  CHECK(A, "blockMap updated: 10.251.73.220:50010 is added to "
           "blk_7128370237687728475 size 67108864",
        "blockMap updated: <IP> is added to blk_<NUM> size <NUM>");
  /* log4j / ISO */
  CHECK(A, "2015-10-18 18:01:47,978 INFO [main] keyId: -127633188)",
        "<TS> INFO [main] keyId: <NUM>)");
  CHECK(A, "at 2024-01-02T03:04:05.123+01:00 ok", "at <TS> ok");
  CHECK(A, "17/06/09 20:10:40 INFO executor", "<TS> INFO executor");
  CHECK(A, "nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 x",
        "nova-api.log.<NUM>-<TS> <TS> x");
  /* Apache ctime with a year, Android, HealthApp, Windows */
  CHECK(A, "[Sun Dec 04 04:47:44 2005] [error] mod_jk child in error state 6",
        "[<TS>] [error] mod_jk child in error state 6");
  CHECK(A, "03-17 16:13:38.811  1702  2395 D PowerManagerService: flags=0x1, "
           "wtoken{9f4ef63}",
        "<TS>  <NUM>  <NUM> D PowerManagerService: flags=<HEX>, "
        "wtoken{9f4ef63}");
  CHECK(A, "20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579",
        "<TS>|Step_LSC|<NUM>|onStandStepChanged <NUM>");
  CHECK(A, "00000001@2016/9/27:20:30:31.455 WcpInitialize (stack "
           "@0x7fed806eb5d)",
        "<NUM>@<TS> WcpInitialize (stack @<HEX>)");
  /* OpenStack: uuid, hex ids, path with an id segment */
  CHECK(A, "[req-38101a0b-2096-447d-96ea-a692162415ae "
           "113d3a99c3da401fbd62cc2caa5b96d2 - - -] 10.11.10.1 \"GET "
           "/v2/54fadb412c4e40cdbaed9335e4c35a9e/servers/detail HTTP/1.1\"",
        "[req-<UUID> <HEX> - - -] <IP> \"GET <PATH> HTTP/<NUM>\"");
  CHECK(A, "reading /data/blk_-1234567/meta and /etc/httpd/workers2.properties",
        "reading <PATH> and /etc/httpd/workers2.properties");
  /* Zookeeper: an address after a slash, IPv6 */
  CHECK(A, "[/10.10.34.11:3888:QuorumCnxManager$Listener@493]",
        "[/<IP>:QuorumCnxManager$Listener@<NUM>]");
  CHECK(A, "from fe80::1ff:fe23:4567:890a port 22, 2001:db8:0:0:0:0:2:1 ::1",
        "from <IP> port <NUM>, <IP> <IP>");
}

TU_TEST("/normalize/left-alone", test_left_alone)
{
  const guint A = TXL_NORM_ALL;
  /* single digits, numbers glued to letters, versions stay numbers */
  CHECK(A, "exit 1 code -1 took 12ms v2 x86_64",
        "exit 1 code -1 took 12ms v2 x86_<NUM>");
  CHECK(A, "Linux 6.1.7601.23505 1.2.3.4.5", "Linux <NUM> <NUM>");
  /* C++ scopes and short hex words */
  CHECK(A, "std::vector ab::cd deadbeef cafe12 0x", "std::vector ab::cd "
                                                    "deadbeef cafe12 0x");
  /* ranges and times out of range */
  CHECK(A, "10-20 25:61:00 Jan 99", "<NUM>-<NUM> <NUM>:<NUM>:<NUM> Jan <NUM>");
  /* mixed-case hex is a word, not an id */
  CHECK(A, "AbCdEf0123 abcdef0123", "AbCdEf0123 <HEX>");
  /* non-ASCII bytes are never part of a field */
  CHECK(A, "caf\xc3\xa9 12 \xff""34", "caf\xc3\xa9 <NUM> \xff<NUM>");
}

TU_TEST("/normalize/rule-subsets", test_rule_subsets)
{
  const char *line = "Jun 14 15:16:01 from 218.188.2.4:22 pid 19939";
  CHECK(0, line, line);
  CHECK(1u << TXL_NORM_NUM, line, "Jun <NUM> <NUM>:<NUM>:<NUM> from <NUM>:<NUM> "
                                  "pid <NUM>");
  CHECK(1u << TXL_NORM_IP, line, "Jun 14 15:16:01 from <IP> pid 19939");
  CHECK(1u << TXL_NORM_TS, line, "<TS> from 218.188.2.4:22 pid 19939");

  guint mask;
  g_autoptr(GError) err = NULL;
  g_assert_true(txl_norm_parse("num, ip", &mask, &err));
  g_assert_cmpuint(mask, ==, (1u << TXL_NORM_NUM) | (1u << TXL_NORM_IP));
  g_assert_true(txl_norm_parse("all", &mask, &err));
  g_assert_cmpuint(mask, ==, TXL_NORM_ALL);
  g_assert_true(txl_norm_parse("none", &mask, &err));
  g_assert_cmpuint(mask, ==, 0);
  g_assert_false(txl_norm_parse("num,zip", &mask, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  g_assert_nonnull(strstr(err->message, "zip"));
  for (int r = 0; r < TXL_NORM_N_RULES; r++) {
    const char *n = txl_norm_rule_name(r);
    g_assert_cmpint(txl_norm_rule_from_name(n, strlen(n)), ==, r);
  }
}

static void
count_field(TxlNormRule r, gsize s, gsize e, gpointer data)
{
  (*(gsize *)data)++;
}

/* Runs that a matcher reads to the end and then rejects must not be read
 * again from every later start: 1 MB of each takes milliseconds. */
TU_TEST("/normalize/linear", test_linear)
{
  static const char *const unit[] = { "1.", "/", ":", "0x", "a1", "-", "12:",
                                      "/a1b2c3d4", "1a" };
  const gsize n = 1 << 20;
  char *buf = g_malloc(n + 1);
  for (guint u = 0; u < G_N_ELEMENTS(unit); u++) {
    gsize ul = strlen(unit[u]);
    for (gsize i = 0; i < n; i++)
      buf[i] = unit[u][i % ul];
    buf[n - 1] = 'x';
    gsize fields = 0;
    gint64 t0 = g_get_monotonic_time();
    txl_norm_scan(TXL_NORM_ALL, (const guchar *)buf, n, count_field, &fields);
    double s = (g_get_monotonic_time() - t0) / 1e6;
    g_test_message("'%s' x %zu: %.3f s, %zu fields", unit[u], n / ul, s,
                   fields);
    g_assert_cmpfloat(s, <, 2.0);
  }
  g_free(buf);
}

TU_MAIN()
