/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Log field recognition for the normalising tokenizer.  Every matcher is a
 * small hand-written recogniser: no regex engine, so what matches is fixed
 * by this file and TXL_NORM_VERSION alone, and the scan is linear. */
#include "normalize.h"
#include "txl.h"

#include <string.h>

static const char *const rule_names[TXL_NORM_N_RULES] = {
  "uuid", "ts", "ip", "path", "hex", "num",
};

static const char *const placeholders[TXL_NORM_N_RULES] = {
  "<UUID>", "<TS>", "<IP>", "<PATH>", "<HEX>", "<NUM>",
};

const char *
txl_norm_rule_name(TxlNormRule r)
{
  return (unsigned)r < TXL_NORM_N_RULES ? rule_names[r] : NULL;
}

const char *
txl_norm_placeholder(TxlNormRule r)
{
  return (unsigned)r < TXL_NORM_N_RULES ? placeholders[r] : NULL;
}

int
txl_norm_rule_from_name(const char *name, gsize len)
{
  for (int r = 0; r < TXL_NORM_N_RULES; r++)
    if (strlen(rule_names[r]) == len && memcmp(rule_names[r], name, len) == 0)
      return r;
  return -1;
}

gboolean
txl_norm_parse(const char *spec, guint *mask, GError **error)
{
  *mask = 0;
  if (!spec || strcmp(spec, "none") == 0 || !*spec)
    return TRUE;
  if (strcmp(spec, "all") == 0) {
    *mask = TXL_NORM_ALL;
    return TRUE;
  }
  g_auto(GStrv) parts = g_strsplit(spec, ",", -1);
  for (int i = 0; parts[i]; i++) {
    const char *p = g_strstrip(parts[i]);
    int r = txl_norm_rule_from_name(p, strlen(p));
    if (r < 0) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "unknown normalisation rule '%s' (known: uuid, ts, ip, "
                  "path, hex, num, all, none)", p);
      return FALSE;
    }
    *mask |= 1u << r;
  }
  return TRUE;
}

/* ---- character classes (ASCII only: bytes >= 0x80 are never part of a
 * field, so normalisation cannot split a UTF-8 sequence) ---------------- */

static inline gboolean
is_digit(guchar c)
{
  return c >= '0' && c <= '9';
}

static inline gboolean
is_alnum(guchar c)
{
  return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static inline gboolean
is_hex(guchar c)
{
  return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

static inline gboolean
is_path_char(guchar c)
{
  return is_alnum(c) || c == '/' || c == '.' || c == '_' || c == '-' ||
         c == '~' || c == '%' || c == '+' || c == '@';
}

typedef struct {
  const guchar *s;
  gsize len;
  /* matchers that read unbounded runs remember where a failed run ended:
   * any later start inside it would fail the same way, and retrying would
   * make the scan quadratic */
  gsize path_fail_until, num_fail_until;
} Scan;

static inline guchar
at(const Scan *c, gsize i)
{
  return i < c->len ? c->s[i] : 0;
}

/* Length of the run at i of bytes that `is` accepts, counting at most
 * max + 1 (so "too long" is visible without reading an unbounded run). */
static inline gsize
run_of(const Scan *c, gsize i, gsize max, gboolean (*is)(guchar))
{
  gsize n = 0;
  while (n <= max && is(at(c, i + n)))
    n++;
  return n;
}

static gsize
digits(const Scan *c, gsize i, gsize max)
{
  return run_of(c, i, max, is_digit);
}

static gsize
hexes(const Scan *c, gsize i, gsize max)
{
  return run_of(c, i, max, is_hex);
}

static int
number_at(const Scan *c, gsize i, gsize n)
{
  int v = 0;
  for (gsize k = 0; k < n; k++)
    v = v * 10 + (c->s[i + k] - '0');
  return v;
}

static inline gboolean
end_ok(const Scan *c, gsize e)
{
  return e >= c->len || !is_alnum(c->s[e]);
}

/* ---- matchers: each returns the end of the field at p, or 0 ------------ */

static gsize
m_uuid(const Scan *c, gsize p)
{
  static const int group[5] = { 8, 4, 4, 4, 12 };
  gsize q = p;
  for (int i = 0; i < 5; i++) {
    if (hexes(c, q, group[i]) != (gsize)group[i])
      return 0;
    q += group[i];
    if (i < 4) {
      if (at(c, q) != '-')
        return 0;
      q++;
    }
  }
  return end_ok(c, q) ? q : 0;
}

/* HH:MM:SS, optional fraction after '.', ',' or ':' (log4j, HealthApp),
 * optional zone Z / +HHMM / +HH:MM. */
static gsize
m_time(const Scan *c, gsize p)
{
  gsize n = digits(c, p, 2);
  if (n < 1 || n > 2 || number_at(c, p, n) > 23)
    return 0;
  gsize q = p + n;
  for (int k = 0; k < 2; k++) {
    if (at(c, q) != ':' || digits(c, q + 1, 2) != 2 ||
        number_at(c, q + 1, 2) > (k ? 60 : 59))
      return 0;
    q += 3;
  }
  guchar f = at(c, q);
  if ((f == '.' || f == ',' || f == ':') && is_digit(at(c, q + 1))) {
    n = digits(c, q + 1, 9);
    if (n <= 9)
      q += 1 + n;
  }
  f = at(c, q);
  if (f == 'Z') {
    q++;
  } else if (f == '+' || f == '-') {
    n = digits(c, q + 1, 4);
    if (n == 4)
      q += 5;
    else if (n == 2 && at(c, q + 3) == ':' && digits(c, q + 4, 2) == 2)
      q += 6;
  }
  return q;
}

/* Dates: YYYY-MM-DD (also / and .), NN-NN-NN(NN) (also /), and two forms
 * that only count when a time follows: MM-DD, YYYYMMDD. */
static gsize
m_date(const Scan *c, gsize p, gboolean *need_time)
{
  *need_time = FALSE;
  gsize n = digits(c, p, 8);
  guchar sep = at(c, p + n);
  if (n == 4 && (sep == '-' || sep == '/' || sep == '.')) {
    gsize q = p + 5, m = digits(c, q, 2);
    if (m < 1 || m > 2 || number_at(c, q, m) < 1 || number_at(c, q, m) > 12 ||
        at(c, q + m) != sep)
      return 0;
    q += m + 1;
    gsize d = digits(c, q, 2);
    if (d < 1 || d > 2 || number_at(c, q, d) < 1 || number_at(c, q, d) > 31)
      return 0;
    return q + d;
  }
  if (n == 2 && (sep == '-' || sep == '/')) {
    gsize q = p + 3, m = digits(c, q, 2);
    if (m < 1 || m > 2 || number_at(c, q, m) > 31)
      return 0;
    q += m;
    if (at(c, q) != sep) {
      *need_time = TRUE;
      return m == 2 ? q : 0;
    }
    gsize y = digits(c, q + 1, 4);
    return y == 2 || y == 4 ? q + 1 + y : 0;
  }
  if (n == 8) {
    int mo = number_at(c, p + 4, 2), d = number_at(c, p + 6, 2);
    *need_time = TRUE;
    return mo >= 1 && mo <= 12 && d >= 1 && d <= 31 ? p + 8 : 0;
  }
  return 0;
}

static gboolean
word_in(const Scan *c, gsize p, const char *list)
{
  /* list: three-letter words back to back */
  for (const char *w = list; *w; w += 3)
    if (at(c, p) == (guchar)w[0] && at(c, p + 1) == (guchar)w[1] &&
        at(c, p + 2) == (guchar)w[2])
      return TRUE;
  return FALSE;
}

/* syslog / ctime: [Dow ]Mon D HH:MM:SS[ YYYY] */
static gsize
m_syslog(const Scan *c, gsize p)
{
  gsize q = p;
  if (word_in(c, q, "MonTueWedThuFriSatSun") && at(c, q + 3) == ' ')
    q += 4;
  if (!word_in(c, q, "JanFebMarAprMayJunJulAugSepOctNovDec") ||
      at(c, q + 3) != ' ')
    return 0;
  q += 4;
  if (at(c, q) == ' ')
    q++;
  gsize n = digits(c, q, 2);
  if (n < 1 || n > 2 || at(c, q + n) != ' ')
    return 0;
  q = m_time(c, q + n + 1);
  if (!q)
    return 0;
  if (at(c, q) == ' ' && digits(c, q + 1, 4) == 4 && end_ok(c, q + 5))
    q += 5;
  return q;
}

static gsize
m_ts(const Scan *c, gsize p)
{
  gsize e = 0;
  if (!is_digit(c->s[p])) {
    e = m_syslog(c, p);
  } else if (!(e = m_time(c, p))) {
    gboolean need_time;
    gsize d = m_date(c, p, &need_time);
    if (!d)
      return 0;
    guchar sep = at(c, d);
    gsize t = 0;
    if (sep == ' ' || sep == 'T' || sep == '_' || sep == '-' || sep == ':')
      t = m_time(c, d + 1);
    if (t)
      e = t;
    else if (!need_time)
      e = d;
  }
  return e && end_ok(c, e) ? e : 0;
}

static gsize
m_ipv4(const Scan *c, gsize p)
{
  gsize q = p;
  for (int i = 0; i < 4; i++) {
    gsize n = digits(c, q, 3);
    if (n < 1 || n > 3 || number_at(c, q, n) > 255)
      return 0;
    q += n;
    if (i < 3) {
      if (at(c, q) != '.')
        return 0;
      q++;
    }
  }
  /* 1.2.3.4.5 is a version, not an address */
  if (at(c, q) == '.' && is_digit(at(c, q + 1)))
    return 0;
  if (at(c, q) == ':') {
    gsize n = digits(c, q + 1, 5);
    if (n >= 1 && n <= 5 && number_at(c, q + 1, n) <= 65535 &&
        end_ok(c, q + 1 + n))
      return q + 1 + n;
  }
  return end_ok(c, q) ? q : 0;
}

static gsize
m_ipv6(const Scan *c, gsize p)
{
  gsize q = p;
  int groups = 0, colons = 0;
  gboolean dbl = FALSE, digit = FALSE;
  if (at(c, q) == ':' && at(c, q + 1) == ':') {
    dbl = TRUE;
    q += 2;
    colons = 2;
  }
  for (;;) {
    gsize n = hexes(c, q, 4);
    if (n == 0)
      break;
    if (n > 4)
      return 0;
    for (gsize k = 0; k < n; k++)
      digit |= is_digit(c->s[q + k]);
    groups++;
    q += n;
    if (at(c, q) == ':' && at(c, q + 1) == ':' && !dbl) {
      dbl = TRUE;
      q += 2;
      colons += 2;
    } else if (at(c, q) == ':' && is_hex(at(c, q + 1)) && groups < 8) {
      q++;
      colons++;
    } else {
      break;
    }
  }
  /* a digit is required so that C++-ish "ab::cd" stays text */
  if (!digit || colons < 2 || !(dbl ? groups <= 7 : groups == 8))
    return 0;
  return end_ok(c, q) ? q : 0;
}

static gsize
m_ip(const Scan *c, gsize p)
{
  gsize e = is_digit(c->s[p]) ? m_ipv4(c, p) : 0;
  return e ? e : m_ipv6(c, p);
}

/* A path with at least two segments, one of which looks like an id: at
 * least 6 letters and digits, half of them digits. */
static gsize
m_path(Scan *c, gsize p)
{
  if (c->s[p] != '/' || (p > 0 && is_path_char(c->s[p - 1])) ||
      p < c->path_fail_until)
    return 0;
  gsize q = p, alnum = 0, dig = 0;
  int segs = 0;
  gboolean idlike = FALSE;
  for (;; q++) {
    guchar b = at(c, q);
    if (b == '/' || !is_path_char(b)) {
      if (alnum > 0)
        segs++;
      if (alnum >= 6 && 2 * dig >= alnum)
        idlike = TRUE;
      alnum = dig = 0;
      if (b != '/')
        break;
    } else if (is_alnum(b)) {
      alnum++;
      dig += is_digit(b);
    }
  }
  if (segs >= 2 && idlike)
    return q;
  c->path_fail_until = q;
  return 0;
}

static gsize
m_hex(const Scan *c, gsize p)
{
  if (c->s[p] == '0' && (at(c, p + 1) | 0x20) == 'x') {
    gsize n = hexes(c, p + 2, G_MAXSIZE - 1);
    return n && end_ok(c, p + 2 + n) ? p + 2 + n : 0;
  }
  gsize n = hexes(c, p, G_MAXSIZE - 1);
  if (n < 8 || !end_ok(c, p + n))
    return 0;
  gboolean digit = FALSE, lower = FALSE, upper = FALSE;
  for (gsize k = 0; k < n; k++) {
    guchar b = c->s[p + k];
    digit |= is_digit(b);
    lower |= b >= 'a';
    upper |= b >= 'A' && b <= 'F';
  }
  return digit && (lower || upper) && !(lower && upper) ? p + n : 0;
}

static gsize
m_num(Scan *c, gsize p)
{
  if (p < c->num_fail_until)
    return 0;
  gsize q = p + (c->s[p] == '-');
  gsize n = digits(c, q, G_MAXSIZE - 1);
  if (n == 0)
    return 0;
  gsize total = n;
  q += n;
  while (at(c, q) == '.' && is_digit(at(c, q + 1))) {
    n = digits(c, q + 1, G_MAXSIZE - 1);
    total += n;
    q += 1 + n;
  }
  if (!end_ok(c, q)) {
    c->num_fail_until = q;
    return 0;
  }
  /* a lone digit stays text: exit codes and flags carry meaning and are
   * one byte token anyway */
  return total >= 2 ? q : 0;
}

void
txl_norm_scan(guint rules, const guchar *s, gsize len, TxlNormFieldFunc func,
              gpointer data)
{
  Scan c = { s, len, 0, 0 };
  if (!(rules & TXL_NORM_ALL))
    return;
  gsize p = 0;
  while (p < len) {
    guchar b = s[p];
    if ((p > 0 && is_alnum(s[p - 1])) ||
        !(is_alnum(b) || b == '-' || b == ':' || b == '/')) {
      p++;
      continue;
    }
    gsize e = 0;
    int r;
    for (r = 0; r < TXL_NORM_N_RULES && !e; r++) {
      if (!(rules & (1u << r)))
        continue;
      switch (r) {
      case TXL_NORM_UUID: e = m_uuid(&c, p); break;
      case TXL_NORM_TS: e = m_ts(&c, p); break;
      case TXL_NORM_IP: e = m_ip(&c, p); break;
      case TXL_NORM_PATH: e = m_path(&c, p); break;
      case TXL_NORM_HEX: e = m_hex(&c, p); break;
      case TXL_NORM_NUM: e = m_num(&c, p); break;
      }
    }
    if (e > p) {
      func((TxlNormRule)(r - 1), p, e, data);
      p = e;
    } else {
      p++;
    }
  }
}
