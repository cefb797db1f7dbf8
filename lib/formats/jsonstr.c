/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "jsonstr.h"

#include <math.h>

void
txl_json_append_string(GString *out, const char *s, gsize len)
{
  const char *p = s, *end = s + len;
  g_string_append_c(out, '"');
  while (p < end) {
    gunichar ch = g_utf8_get_char_validated(p, end - p);
    if (ch == (gunichar)-1 || ch == (gunichar)-2) {
      g_string_append(out, "\\ufffd"); /* one invalid byte */
      p++;
      continue;
    }
    const char *next = g_utf8_next_char(p);
    if (ch == '"' || ch == '\\')
      g_string_append_printf(out, "\\%c", (char)ch);
    else if (ch < 0x20)
      g_string_append_printf(out, "\\u%04x", ch);
    else
      g_string_append_len(out, p, next - p);
    p = next;
  }
  g_string_append_c(out, '"');
}

void
txl_json_append_double(GString *out, const char *fmt, double v)
{
  if (!isfinite(v)) {
    g_string_append(out, "null");
    return;
  }
  g_string_append_printf(out, fmt, v);
}
