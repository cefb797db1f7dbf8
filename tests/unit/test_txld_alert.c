/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txld's Retry-After parser (tools/txld/txld_alert.c, docs/alerts.md):
 * delay-seconds and the three HTTP-date forms, the 60 s bound, and the
 * values that leave the fixed 1, 2, 4 s schedule in place (-1). */
#include "txld_alert.h"
#include "tu_test.h"

#include <glib.h>

/* Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example */
#define EXAMPLE_US ((gint64)784111777 * G_USEC_PER_SEC)

TU_TEST("/txld-alert/retry-after/seconds", test_seconds)
{
  g_assert_cmpint(txld_alert_retry_after_ms("3", 0), ==, 3000);
  g_assert_cmpint(txld_alert_retry_after_ms(" 3\t", 0), ==, 3000);
  g_assert_cmpint(txld_alert_retry_after_ms("1", 0), ==, 1000);
  g_assert_cmpint(txld_alert_retry_after_ms("0005", 0), ==, 5000);
  g_assert_cmpint(txld_alert_retry_after_ms("60", 0), ==, 60000);
  /* longer than the bound, or than any integer: the bound */
  g_assert_cmpint(txld_alert_retry_after_ms("61", 0), ==, 60000);
  g_assert_cmpint(txld_alert_retry_after_ms("86400", 0), ==, 60000);
  g_assert_cmpint(txld_alert_retry_after_ms("4294967297", 0), ==, 60000);
  g_assert_cmpint(txld_alert_retry_after_ms("18446744073709551617", 0), ==,
                  60000);
  g_assert_cmpint(
      txld_alert_retry_after_ms("99999999999999999999999999999999999999", 0),
      ==, 60000);
}

TU_TEST("/txld-alert/retry-after/unusable", test_unusable)
{
  static const char *const bad[] = {
    "", " ", "\t", "0", "000", "-5", "-0", "+5", "5.5", "5s", "3 4", "3, 4",
    "0x10", "1e3", "soon", "-", "Retry-After: 3", "\xff\xfe",
  };
  g_assert_cmpint(txld_alert_retry_after_ms(NULL, 0), ==, -1);
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *shown = g_strescape(bad[i], NULL);
    g_test_message("'%s'", shown);
    g_assert_cmpint(txld_alert_retry_after_ms(bad[i], EXAMPLE_US), ==, -1);
  }
}

TU_TEST("/txld-alert/retry-after/date", test_date)
{
  const gint64 before = EXAMPLE_US - 10 * G_USEC_PER_SEC;
  /* IMF-fixdate and the obsolete RFC 850 and asctime forms */
  g_assert_cmpint(txld_alert_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT",
                                            before), ==, 10000);
  g_assert_cmpint(txld_alert_retry_after_ms("Sunday, 06-Nov-94 08:49:37 GMT",
                                            before), ==, 10000);
  g_assert_cmpint(txld_alert_retry_after_ms("Sun Nov  6 08:49:37 1994",
                                            before), ==, 10000);
  /* part of a second away: the milliseconds left */
  g_assert_cmpint(txld_alert_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT",
                                            EXAMPLE_US - 250000), ==, 250);
  /* far ahead: the bound */
  g_assert_cmpint(txld_alert_retry_after_ms("Fri, 31 Dec 9999 23:59:59 GMT",
                                            before), ==, 60000);
  g_assert_cmpint(txld_alert_retry_after_ms("Sun, 06 Nov 1994 08:59:37 GMT",
                                            before), ==, 60000);
  /* now or past */
  g_assert_cmpint(txld_alert_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT",
                                            EXAMPLE_US), ==, -1);
  g_assert_cmpint(txld_alert_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT",
                                            EXAMPLE_US + 1), ==, -1);
  g_assert_cmpint(txld_alert_retry_after_ms("Thu, 01 Jan 1970 00:00:00 GMT",
                                            g_get_real_time()), ==, -1);
  /* not a date */
  g_assert_cmpint(txld_alert_retry_after_ms("Sun, 06 Foo 1994 08:49:37 GMT",
                                            before), ==, -1);
  g_assert_cmpint(txld_alert_retry_after_ms("Sun, 06 Nov", before), ==, -1);
}

TU_MAIN()
