/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* OTLP logs into record lines (otlp.h).  Field numbers are those of
 * opentelemetry-proto's logs/v1, common/v1 and resource/v1 messages:
 *
 *   ExportLogsServiceRequest { 1: repeated ResourceLogs }
 *   ResourceLogs  { 1: Resource, 2: repeated ScopeLogs }
 *   Resource      { 1: repeated KeyValue attributes }
 *   ScopeLogs     { 1: InstrumentationScope, 2: repeated LogRecord }
 *   LogRecord     { 1: fixed64 time_unix_nano, 11: fixed64 observed_...,
 *                   2: SeverityNumber, 3: string severity_text,
 *                   5: AnyValue body, 6: repeated KeyValue attributes }
 *   KeyValue      { 1: string key, 2: AnyValue value }
 *   AnyValue      { oneof 1 string, 2 bool, 3 int64, 4 double,
 *                   5 ArrayValue{1: repeated AnyValue},
 *                   6 KeyValueList{1: repeated KeyValue}, 7 bytes }
 *
 * Everything else is skipped by its wire type.  Every length is checked
 * against the bytes left before it is used, and nothing is allocated from
 * a length read off the wire: slices point into the input, and text grows
 * only by what is appended from it. */
#include "otlp.h"
#include "jsondepth.h"
#include "jsonstr.h"
#include "record.h"
#include "txl.h"

#include <json-glib/json-glib.h>
#include <string.h>
#include <time.h>

/* ---- what one LogRecord becomes ------------------------------------------- */

/* The lines one request appends to out, within max bytes. */
typedef struct {
  GString *out;
  gsize start;    /* out's length before the request */
  gsize max;      /* the most the request may append */
  gboolean over;  /* a record did not fit */
} Lines;

static void
lines_init(Lines *l, GString *out, gsize max)
{
  l->out = out;
  l->start = out->len;
  l->max = max;
  l->over = FALSE;
}

/* Past the bound: nothing taken, and why. */
static gboolean
too_large(Lines *l, GError **error)
{
  g_string_truncate(l->out, l->start);
  g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID, "OTLP logs: the records "
              "decode to more than %" G_GSIZE_FORMAT " bytes of lines",
              l->max);
  return FALSE;
}

typedef struct {
  GString *app, *host, *session; /* from the resource */
  Lines *lines;
} Res;

typedef struct {
  GString *body, *severity, *session;
  guint64 time, observed, severity_number;
  gboolean has_session;
} Rec;

static const char *
severity_name(guint64 n)
{
  /* SeverityNumber: 1-4 TRACE, 5-8 DEBUG, 9-12 INFO, 13-16 WARN,
   * 17-20 ERROR, 21-24 FATAL; 0 is unspecified */
  static const char *const names[] = { "TRACE", "DEBUG", "INFO", "WARN",
                                       "ERROR", "FATAL" };
  return n >= 1 && n <= 24 ? names[(n - 1) / 4] : NULL;
}

/* Nanoseconds since the epoch as the time field; 0 is "not set". */
static void
format_time(guint64 ns, char *buf, gsize size)
{
  buf[0] = '\0';
  if (ns)
    txl_record_time(buf, size, (gint64)(ns / 1000000000u),
                    ns % 1000000000u, 9);
}

static void
emit(GString *out, const Res *res, const Rec *r)
{
  char when[TXL_RECORD_TIME_MAX];
  format_time(r->time ? r->time : r->observed, when, sizeof when);
  const char *sev = r->severity->len ? r->severity->str
                                     : severity_name(r->severity_number);
  const GString *sess = r->has_session ? r->session : res->session;
  TxlRecordField f[] = {
    { "app", res->app->str, (gssize)res->app->len },
    { "host", res->host->str, (gssize)res->host->len },
    { "severity", sev, -1 },
    { "time", when, -1 },
    { "session", sess->str, (gssize)sess->len },
  };
  /* each record repeats its resource's fields (up to 8 KiB): a small
   * request of many tiny records would otherwise decode to gigabytes */
  gsize before = out->len;
  if (!res->lines->over)
    txl_record_append(out, f, G_N_ELEMENTS(f), r->body->str, r->body->len);
  if (out->len - res->lines->start > res->lines->max) {
    g_string_truncate(out, before);
    res->lines->over = TRUE;
  }
}

static void
res_init(Res *r, Lines *lines)
{
  r->lines = lines;
  r->app = g_string_new(NULL);
  r->host = g_string_new(NULL);
  r->session = g_string_new(NULL);
}

static void
res_clear(Res *r)
{
  g_string_free(r->app, TRUE);
  g_string_free(r->host, TRUE);
  g_string_free(r->session, TRUE);
}

static void
rec_init(Rec *r)
{
  memset(r, 0, sizeof *r);
  r->body = g_string_new(NULL);
  r->severity = g_string_new(NULL);
  r->session = g_string_new(NULL);
}

static void
rec_reset(Rec *r)
{
  g_string_truncate(r->body, 0);
  g_string_truncate(r->severity, 0);
  g_string_truncate(r->session, 0);
  r->time = r->observed = r->severity_number = 0;
  r->has_session = FALSE;
}

static void
rec_clear(Rec *r)
{
  g_string_free(r->body, TRUE);
  g_string_free(r->severity, TRUE);
  g_string_free(r->session, TRUE);
}

/* Where an attribute's value goes, or NULL when it is not wanted. */
static GString *
res_target(Res *res, const char *key, gsize klen, const char *session_attr)
{
  if (klen == 12 && memcmp(key, "service.name", 12) == 0)
    return res->app;
  if (klen == 9 && memcmp(key, "host.name", 9) == 0)
    return res->host;
  if (session_attr && strlen(session_attr) == klen &&
      memcmp(key, session_attr, klen) == 0)
    return res->session;
  return NULL;
}

static gboolean
is_session(const char *key, gsize klen, const char *session_attr)
{
  return session_attr && strlen(session_attr) == klen &&
         memcmp(key, session_attr, klen) == 0;
}

/* Why a LogRecord was refused on its own, the rest of the request taken
 * (OTLP's partial success); static strings. */
static const char REJ_BODY[] = "a log record without a body (nothing to score)";
static const char REJ_MALFORMED[] =
    "a log record that is not well-formed protobuf";
static const char REJ_NOT_OBJECT[] = "a logRecords element that is not an object";

static void
reject(TxlOtlpRejected *rej, const char *why)
{
  if (rej->count++ == 0)
    rej->first = why;
}

static gboolean
fail(GError **error, const char *what)
{
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT, "OTLP logs: %s", what);
  return FALSE;
}

/* ---- the protobuf wire format ------------------------------------------------ */

typedef struct {
  const guint8 *p, *end;
} Pb;

typedef struct {
  guint32 num;
  guint wire;   /* 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
  guint64 v;    /* varint and fixed values */
  Pb sub;       /* length-delimited: its bytes */
} PbField;

static gboolean
pb_varint(Pb *b, guint64 *v)
{
  *v = 0;
  for (guint shift = 0; shift < 64; shift += 7) {
    if (b->p == b->end)
      return FALSE;
    guint8 c = *b->p++;
    *v |= (guint64)(c & 0x7f) << shift;
    if (!(c & 0x80))
      return TRUE;
  }
  return FALSE; /* more than ten bytes */
}

static guint64
pb_le(const guint8 *p, guint n)
{
  guint64 v = 0;
  for (guint i = 0; i < n; i++)
    v |= (guint64)p[i] << (8 * i);
  return v;
}

/* The next field: 1, 0 at the end, -1 when malformed (a truncated value,
 * a length past the end, field number 0, groups or unknown wire types). */
static int
pb_next(Pb *b, PbField *f)
{
  if (b->p == b->end)
    return 0;
  guint64 tag, len;
  if (!pb_varint(b, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
    return -1;
  f->num = (guint32)(tag >> 3);
  f->wire = (guint)(tag & 7);
  gsize left;
  switch (f->wire) {
  case 0:
    return pb_varint(b, &f->v) ? 1 : -1;
  case 1:
  case 5:
    left = (gsize)(b->end - b->p);
    if (left < (f->wire == 1 ? 8u : 4u))
      return -1;
    f->v = pb_le(b->p, f->wire == 1 ? 8 : 4);
    b->p += f->wire == 1 ? 8 : 4;
    return 1;
  case 2:
    if (!pb_varint(b, &len) || len > (guint64)(b->end - b->p))
      return -1;
    f->sub.p = b->p;
    f->sub.end = b->p + len;
    b->p += len;
    return 1;
  default:
    return -1;
  }
}

static gboolean pb_any(Pb b, gboolean top, int depth, GString *out);

/* KeyValue: its key as a slice and its value's bytes. */
static gboolean
pb_keyvalue(Pb b, Pb *key, Pb *value)
{
  PbField f;
  int r;
  key->p = key->end = value->p = value->end = b.p;
  while ((r = pb_next(&b, &f)) > 0) {
    if (f.wire != 2 && (f.num == 1 || f.num == 2))
      return FALSE;
    if (f.num == 1)
      *key = f.sub;
    else if (f.num == 2)
      *value = f.sub;
  }
  return r == 0;
}

static void
base64_json(GString *out, const guint8 *p, gsize n)
{
  g_autofree char *b64 = g_base64_encode(p, n);
  txl_json_append_string(out, b64, strlen(b64));
}

/* A list of AnyValue (array) or KeyValue (kvlist) as JSON. */
static gboolean
pb_list(Pb b, gboolean kv, int depth, GString *out)
{
  PbField f;
  int r;
  gboolean first = TRUE;
  g_string_append_c(out, kv ? '{' : '[');
  while ((r = pb_next(&b, &f)) > 0) {
    if (f.num != 1)
      continue;
    if (f.wire != 2)
      return FALSE;
    if (!first)
      g_string_append_c(out, ',');
    first = FALSE;
    Pb val = f.sub;
    if (kv) {
      Pb key;
      if (!pb_keyvalue(f.sub, &key, &val))
        return FALSE;
      txl_json_append_string(out, (const char *)key.p, key.end - key.p);
      g_string_append_c(out, ':');
    }
    if (!pb_any(val, FALSE, depth + 1, out))
      return FALSE;
  }
  g_string_append_c(out, kv ? '}' : ']');
  return r == 0;
}

/* AnyValue as text: at the top a string is itself, everything else JSON.
 * Of several members of the oneof the last one counts, as protobuf says. */
static gboolean
pb_any(Pb b, gboolean top, int depth, GString *out)
{
  if (depth > TXL_OTLP_MAX_DEPTH)
    return FALSE;
  gsize start = out->len;
  gboolean set = FALSE;
  PbField f;
  int r;
  while ((r = pb_next(&b, &f)) > 0) {
    gboolean len_kind = f.num == 1 || f.num == 5 || f.num == 6 || f.num == 7;
    if ((len_kind && f.wire != 2) || ((f.num == 2 || f.num == 3) && f.wire != 0) ||
        (f.num == 4 && f.wire != 1))
      return FALSE;
    if (f.num < 1 || f.num > 7)
      continue;
    g_string_truncate(out, start);
    set = TRUE;
    gsize n = f.sub.end - f.sub.p;
    switch (f.num) {
    case 1:
      if (top)
        g_string_append_len(out, (const char *)f.sub.p, n);
      else
        txl_json_append_string(out, (const char *)f.sub.p, n);
      break;
    case 2: g_string_append(out, f.v ? "true" : "false"); break;
    case 3: g_string_append_printf(out, "%" G_GINT64_FORMAT, (gint64)f.v); break;
    case 4: {
      double d;
      memcpy(&d, &f.v, sizeof d);
      txl_json_append_double(out, "%.17g", d);
      break;
    }
    case 5:
    case 6:
      if (!pb_list(f.sub, f.num == 6, depth, out))
        return FALSE;
      break;
    case 7: base64_json(out, f.sub.p, n); break;
    }
  }
  if (!set && !top)
    g_string_append(out, "null");
  return r == 0;
}

/* An attribute (KeyValue) into target when wanted. */
static gboolean
pb_attr(Pb b, Res *res, Rec *rec, const char *session_attr)
{
  Pb key, val;
  if (!pb_keyvalue(b, &key, &val))
    return FALSE;
  const char *k = (const char *)key.p;
  gsize kl = key.end - key.p;
  GString *to = NULL;
  if (res)
    to = res_target(res, k, kl, session_attr);
  else if (is_session(k, kl, session_attr)) {
    to = rec->session;
    rec->has_session = TRUE;
  }
  if (!to)
    return TRUE;
  g_string_truncate(to, 0);
  return pb_any(val, TRUE, 0, to);
}

/* One LogRecord into a line; NULL, or why it is refused.  Its bytes were
 * framed by a length that fitted its ScopeLogs, so whatever is wrong
 * inside them concerns this record alone. */
static const char *
pb_log_record(Pb b, const Res *res, Rec *rec, const char *session_attr,
              GString *out)
{
  rec_reset(rec);
  PbField f;
  int r;
  while ((r = pb_next(&b, &f)) > 0) {
    guint want = f.num == 1 || f.num == 11 ? 1 : f.num == 2 ? 0
                 : f.num == 3 || f.num == 5 || f.num == 6 ? 2 : 9;
    if (want == 9)
      continue;
    if (f.wire != want)
      return REJ_MALFORMED;
    switch (f.num) {
    case 1: rec->time = f.v; break;
    case 11: rec->observed = f.v; break;
    case 2: rec->severity_number = f.v; break;
    case 3:
      g_string_truncate(rec->severity, 0);
      g_string_append_len(rec->severity, (const char *)f.sub.p,
                          f.sub.end - f.sub.p);
      break;
    case 5:
      g_string_truncate(rec->body, 0);
      if (!pb_any(f.sub, TRUE, 0, rec->body))
        return REJ_MALFORMED;
      break;
    case 6:
      if (!pb_attr(f.sub, NULL, rec, session_attr))
        return REJ_MALFORMED;
      break;
    }
  }
  if (r < 0)
    return REJ_MALFORMED;
  if (!rec->body->len)
    return REJ_BODY;
  emit(out, res, rec);
  return NULL;
}

/* One ResourceLogs: the resource first (it may come after its logs on
 * the wire), then every LogRecord of every ScopeLogs. */
static gboolean
pb_resource_logs(Pb b, const char *session_attr, Lines *lines,
                 guint64 *records, TxlOtlpRejected *rej)
{
  Res res;
  Rec rec;
  res_init(&res, lines);
  GString *out = lines->out;
  rec_init(&rec);
  gboolean ok = TRUE;
  PbField f, g, h;
  int r;
  for (Pb s = b; ok && (r = pb_next(&s, &f)) > 0;) {
    if (f.num != 1)
      continue;
    ok = f.wire == 2;
    for (Pb t = f.sub; ok && (r = pb_next(&t, &g)) > 0;)
      if (g.num == 1)
        ok = g.wire == 2 && pb_attr(g.sub, &res, NULL, session_attr);
    ok = ok && r == 0;
  }
  ok = ok && r == 0;
  for (Pb s = b; ok && (r = pb_next(&s, &f)) > 0;) {
    if (f.num != 2)
      continue;
    ok = f.wire == 2;
    for (Pb t = f.sub; ok && (r = pb_next(&t, &h)) > 0;) {
      if (h.num != 2)
        continue;
      ok = h.wire == 2;
      const char *why = ok ? pb_log_record(h.sub, &res, &rec, session_attr,
                                           out) : NULL;
      if (why)
        reject(rej, why);
      else
        *records += ok;
    }
    ok = ok && r == 0;
  }
  ok = ok && r == 0;
  rec_clear(&rec);
  res_clear(&res);
  return ok;
}

gboolean
txl_otlp_logs_protobuf(const guint8 *data, gsize len, const char *session_attr,
                       gsize max_out, GString *out, guint64 *records,
                       TxlOtlpRejected *rejected, GError **error)
{
  Lines lines;
  lines_init(&lines, out, max_out);
  guint64 n = 0;
  TxlOtlpRejected rej = { 0, NULL };
  Pb b = { data, data + len };
  PbField f;
  int r;
  while ((r = pb_next(&b, &f)) > 0) {
    if (f.num != 1)
      continue;
    if (f.wire != 2 || !pb_resource_logs(f.sub, session_attr, &lines, &n,
                                         &rej)) {
      r = -1;
      break;
    }
  }
  if (r < 0) {
    g_string_truncate(out, lines.start);
    return fail(error, "not a well-formed protobuf ExportLogsServiceRequest");
  }
  if (lines.over)
    return too_large(&lines, error);
  *records += n;
  if (rejected)
    *rejected = rej;
  return TRUE;
}

/* ---- JSON (the OTLP/JSON mapping: lowerCamelCase names, 64-bit integers
 * as strings or numbers, bytes as base64) ------------------------------------- */

static JsonObject *
member_object(JsonObject *o, const char *name)
{
  JsonNode *n = o ? json_object_get_member(o, name) : NULL;
  return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

static JsonArray *
member_array(JsonObject *o, const char *name)
{
  JsonNode *n = o ? json_object_get_member(o, name) : NULL;
  return n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
}

/* A value node: a string, or a number, or NULL. */
static JsonNode *
member_value(JsonObject *o, const char *name)
{
  JsonNode *n = o ? json_object_get_member(o, name) : NULL;
  return n && JSON_NODE_HOLDS_VALUE(n) ? n : NULL;
}

/* An integer given as a number or a decimal string; 0 otherwise. */
static gint64
node_int(JsonNode *n, gboolean *ok)
{
  *ok = FALSE;
  if (!n)
    return 0;
  GType t = json_node_get_value_type(n);
  if (t == G_TYPE_INT64) {
    *ok = TRUE;
    return json_node_get_int(n);
  }
  if (t == G_TYPE_DOUBLE) {
    double d = json_node_get_double(n);
    *ok = d >= -9.2e18 && d <= 1.8e19;
    return !*ok ? 0 : d >= 9.2e18 ? (gint64)(guint64)d : (gint64)d;
  }
  if (t == G_TYPE_STRING) {
    const char *s = json_node_get_string(n);
    guint64 u;
    gint64 i;
    if (s && g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT64, &u, NULL)) {
      *ok = TRUE;
      return (gint64)u;
    }
    if (s && g_ascii_string_to_signed(s, 10, G_MININT64, 0, &i, NULL)) {
      *ok = TRUE;
      return i;
    }
  }
  return 0;
}

static void json_any(JsonObject *o, gboolean top, GString *out);

static void
json_list(JsonArray *a, gboolean kv, GString *out)
{
  g_string_append_c(out, kv ? '{' : '[');
  guint n = a ? json_array_get_length(a) : 0;
  gboolean first = TRUE;
  for (guint i = 0; i < n; i++) {
    JsonNode *e = json_array_get_element(a, i);
    JsonObject *o = JSON_NODE_HOLDS_OBJECT(e) ? json_node_get_object(e) : NULL;
    if (kv) {
      JsonNode *k = member_value(o, "key");
      const char *key = k && json_node_get_value_type(k) == G_TYPE_STRING
                            ? json_node_get_string(k) : NULL;
      if (!key)
        continue;
      if (!first)
        g_string_append_c(out, ',');
      txl_json_append_string(out, key, strlen(key));
      g_string_append_c(out, ':');
      o = member_object(o, "value");
    } else if (!first)
      g_string_append_c(out, ',');
    first = FALSE;
    json_any(o, FALSE, out);
  }
  g_string_append_c(out, kv ? '}' : ']');
}

/* AnyValue: at the top a string is itself, everything else JSON.  The
 * document's depth was bounded before parsing, so the recursion is. */
static void
json_any(JsonObject *o, gboolean top, GString *out)
{
  JsonNode *n;
  gboolean ok;
  if ((n = member_value(o, "stringValue")) &&
      json_node_get_value_type(n) == G_TYPE_STRING) {
    const char *s = json_node_get_string(n);
    if (top)
      g_string_append(out, s);
    else
      txl_json_append_string(out, s, strlen(s));
  } else if ((n = member_value(o, "boolValue")))
    g_string_append(out, json_node_get_boolean(n) ? "true" : "false");
  else if ((n = member_value(o, "intValue")) && (node_int(n, &ok), ok))
    g_string_append_printf(out, "%" G_GINT64_FORMAT, node_int(n, &ok));
  else if ((n = member_value(o, "doubleValue")))
    txl_json_append_double(out, "%.17g", json_node_get_double(n));
  else if (member_object(o, "arrayValue"))
    json_list(member_array(member_object(o, "arrayValue"), "values"), FALSE, out);
  else if (member_object(o, "kvlistValue"))
    json_list(member_array(member_object(o, "kvlistValue"), "values"), TRUE, out);
  else if ((n = member_value(o, "bytesValue")) &&
           json_node_get_value_type(n) == G_TYPE_STRING) {
    const char *s = json_node_get_string(n);
    txl_json_append_string(out, s, strlen(s));
  } else if (!top)
    g_string_append(out, "null");
}

/* Attributes (an array of KeyValue) into the resource or the record. */
static void
json_attrs(JsonArray *a, Res *res, Rec *rec, const char *session_attr)
{
  guint n = a ? json_array_get_length(a) : 0;
  for (guint i = 0; i < n; i++) {
    JsonNode *e = json_array_get_element(a, i);
    JsonObject *o = JSON_NODE_HOLDS_OBJECT(e) ? json_node_get_object(e) : NULL;
    JsonNode *k = member_value(o, "key");
    const char *key = k && json_node_get_value_type(k) == G_TYPE_STRING
                          ? json_node_get_string(k) : NULL;
    if (!key)
      continue;
    GString *to = NULL;
    if (res)
      to = res_target(res, key, strlen(key), session_attr);
    else if (is_session(key, strlen(key), session_attr)) {
      to = rec->session;
      rec->has_session = TRUE;
    }
    if (to) {
      g_string_truncate(to, 0);
      json_any(member_object(o, "value"), TRUE, to);
    }
  }
}

/* One LogRecord into a line; NULL, or why it is refused. */
static const char *
json_log_record(JsonObject *o, const Res *res, Rec *rec,
                const char *session_attr, GString *out)
{
  gboolean ok;
  rec_reset(rec);
  rec->time = (guint64)node_int(member_value(o, "timeUnixNano"), &ok);
  rec->observed = (guint64)node_int(member_value(o, "observedTimeUnixNano"), &ok);
  rec->severity_number = (guint64)node_int(member_value(o, "severityNumber"), &ok);
  JsonNode *s = member_value(o, "severityText");
  if (s && json_node_get_value_type(s) == G_TYPE_STRING)
    g_string_append(rec->severity, json_node_get_string(s));
  json_any(member_object(o, "body"), TRUE, rec->body);
  json_attrs(member_array(o, "attributes"), NULL, rec, session_attr);
  if (!rec->body->len)
    return REJ_BODY;
  emit(out, res, rec);
  return NULL;
}

/* The elements of o[name] that are objects, one by one. */
#define FOR_OBJECTS(o, name, var)                                              \
  for (JsonArray *a_##var = member_array(o, name); a_##var; a_##var = NULL)    \
    for (guint i_##var = 0; i_##var < json_array_get_length(a_##var); i_##var++) \
      for (JsonObject *var = JSON_NODE_HOLDS_OBJECT(json_array_get_element(     \
               a_##var, i_##var)) ? json_array_get_object_element(a_##var,     \
               i_##var) : NULL; var; var = NULL)

gboolean
txl_otlp_logs_json(const char *data, gsize len, const char *session_attr,
                   gsize max_out, GString *out, guint64 *records,
                   TxlOtlpRejected *rejected, GError **error)
{
  if (!txl_json_check_bounds(data, len, TXL_JSON_MAX_DEPTH,
                             TXL_JSON_MAX_BATCH_VALUES, "OTLP logs", error))
    return FALSE;
  g_autoptr(JsonParser) parser = json_parser_new_immutable();
  g_autoptr(GError) e = NULL;
  if (!json_parser_load_from_data(parser, data, (gssize)len, &e))
    return fail(error, "not JSON");
  JsonNode *root = json_parser_get_root(parser);
  if (!root || !JSON_NODE_HOLDS_OBJECT(root))
    return fail(error, "not a JSON ExportLogsServiceRequest object");
  Res res;
  Rec rec;
  Lines lines;
  lines_init(&lines, out, max_out);
  guint64 n = 0;
  TxlOtlpRejected rej = { 0, NULL };
  rec_init(&rec);
  FOR_OBJECTS(json_node_get_object(root), "resourceLogs", rl) {
    res_init(&res, &lines);
    json_attrs(member_array(member_object(rl, "resource"), "attributes"),
               &res, NULL, session_attr);
    FOR_OBJECTS(rl, "scopeLogs", sl) {
      JsonArray *a = member_array(sl, "logRecords");
      for (guint i = 0; a && i < json_array_get_length(a); i++) {
        JsonNode *el = json_array_get_element(a, i);
        const char *why = JSON_NODE_HOLDS_OBJECT(el)
            ? json_log_record(json_node_get_object(el), &res, &rec,
                              session_attr, out)
            : REJ_NOT_OBJECT;
        if (why)
          reject(&rej, why);
        else
          n++;
      }
    }
    res_clear(&res);
  }
  rec_clear(&rec);
  if (lines.over)
    return too_large(&lines, error);
  *records += n;
  if (rejected)
    *rejected = rej;
  return TRUE;
}
