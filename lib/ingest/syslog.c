/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Syslog messages and TCP framing (syslog.h). */
#include "syslog.h"
#include "record.h"

#include <string.h>

/* ---- messages ------------------------------------------------------------ */

typedef struct {
  const char *p, *end;
} Cur;

static TxlSpan
span(const char *a, const char *b)
{
  TxlSpan s = { a, (gsize)(b - a) };
  return s;
}

/* The next word up to a space (RFC 5424 header fields); "-" is empty. */
static TxlSpan
word(Cur *c)
{
  const char *a = c->p;
  while (c->p < c->end && *c->p != ' ')
    c->p++;
  TxlSpan s = span(a, c->p);
  if (c->p < c->end)
    c->p++;
  if (s.n == 1 && s.p[0] == '-')
    s.n = 0;
  return s;
}

static gboolean
parse_pri(Cur *c, int *pri)
{
  const char *p = c->p;
  if (p >= c->end || *p != '<')
    return FALSE;
  int v = 0, digits = 0;
  for (p++; p < c->end && g_ascii_isdigit(*p) && digits < 3; p++, digits++)
    v = v * 10 + (*p - '0');
  if (digits == 0 || p >= c->end || *p != '>' || v > 191)
    return FALSE;
  *pri = v;
  c->p = p + 1;
  return TRUE;
}

/* RFC 5424 structured data: "-" or one or more [id k="v" ...] elements,
 * where a value may escape '"', '\' and ']'. */
static TxlSpan
structured_data(Cur *c)
{
  const char *a = c->p;
  if (c->p < c->end && *c->p == '-') {
    c->p++;
    if (c->p < c->end && *c->p == ' ')
      c->p++;
    return span(a, a);
  }
  while (c->p < c->end && *c->p == '[') {
    gboolean quoted = FALSE;
    for (c->p++; c->p < c->end; c->p++) {
      if (quoted && *c->p == '\\' && c->p + 1 < c->end)
        c->p++;
      else if (*c->p == '"')
        quoted = !quoted;
      else if (!quoted && *c->p == ']')
        break;
    }
    if (c->p < c->end)
      c->p++;
  }
  TxlSpan s = span(a, c->p);
  if (c->p < c->end && *c->p == ' ')
    c->p++;
  return s;
}

static void
parse_5424(Cur *c, TxlSyslogMsg *m)
{
  m->version = 1;
  m->time = word(c);
  m->host = word(c);
  m->app = word(c);
  m->procid = word(c);
  m->msgid = word(c);
  m->sd = structured_data(c);
  if (c->end - c->p >= 3 && memcmp(c->p, "\xef\xbb\xbf", 3) == 0)
    c->p += 3;
}

static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May",
  "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

/* "Mmm dd hh:mm:ss" (RFC 3164), or an RFC 3339 time as rsyslog's forward
 * formats send it. */
static gboolean
bsd_time(Cur *c, TxlSpan *t)
{
  gsize left = (gsize)(c->end - c->p);
  if (left >= 16 && c->p[15] == ' ' && c->p[3] == ' ' && c->p[6] == ' ' &&
      c->p[9] == ':' && c->p[12] == ':') {
    for (guint i = 0; i < G_N_ELEMENTS(months); i++)
      if (memcmp(c->p, months[i], 3) == 0) {
        *t = span(c->p, c->p + 15);
        c->p += 16;
        return TRUE;
      }
  }
  if (left >= 20 && g_ascii_isdigit(c->p[0]) && c->p[4] == '-' &&
      c->p[10] == 'T') {
    Cur w = *c;
    *t = word(&w);
    *c = w;
    return TRUE;
  }
  return FALSE;
}

/* A tag: program name, optionally "[pid]", then ':'.  Returns FALSE (and
 * moves nothing) when the word is not one. */
static gboolean
bsd_tag(Cur *c, TxlSyslogMsg *m)
{
  const char *p = c->p;
  while (p < c->end && *p != ' ' && *p != ':' && *p != '[')
    p++;
  if (p == c->p || p >= c->end)
    return FALSE;
  TxlSpan app = span(c->p, p), pid = { NULL, 0 };
  if (*p == '[') {
    const char *q = memchr(p, ']', (gsize)(c->end - p));
    if (!q)
      return FALSE;
    pid = span(p + 1, q);
    p = q + 1;
  }
  if (p >= c->end || *p != ':')
    return FALSE;
  p++;
  if (p < c->end && *p == ' ')
    p++;
  m->app = app;
  m->procid = pid;
  c->p = p;
  return TRUE;
}

static void
parse_3164(Cur *c, TxlSyslogMsg *m)
{
  if (!bsd_time(c, &m->time))
    return; /* no header we know: all of it is message */
  if (bsd_tag(c, m))
    return; /* a local message: no host */
  Cur after_host = *c;
  TxlSpan host = word(&after_host);
  if (host.n && bsd_tag(&after_host, m)) {
    m->host = host;
    *c = after_host;
  } else if (host.n && after_host.p < c->end) {
    m->host = host; /* "time host message" without a tag */
    *c = after_host;
  }
}

void
txl_syslog_parse(const char *data, gsize len, TxlSyslogMsg *out)
{
  memset(out, 0, sizeof *out);
  out->pri = -1;
  while (len && (data[len - 1] == '\n' || data[len - 1] == '\r' ||
                 data[len - 1] == '\0'))
    len--;
  Cur c = { data, data + len };
  if (parse_pri(&c, &out->pri)) {
    if (c.end - c.p >= 2 && c.p[0] == '1' && c.p[1] == ' ') {
      c.p += 2;
      parse_5424(&c, out);
    } else {
      parse_3164(&c, out);
    }
  }
  out->msg = span(c.p, c.end);
}

static const char *const facilities[] = { "kern", "user", "mail", "daemon",
  "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp", "ntp",
  "security", "console", "solaris-cron", "local0", "local1", "local2",
  "local3", "local4", "local5", "local6", "local7" };

void
txl_syslog_append_record(const TxlSyslogMsg *m, GString *out)
{
  gboolean pri = m->pri >= 0;
  TxlRecordField f[] = {
    { "host", m->host.p, (gssize)m->host.n },
    { "app", m->app.p, (gssize)m->app.n },
    { "procid", m->procid.p, (gssize)m->procid.n },
    { "msgid", m->msgid.p, (gssize)m->msgid.n },
    { "time", m->time.p, (gssize)m->time.n },
    { "facility", pri ? facilities[m->pri / 8] : NULL, -1 },
    { "severity", pri ? txl_record_severity_name(m->pri % 8) : NULL, -1 },
    { "sd", m->sd.p, (gssize)m->sd.n },
  };
  txl_record_append(out, f, G_N_ELEMENTS(f), m->msg.p, m->msg.n);
}

/* ---- framing ----------------------------------------------------------- */

/* The count of an octet-counted frame has at most this many digits. */
#define MAX_COUNT_DIGITS 10

struct _TxlSyslogFramer {
  gsize max;
  GByteArray *buf;  /* the frame being read (at most max bytes) */
  enum { F_START, F_COUNT, F_COUNT_SPACE, F_OCTETS, F_LINE } state;
  guint64 count;    /* F_COUNT: digits so far; F_OCTETS: bytes still due */
  guint digits;
  gboolean cut;     /* bytes of this frame were dropped */
};

TxlSyslogFramer *
txl_syslog_framer_new(gsize max_frame)
{
  TxlSyslogFramer *f = g_new0(TxlSyslogFramer, 1);
  f->max = MAX(max_frame, 1);
  f->buf = g_byte_array_new();
  return f;
}

void
txl_syslog_framer_free(TxlSyslogFramer *f)
{
  if (!f)
    return;
  g_byte_array_unref(f->buf);
  g_free(f);
}

static void
keep(TxlSyslogFramer *f, const char *p, gsize n)
{
  gsize room = f->max - f->buf->len;
  if (n > room) {
    f->cut = TRUE;
    n = room;
  }
  g_byte_array_append(f->buf, (const guint8 *)p, (guint)n);
}

/* Delivers the frame read so far; returns 1 if it was malformed. */
static guint
deliver(TxlSyslogFramer *f, gboolean bad, TxlFrameFunc func, gpointer data)
{
  gboolean empty = f->buf->len == 0;
  if (!empty)
    func((const char *)f->buf->data, f->buf->len, data);
  bad = bad || f->cut;
  g_byte_array_set_size(f->buf, 0);
  f->state = F_START;
  f->cut = FALSE;
  f->count = 0;
  f->digits = 0;
  return bad ? 1 : 0;
}

guint
txl_syslog_framer_push(TxlSyslogFramer *f, const char *data, gsize len,
                       TxlFrameFunc func, gpointer user_data)
{
  guint bad = 0;
  gsize i = 0;
  while (i < len) {
    char b = data[i];
    switch (f->state) {
    case F_START:
      if (b == '\n' || b == '\r' || b == '\0' || b == ' ') {
        i++; /* blank space between frames */
      } else if (g_ascii_isdigit(b)) {
        f->state = F_COUNT;
      } else {
        f->state = F_LINE;
      }
      break;
    case F_COUNT:
      if (g_ascii_isdigit(b) && f->digits < MAX_COUNT_DIGITS) {
        f->count = f->count * 10 + (guint64)(b - '0');
        f->digits++;
        keep(f, &b, 1);
        i++;
      } else if (b == ' ' && f->count > 0) {
        keep(f, &b, 1);
        f->state = F_COUNT_SPACE;
        i++;
      } else {
        f->state = F_LINE; /* digits that are no count: a plain line */
      }
      break;
    case F_COUNT_SPACE:
      /* an octet-counted frame holds a syslog message, which starts with
       * its PRI: so "261103 080000 INFO ..." stays a plain line */
      if (b == '<') {
        g_byte_array_set_size(f->buf, 0); /* the count is not message */
        f->state = F_OCTETS;
      } else {
        f->state = F_LINE;
      }
      break;
    case F_OCTETS: {
      gsize n = (gsize)MIN((guint64)(len - i), f->count);
      keep(f, data + i, n);
      f->count -= n;
      i += n;
      if (f->count == 0)
        bad += deliver(f, FALSE, func, user_data);
      break;
    }
    case F_LINE: {
      const char *nl = memchr(data + i, '\n', len - i);
      gsize n = nl ? (gsize)(nl - (data + i)) : len - i;
      keep(f, data + i, n);
      i += n;
      if (nl) {
        i++;
        bad += deliver(f, FALSE, func, user_data);
      }
      break;
    }
    }
  }
  return bad;
}

guint
txl_syslog_framer_finish(TxlSyslogFramer *f, TxlFrameFunc func,
                         gpointer user_data)
{
  gboolean short_count = f->state == F_OCTETS;
  return deliver(f, short_count, func, user_data);
}
