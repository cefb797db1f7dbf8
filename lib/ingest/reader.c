/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Lines into record lines: JSON fields, CR, continuation lines (reader.h). */
#include "reader.h"
#include "bytes.h"
#include "freeeach.h"
#include "jsondepth.h"
#include "record.h"
#include "txl.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* Where the common shapes keep each part, tried in order when the field is
 * not set: Docker and Kubernetes ("log"), journalctl -o json (MESSAGE,
 * _HOSTNAME...), Vector and Fluent Bit ("message", "host"), OpenTelemetry
 * ("body", "SeverityText"), logfmt-ish JSON loggers ("msg", "level"). */
static const char *const message_names[] = { "message", "msg", "MESSAGE",
  "log", "body", "Body", "text", NULL };
static const char *const time_names[] = { "time", "timestamp", "@timestamp",
  "ts", "__REALTIME_TIMESTAMP", "Timestamp", "date", NULL };
static const char *const host_names[] = { "host", "hostname", "_HOSTNAME",
  "host.name", "kubernetes.host", NULL };
static const char *const app_names[] = { "app", "SYSLOG_IDENTIFIER",
  "service", "service.name", "logger", "_COMM", "container_name",
  "kubernetes.container_name", NULL };
static const char *const level_names[] = { "level", "severity", "PRIORITY",
  "lvl", "loglevel", "SeverityText", NULL };

#define STATE_VERSION 1u

struct _TxlRecordReader {
  TxlFormat format;
  gchar *message, *time, *host, *session; /* set paths, NULL: detect */
  GRegex *cont;
  gsize max;
  GByteArray *line;    /* the line being read */
  gboolean cutting;    /* it is past max: the rest is dropped */
  GByteArray *pending; /* with continuation: the last record, no LF yet */
  gboolean has_pending;
  TxlRecordReaderStats stats;
};

/* names of letters, digits, '_', '@', '-', joined by single dots: "a.b",
 * never ".", "a..b" or a dot at either end (a name that matches nothing) */
static gboolean
path_ok(const char *p)
{
  if (!p || !*p)
    return TRUE;
  gboolean name = FALSE; /* a name since the last dot */
  for (; *p; p++) {
    if (*p == '.') {
      if (!name)
        return FALSE;
      name = FALSE;
    } else if (g_ascii_isalnum(*p) || strchr("_@-", *p)) {
      name = TRUE;
    } else {
      return FALSE;
    }
  }
  return name;
}

TxlRecordReader *
txl_record_reader_new(const TxlRecordReaderOptions *o, GError **error)
{
  const char *paths[] = { o->message_field, o->time_field, o->host_field,
                          o->session_field };
  for (guint i = 0; i < G_N_ELEMENTS(paths); i++)
    if (!path_ok(paths[i])) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "field \"%s\": a field is named by letters, digits, '_', "
                  "'@', '-', with '.' between nested names", paths[i]);
      return NULL;
    }
  GRegex *cont = NULL;
  if (o->continuation && *o->continuation) {
    GError *e = NULL;
    cont = g_regex_new(o->continuation, G_REGEX_OPTIMIZE, 0, &e);
    if (!cont) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "continuation rule '%s': %s", o->continuation, e->message);
      g_error_free(e);
      return NULL;
    }
  }
  TxlRecordReader *r = g_new0(TxlRecordReader, 1);
  r->format = o->format;
  r->message = o->message_field && *o->message_field ? g_strdup(o->message_field) : NULL;
  r->time = o->time_field && *o->time_field ? g_strdup(o->time_field) : NULL;
  r->host = o->host_field && *o->host_field ? g_strdup(o->host_field) : NULL;
  r->session = o->session_field && *o->session_field ? g_strdup(o->session_field) : NULL;
  r->cont = cont;
  r->max = MAX(o->max_record, 64);
  r->line = g_byte_array_new();
  r->pending = g_byte_array_new();
  return r;
}

void
txl_record_reader_free(TxlRecordReader *r)
{
  if (!r)
    return;
  if (r->cont)
    g_regex_unref(r->cont);
  txl_free_each(g_byte_array_unref, r->line, r->pending);
  txl_free_each(g_free, r->message, r->time, r->host, r->session, r);
}

/* ---- JSON ---------------------------------------------------------------- */

/* The member at a dotted path: a key that holds the dots itself
 * ("host.name" in OpenTelemetry's flattened attributes) is tried first. */
static JsonNode *
lookup(JsonObject *o, const char *path)
{
  JsonNode *n = json_object_get_member(o, path);
  if (n || !strchr(path, '.'))
    return n;
  gchar **parts = g_strsplit(path, ".", 0);
  n = NULL;
  for (guint i = 0; parts[i] && o; i++) {
    n = json_object_get_member(o, parts[i]);
    o = n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
    if (!parts[i + 1])
      break;
    n = NULL;
  }
  g_strfreev(parts);
  return n;
}

/* A scalar's text (newly allocated), NULL for objects, arrays and null. */
static gchar *
scalar(JsonNode *n)
{
  if (!n || !JSON_NODE_HOLDS_VALUE(n))
    return NULL;
  GType t = json_node_get_value_type(n);
  if (t == G_TYPE_STRING)
    return g_strdup(json_node_get_string(n));
  if (t == G_TYPE_INT64)
    return g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(n));
  if (t == G_TYPE_DOUBLE) {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    return g_strdup(g_ascii_dtostr(buf, sizeof buf, json_node_get_double(n)));
  }
  if (t == G_TYPE_BOOLEAN)
    return g_strdup(json_node_get_boolean(n) ? "true" : "false");
  return NULL;
}

/* The set path's value, else the first of the common names present;
 * *name says which was found. */
static gchar *
find(JsonObject *o, const char *set, const char *const *names,
     const char **name)
{
  if (set) {
    *name = set;
    return scalar(lookup(o, set));
  }
  for (guint i = 0; names[i]; i++) {
    gchar *v = scalar(lookup(o, names[i]));
    if (v) {
      *name = names[i];
      return v;
    }
  }
  return NULL;
}


/* A JSON object as one record line appended to out; FALSE when the line is
 * not a JSON object. */
static gboolean
json_record(TxlRecordReader *r, const char *line, gsize len, GString *out)
{
  JsonParser *p = json_parser_new_immutable();
  gboolean ok = txl_json_check_depth(line, len, TXL_JSON_MAX_DEPTH, "line",
                                     NULL) &&
                json_parser_load_from_data(p, line, (gssize)len, NULL) &&
                JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p));
  if (!ok) {
    g_object_unref(p);
    return FALSE;
  }
  JsonObject *o = json_node_get_object(json_parser_get_root(p));
  const char *mname, *tname, *hname, *aname, *lname, *sname;
  gchar *msg = find(o, r->message, message_names, &mname);
  gchar *tm = find(o, r->time, time_names, &tname);
  gchar *host = find(o, r->host, host_names, &hname);
  gchar *app = find(o, NULL, app_names, &aname);
  gchar *level = find(o, NULL, level_names, &lname);
  gchar *sess = r->session ? find(o, r->session, NULL, &sname) : NULL;
  if (level && strcmp(lname, "PRIORITY") == 0 && level[0] >= '0' &&
      level[0] <= '7' && !level[1]) {
    int pri = level[0] - '0'; /* journald's number, as syslog's name */
    g_free(level);
    level = g_strdup(txl_record_severity_name(pri));
  }
  TxlRecordField f[] = { { "host", host, -1 }, { "app", app, -1 },
                         { "time", tm, -1 }, { "severity", level, -1 },
                         { "session", sess, -1 } };
  if (!msg)
    r->stats.no_message++;
  const char *text = msg ? msg : line;
  gsize tl = msg ? strlen(msg) : len;
  while (tl && g_ascii_isspace(text[tl - 1]))
    tl--; /* Docker's "log" ends with its line end */
  txl_record_append(out, f, G_N_ELEMENTS(f), text, tl);
  g_free(msg);
  g_free(tm);
  g_free(host);
  g_free(app);
  g_free(level);
  g_free(sess);
  g_object_unref(p);
  return TRUE;
}

/* ---- lines --------------------------------------------------------------- */

static gboolean
looks_json(const char *s, gsize n)
{
  gsize i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t'))
    i++;
  return i < n && s[i] == '{';
}

/* A record completed: straight out, or (with continuation lines possible)
 * held until the next line shows whether it continues it. */
static void
emit(TxlRecordReader *r, const char *rec, gsize n, GString *out)
{
  r->stats.records++;
  if (r->has_pending) {
    g_string_append_len(out, (const char *)r->pending->data,
                        (gssize)r->pending->len);
    g_string_append_c(out, '\n');
    r->has_pending = FALSE;
  }
  if (!r->cont) {
    g_string_append_len(out, rec, (gssize)n);
    g_string_append_c(out, '\n');
    return;
  }
  g_byte_array_set_size(r->pending, 0);
  g_byte_array_append(r->pending, (const guint8 *)rec, (guint)n);
  r->has_pending = TRUE;
}

static void
end_line(TxlRecordReader *r, GString *out)
{
  const char *s = (const char *)r->line->data;
  gsize n = r->line->len;
  if (n && s[n - 1] == '\r')
    n--;
  if (r->cont && r->has_pending && txl_record_header_len(s, n) == 0) {
    gchar *z = g_strndup(n ? s : "", n); /* an empty line has no data */
    gboolean joins = g_regex_match(r->cont, z, 0, NULL);
    g_free(z);
    if (joins) {
      /* the message stays within max; the header comes on top */
      gsize hl = txl_record_header_len((const char *)r->pending->data,
                                       r->pending->len);
      gsize limit = r->max + hl;
      gsize room = limit - MIN(limit, r->pending->len);
      gsize take = MIN(n, room > 0 ? room - 1 : 0);
      if (take < n)
        r->stats.cut++;
      if (take) {
        if (r->pending->len > hl) /* a space between, not before, parts */
          g_byte_array_append(r->pending, (const guint8 *)" ", 1);
        /* a control byte would end the record: as record.h writes them */
        for (gsize i = 0; i < take; i++) {
          guint8 c = (guint8)s[i];
          c = c < 0x20 && c != '\t' ? ' ' : c;
          g_byte_array_append(r->pending, &c, 1);
        }
      }
      return;
    }
  }
  gboolean json = r->format != TXL_FORMAT_TEXT && looks_json(s, n);
  if (json) {
    GString *rec = g_string_new(NULL);
    if (json_record(r, s, n, rec)) {
      emit(r, rec->str, rec->len - 1, out); /* without its LF */
      g_string_free(rec, TRUE);
      return;
    }
    g_string_free(rec, TRUE);
  }
  if (json || r->format == TXL_FORMAT_JSON)
    r->stats.bad_json++;
  emit(r, s, n, out); /* a text line (or a record line already) as it is */
}

void
txl_record_reader_push(TxlRecordReader *r, const char *data, gsize len,
                       GString *out)
{
  while (len) {
    const char *nl = memchr(data, '\n', len);
    gsize n = nl ? (gsize)(nl - data) : len;
    if (!r->cutting) {
      gsize take = MIN(n, r->max - r->line->len);
      g_byte_array_append(r->line, (const guint8 *)data, (guint)take);
      if (take < n) {
        r->cutting = TRUE;
        r->stats.cut++;
      }
    }
    data += n;
    len -= n;
    if (nl) {
      end_line(r, out);
      g_byte_array_set_size(r->line, 0);
      r->cutting = FALSE;
      data++;
      len--;
    }
  }
}

void
txl_record_reader_finish(TxlRecordReader *r, GString *out)
{
  gboolean unterminated = r->line->len > 0;
  if (unterminated) {
    end_line(r, out);
    g_byte_array_set_size(r->line, 0);
    r->cutting = FALSE;
  }
  if (r->has_pending) {
    g_string_append_len(out, (const char *)r->pending->data,
                        (gssize)r->pending->len);
    g_string_append_c(out, '\n');
    g_byte_array_set_size(r->pending, 0);
    r->has_pending = FALSE;
  }
  /* a last line without its line end keeps going without one: the
   * tokenizer treats it as the input's unterminated end, as before */
  if (unterminated && out->len && out->str[out->len - 1] == '\n')
    g_string_truncate(out, out->len - 1);
}

void
txl_record_reader_stats(const TxlRecordReader *r, TxlRecordReaderStats *s)
{
  *s = r->stats;
}

/* ---- state --------------------------------------------------------------- */

/* Layout (little endian): u32 version, u32 cutting, the line (u64 length
 * and bytes), u32 has pending, the pending record (u64 length, bytes). */
GBytes *
txl_record_reader_save(const TxlRecordReader *r)
{
  GByteArray *b = g_byte_array_new();
  txl_put_u32(b, STATE_VERSION);
  txl_put_u32(b, r->cutting ? 1 : 0);
  txl_put_blob(b, r->line->data, r->line->len);
  txl_put_u32(b, r->has_pending ? 1 : 0);
  txl_put_blob(b, r->pending->data, r->pending->len);
  return g_byte_array_free_to_bytes(b);
}

gboolean
txl_record_reader_restore(TxlRecordReader *r, GBytes *state, GError **error)
{
  TxlReader rd;
  txl_reader_init(&rd, state);
  guint32 version = txl_get_u32(&rd), cutting = txl_get_u32(&rd);
  gsize ln, pn;
  const guint8 *line = txl_get_blob(&rd, &ln, r->max);
  guint32 has_pending = txl_get_u32(&rd);
  /* a held record: its message within max, its header on top */
  const guint8 *pending = txl_get_blob(&rd, &pn,
                                       r->max + TXL_RECORD_MAX_HEADER);
  if (!txl_reader_done(&rd) || version != STATE_VERSION || cutting > 1 ||
      has_pending > 1 || (pn && !has_pending) ||
      (ln && memchr(line, '\n', ln)) || (pn && memchr(pending, '\n', pn))) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_FORMAT,
                        "record reader state: malformed, or saved with a "
                        "larger max-record-size");
    return FALSE;
  }
  g_byte_array_set_size(r->line, 0);
  g_byte_array_append(r->line, line, (guint)ln);
  g_byte_array_set_size(r->pending, 0);
  g_byte_array_append(r->pending, pending, (guint)pn);
  r->cutting = cutting;
  r->has_pending = has_pending;
  return TRUE;
}
