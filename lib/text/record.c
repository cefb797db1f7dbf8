/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Record lines (record.h): writing them, and reading their fields back. */
#include "record.h"
#include "jsonstr.h"

#include <string.h>

static gboolean
key_ok(const char *k)
{
  if (!k || !*k)
    return FALSE;
  for (const char *p = k; *p; p++)
    if (!g_ascii_isalnum(*p) && *p != '_' && *p != '.' && *p != '-')
      return FALSE;
  return TRUE;
}

/* Control bytes (and DEL) would end a field, a header or the line. */
static void
append_clean(GString *out, const char *s, gsize n)
{
  for (gsize i = 0; i < n; i++) {
    guchar c = (guchar)s[i];
    g_string_append_c(out, c < 0x20 || c == 0x7f ? ' ' : (char)c);
  }
}

void
txl_record_append(GString *out, const TxlRecordField *fields, gsize n,
                  const char *msg, gsize msg_len)
{
  gsize start = out->len;
  for (gsize i = 0; i < n; i++) {
    const TxlRecordField *f = &fields[i];
    gsize len = !f->value ? 0 : f->len < 0 ? strlen(f->value) : (gsize)f->len;
    if (len == 0 || !key_ok(f->key))
      continue;
    /* the header stays within TXL_RECORD_MAX_HEADER, its closing RS
     * included: a value that would not fit is cut, later fields dropped */
    gsize used = out->len - start, need = 1 + strlen(f->key) + 1 + 1;
    if (used + need >= TXL_RECORD_MAX_HEADER)
      break;
    len = MIN(len, TXL_RECORD_MAX_HEADER - used - need);
    g_string_append_c(out, out->len > start ? TXL_RECORD_US : TXL_RECORD_RS);
    g_string_append(out, f->key);
    g_string_append_c(out, '=');
    append_clean(out, f->value, len);
  }
  if (out->len > start)
    g_string_append_c(out, TXL_RECORD_RS);
  append_clean(out, msg, msg_len);
  g_string_append_c(out, '\n');
}

void
txl_record_time(char *buf, gsize size, gint64 sec, guint64 frac,
                guint digits)
{
  buf[0] = '\0';
  GDateTime *t = g_date_time_new_from_unix_utc(sec);
  if (!t)
    return; /* outside what a date can say */
  gchar *s = g_date_time_format(t, "%Y-%m-%dT%H:%M:%S");
  g_date_time_unref(t);
  if (digits)
    g_snprintf(buf, size, "%s.%0*" G_GUINT64_FORMAT "Z", s, (int)digits, frac);
  else
    g_snprintf(buf, size, "%sZ", s);
  g_free(s);
}

const char *
txl_record_severity_name(int level)
{
  static const char *const names[] = { "emerg", "alert", "crit", "err",
                                       "warning", "notice", "info", "debug" };
  return level >= 0 && level < 8 ? names[level] : NULL;
}

gsize
txl_record_header_len(const char *line, gsize len)
{
  if (len < 2 || (guchar)line[0] != TXL_RECORD_RS)
    return 0;
  gsize limit = MIN(len, (gsize)TXL_RECORD_MAX_HEADER);
  for (gsize i = 1; i < limit; i++) {
    guchar c = (guchar)line[i];
    if (c == TXL_RECORD_RS)
      return i + 1;
    if (c == '\n')
      return 0;
  }
  return 0;
}

gboolean
txl_record_next_field(const char *line, gsize header_len, gsize *pos,
                      const char **key, gsize *key_len, const char **value,
                      gsize *value_len)
{
  if (header_len < 2)
    return FALSE;
  gsize end = header_len - 1; /* the closing RS */
  gsize i = *pos == 0 ? 1 : *pos;
  while (i < end) {
    gsize j = i;
    while (j < end && (guchar)line[j] != TXL_RECORD_US)
      j++;
    *pos = j < end ? j + 1 : end;
    const char *eq = memchr(line + i, '=', j - i);
    if (eq && eq > line + i) {
      *key = line + i;
      *key_len = (gsize)(eq - (line + i));
      *value = eq + 1;
      *value_len = (gsize)(line + j - (eq + 1));
      return TRUE;
    }
    i = *pos; /* a field without '=' is skipped */
  }
  return FALSE;
}

gboolean
txl_record_get(const char *line, gsize header_len, const char *key,
               const char **value, gsize *value_len)
{
  gsize pos = 0, kl, klen = strlen(key);
  const char *k;
  while (txl_record_next_field(line, header_len, &pos, &k, &kl, value,
                               value_len))
    if (kl == klen && memcmp(k, key, kl) == 0)
      return TRUE;
  return FALSE;
}

void
txl_record_append_json(GString *out, const char *line, gsize header_len)
{
  gsize pos = 0, kl, vl;
  const char *k, *v;
  gboolean first = TRUE;
  g_string_append_c(out, '{');
  while (txl_record_next_field(line, header_len, &pos, &k, &kl, &v, &vl)) {
    if (!first)
      g_string_append(out, ", ");
    first = FALSE;
    txl_json_append_string(out, k, kl);
    g_string_append(out, ": ");
    txl_json_append_string(out, v, vl);
  }
  g_string_append_c(out, '}');
}
