/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* HTTP ingest (txld_ingest.h, docs/ingest.md).  Runs on the main loop, as
 * every handler does; the body is already in memory, bounded by
 * --ingest-max-body (txld_httpconn.c), and so is what a compressed body
 * decodes to (txld_decompress.c).
 *
 * A request is all or nothing: it is decoded whole into one buffer of
 * lines, each ending in LF, and pushed into the appsrc in one piece, so
 * lines of two requests never interleave and a malformed request adds
 * nothing.  Only OTLP log records refused one by one (no body, their own
 * bytes malformed) are left out of a request that is otherwise taken,
 * and said so in its partial_success answer.  What 200 means is written down in docs/ingest.md: the lines
 * are queued in the running pipeline's memory, no more. */
#include "txld_ingest.h"
#include "txld_decompress.h"
#include "txld_log.h"

#include "txl_formats.h"
#include "txl_ingest.h"
#include "txl_text.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define TOKEN_MAX 4096

guint64 txld_ingest_max_body = TXLD_HTTP_DEFAULT_MAX_INGEST_BODY;
/* An OTLP request's lines may come to this many times --ingest-max-body
 * (records of a few bytes each repeat their resource's fields): 413 past
 * it.  Ordinary records come to 1.1 to 1.7 times their protobuf
 * (docs/notes/2026-11-29-txld-floods.md). */
#define DECODED_PER_BODY 4

/* What a request came to, for /metrics. */
enum { C_OK, C_BAD, C_AUTH, C_LARGE, C_TYPE, C_BUSY, C_DOWN, N_CODES };
static const guint code_status[N_CODES] = { 200, 400, 401, 413, 415, 429,
                                            503 };

typedef struct {
  guint64 requests[N_CODES];
  guint64 lines, bytes;
  guint64 rejected; /* OTLP log records refused one by one */
} Counts;

static GHashTable *counts; /* pipeline name -> Counts */

static Counts *
counts_of(const char *name)
{
  if (!counts)
    counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  Counts *c = g_hash_table_lookup(counts, name);
  if (!c) {
    c = g_new0(Counts, 1);
    g_hash_table_insert(counts, g_strdup(name), c);
  }
  return c;
}

gboolean
txld_ingest_path(const char *path)
{
  if (!path)
    return FALSE;
  if (strcmp(path, "/v1/logs") == 0)
    return TRUE;
  if (!g_str_has_prefix(path, "/pipelines/"))
    return FALSE;
  const char *slash = strchr(path + strlen("/pipelines/"), '/');
  return slash && (strcmp(slash, "/lines") == 0 ||
                   strcmp(slash, "/v1/logs") == 0);
}

void
txld_ingest_prepare(TxldPipeline *p)
{
  if (!p->conf->ingest || !p->pipeline || !GST_IS_BIN(p->pipeline))
    return;
  GstElement *src = gst_bin_get_by_name(GST_BIN(p->pipeline),
                                        TXLD_INGEST_ELEMENT);
  if (!src || !g_object_class_find_property(G_OBJECT_GET_CLASS(src),
                                            "current-level-bytes")) {
    txld_log(G_LOG_LEVEL_WARNING, p->conf->name, "%s: ingest = true but the "
             "launch description has no 'appsrc name=" TXLD_INGEST_ELEMENT
             "': POST requests are answered 409", p->conf->file);
    g_clear_object(&src);
    return;
  }
  /* txld bounds the queue itself (429), so appsrc never blocks the main
   * loop (block=false).  Time format: each buffer carries its arrival on
   * the pipeline clock (push), as a live source's do-timestamp does, so
   * txlsink gives its lines a latency (txld_pipeline_line_latency_seconds).
   * Live, as it is: the pipeline then goes to PLAYING, and has a clock,
   * without waiting for a first buffer to preroll, so the first requests
   * are timed too */
  GstCaps *caps = NULL;
  g_object_get(src, "caps", &caps, NULL);
  if (!caps) {
    caps = gst_caps_from_string("text/x-raw, format=(string)utf8");
    g_object_set(src, "caps", caps, NULL);
  }
  gst_caps_unref(caps);
  g_object_set(src, "format", GST_FORMAT_TIME, "is-live", TRUE, "block",
               FALSE, "max-bytes", (guint64)p->conf->ingest_queue, NULL);
  gst_object_unref(src);
}

/* ---- answers ---------------------------------------------------------------- */

typedef enum { FORM_LINES, FORM_OTLP_PROTO, FORM_OTLP_JSON } Form;

static void
pb_varint(GString *o, guint64 v)
{
  for (;; v >>= 7) {
    g_string_append_c(o, (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
    if (v <= 0x7f)
      break;
  }
}

/* field: its number; a length-delimited value */
static void
pb_bytes(GString *o, guint field, const char *data, gsize n)
{
  pb_varint(o, (guint64)field << 3 | 2);
  pb_varint(o, n);
  g_string_append_len(o, data, n);
}

/* A google.rpc.Status {1: int32 code, 2: string message}, as OTLP asks
 * of a failed request, in the request's encoding. */
static void
answer(SoupServerMessage *msg, Form form, guint status, int grpc_code,
       const char *text)
{
  GString *o = g_string_new(NULL);
  const char *type = "application/json";
  if (form == FORM_OTLP_PROTO) {
    type = "application/x-protobuf";
    if (status != 200) {
      pb_varint(o, 1 << 3);
      pb_varint(o, (guint64)grpc_code);
      pb_bytes(o, 2, text, strlen(text));
    }
  } else if (form == FORM_OTLP_JSON && status == 200)
    g_string_append(o, "{}\n");
  else if (form == FORM_OTLP_JSON) {
    g_string_append_printf(o, "{\"code\": %d, \"message\": ", grpc_code);
    txl_json_append_string(o, text, strlen(text));
    g_string_append(o, "}\n");
  } else {
    g_string_append_printf(o, "{\"ok\": %s, ", status == 200 ? "true" : "false");
    g_string_append(o, status == 200 ? "\"lines\": " : "\"error\": ");
    g_string_append(o, text);
    g_string_append(o, "}\n");
  }
  txld_http_reply(msg, status, type, o);
}

/* 200 to an OTLP request some of whose records were refused: an
 * ExportLogsServiceResponse {1: ExportLogsPartialSuccess {1: int64
 * rejected_log_records, 2: string error_message}} in the request's
 * encoding (JSON: lowerCamelCase, the int64 as a string, as protobuf's
 * JSON mapping writes it). */
static void
answer_partial(SoupServerMessage *msg, Form form, const TxlOtlpRejected *rej)
{
  g_autofree char *text = g_strdup_printf(
      "%" G_GUINT64_FORMAT " log record%s rejected, the first: %s",
      rej->count, rej->count == 1 ? "" : "s", rej->first);
  GString *o = g_string_new(NULL);
  if (form == FORM_OTLP_PROTO) {
    g_autoptr(GString) ps = g_string_new(NULL);
    pb_varint(ps, 1 << 3);
    pb_varint(ps, rej->count);
    pb_bytes(ps, 2, text, strlen(text));
    pb_bytes(o, 1, ps->str, ps->len);
    txld_http_reply(msg, 200, "application/x-protobuf", o);
    return;
  }
  g_string_append_printf(o, "{\"partialSuccess\": {\"rejectedLogRecords\": \"%"
                         G_GUINT64_FORMAT "\", \"errorMessage\": ", rej->count);
  txl_json_append_string(o, text, strlen(text));
  g_string_append(o, "}}\n");
  txld_http_reply(msg, 200, "application/json", o);
}

static void
refuse(SoupServerMessage *msg, Form form, guint status, const char *text)
{
  int grpc = status == 401 ? 16 : status == 429 ? 8 : status == 503 ? 14
             : status == 404 ? 5 : 3;
  g_autoptr(GString) q = g_string_new(NULL);
  txl_json_append_string(q, text, strlen(text));
  answer(msg, form, status, grpc, form == FORM_LINES ? q->str : text);
}

static void
retry_after(SoupServerMessage *msg, double seconds)
{
  g_autofree char *v = g_strdup_printf("%.0f", ceil(MAX(1.0, seconds)));
  soup_message_headers_replace(soup_server_message_get_response_headers(msg),
                               "Retry-After", v);
}

/* ---- checks before the body is looked at ------------------------------------ */

/* Whether the request carries the pipeline's token.  Without a token file
 * every request passes; a token file that cannot be read lets none in. */
static gboolean
authorized(TxldPipeline *p, SoupMessageHeaders *headers, const char **why)
{
  const char *file = p->conf->ingest_token;
  if (!file)
    return TRUE;
  gsize n = 0;
  /* small and regular: a FIFO or a device named by mistake must not
   * block the main loop */
  g_autofree char *tok = txl_read_small_file(file, "a token file", TOKEN_MAX,
                                             &n, NULL);
  if (!tok) {
    *why = "the pipeline's ingest-token-file cannot be read: no request "
           "is let in";
    return FALSE;
  }
  g_strstrip(tok);
  *why = "a bearer token is required (Authorization: Bearer TOKEN)";
  const char *h = soup_message_headers_get_one(headers, "Authorization");
  if (!*tok || !h || g_ascii_strncasecmp(h, "Bearer ", 7) != 0)
    return FALSE;
  const char *got = h + 7;
  gsize a = strlen(got), b = strlen(tok);
  /* every byte compared whatever the first difference, so the time taken
   * does not tell how much of a guess was right */
  guchar diff = a != b;
  for (gsize i = 0; i < MAX(a, b); i++)
    diff |= (guchar)(i < a ? got[i] : 0) ^ (guchar)(i < b ? tok[i] : 0);
  return diff == 0;
}

/* The running pipeline's appsrc, or NULL after answering why not. */
static GstElement *
ingest_source(TxldPipeline *p, SoupServerMessage *msg, Form form)
{
  if (p->state != TXLD_RUNNING || !p->pipeline) {
    retry_after(msg, p->state == TXLD_BACKOFF ? p->next_delay : 5.0);
    g_autofree char *why = g_strdup_printf("the pipeline is %s, not running",
                                           txld_state_name(p->state));
    refuse(msg, form, 503, why);
    return NULL;
  }
  GstElement *src = gst_bin_get_by_name(GST_BIN(p->pipeline),
                                        TXLD_INGEST_ELEMENT);
  if (!src || !g_object_class_find_property(G_OBJECT_GET_CLASS(src),
                                            "current-level-bytes")) {
    g_clear_object(&src);
    refuse(msg, form, 409, "the pipeline has no 'appsrc name="
           TXLD_INGEST_ELEMENT "' in its launch description");
  }
  return src;
}

/* The body, decompressed when it came with a Content-Encoding (never
 * past max: txld_decompress.h). */
static GBytes *
request_body(SoupServerMessage *msg, guint64 max, guint *status,
             const char **why)
{
  SoupMessageBody *mb = soup_server_message_get_request_body(msg);
  g_autoptr(GBytes) raw = soup_message_body_flatten(mb);
  const char *enc = soup_message_headers_get_one(
      soup_server_message_get_request_headers(msg), "Content-Encoding");
  return txld_decompress(raw, enc, max, status, why);
}

/* ---- bodies into lines -------------------------------------------------------- */

/* A JSON array of objects: one compact JSON line each (a string element
 * is a plain line). */
static gboolean
json_array_lines(const char *data, gsize len, GString *out, GError **error)
{
  if (!txl_json_check_bounds(data, len, TXL_JSON_MAX_DEPTH,
                             TXL_JSON_MAX_BATCH_VALUES, "body", error))
    return FALSE;
  g_autoptr(JsonParser) parser = json_parser_new_immutable();
  if (!json_parser_load_from_data(parser, data, (gssize)len, error))
    return FALSE;
  JsonNode *root = json_parser_get_root(parser);
  JsonArray *a = JSON_NODE_HOLDS_ARRAY(root) ? json_node_get_array(root) : NULL;
  for (guint i = 0; a && i < json_array_get_length(a); i++) {
    JsonNode *e = json_array_get_element(a, i);
    if (JSON_NODE_HOLDS_VALUE(e) &&
        json_node_get_value_type(e) == G_TYPE_STRING) {
      const char *s = json_node_get_string(e);
      txl_record_append(out, NULL, 0, s, strlen(s));
      continue;
    }
    g_autofree char *s = json_to_string(e, FALSE);
    g_string_append(out, s);
    g_string_append_c(out, '\n');
  }
  return TRUE;
}

/* NDJSON and plain text pass as they are, with a last LF added so that
 * the next request's first line does not join this one's last. */
static gboolean
to_lines(const char *type, const char *data, gsize len, GString *out,
         GError **error)
{
  gsize i = 0;
  while (i < len && g_ascii_isspace(data[i]))
    i++;
  if (type && g_ascii_strncasecmp(type, "application/json", 16) == 0 &&
      i < len && data[i] == '[')
    return json_array_lines(data, len, out, error);
  g_string_append_len(out, data, len);
  if (len && data[len - 1] != '\n')
    g_string_append_c(out, '\n');
  return TRUE;
}

static gboolean
decode(Form form, TxldPipeline *p, const char *type, GBytes *body,
       GString *out, guint64 *n, TxlOtlpRejected *rej, GError **error)
{
  gsize len;
  const char *data = g_bytes_get_data(body, &len);
  /* each OTLP record repeats its resource's fields: the lines may come
   * to more than the body, but not to more than this */
  gsize max_out = txld_ingest_max_body > G_MAXSIZE / DECODED_PER_BODY
                      ? G_MAXSIZE : txld_ingest_max_body * DECODED_PER_BODY;
  if (form == FORM_OTLP_PROTO)
    return txl_otlp_logs_protobuf((const guint8 *)data, len,
                                  p->conf->otlp_session, max_out, out, n, rej,
                                  error);
  if (form == FORM_OTLP_JSON)
    return txl_otlp_logs_json(data, len, p->conf->otlp_session, max_out, out,
                              n, rej, error);
  if (!to_lines(type, data, len, out, error))
    return FALSE;
  for (gsize i = 0; i < out->len; i++)
    *n += out->str[i] == '\n';
  return TRUE;
}

/* ---- one request ------------------------------------------------------------------ */

/* Now on the pipeline's clock (running time), or NONE without one. */
static GstClockTime
arrival(GstElement *src)
{
  GstClock *clock = gst_element_get_clock(src);
  if (!clock)
    return GST_CLOCK_TIME_NONE;
  GstClockTime now = gst_clock_get_time(clock);
  GstClockTime base = gst_element_get_base_time(src);
  gst_object_unref(clock);
  return GST_CLOCK_TIME_IS_VALID(base) && now >= base ? now - base
                                                      : GST_CLOCK_TIME_NONE;
}

/* The lines into the appsrc (taking them), or 429 while it holds too
 * much already.  A batch larger than the bound alone goes in when the
 * queue is empty, or it never could. */
static guint
push(TxldPipeline *p, GstElement *src, GString *lines)
{
  guint64 level = 0;
  g_object_get(src, "current-level-bytes", &level, NULL);
  gsize n = lines->len;
  if (!n || (level > 0 && level + n > p->conf->ingest_queue)) {
    g_string_free(lines, TRUE);
    return n ? 429 : 200;
  }
  GstBuffer *buf = gst_buffer_new_wrapped(g_string_free(lines, FALSE), n);
  /* when the lines arrived: the time they wait in the queue counts in
   * their latency */
  GST_BUFFER_PTS(buf) = arrival(src);
  GstFlowReturn ret = GST_FLOW_OK;
  g_signal_emit_by_name(src, "push-buffer", buf, &ret);
  gst_buffer_unref(buf);
  return ret == GST_FLOW_OK ? 200 : 503;
}

static Form
form_of(gboolean otlp, const char *type, gboolean *ok)
{
  *ok = TRUE;
  if (!otlp)
    return FORM_LINES;
  if (type && g_ascii_strncasecmp(type, "application/x-protobuf", 22) == 0)
    return FORM_OTLP_PROTO;
  *ok = type && g_ascii_strncasecmp(type, "application/json", 16) == 0;
  return FORM_OTLP_JSON;
}

static void
serve(TxldDaemon *d, TxldPipeline *p, SoupServerMessage *msg, gboolean otlp)
{
  (void)d;
  Counts *c = counts_of(p->conf->name);
  const char *type = soup_message_headers_get_one(
      soup_server_message_get_request_headers(msg), "Content-Type");
  gboolean type_ok;
  Form form = form_of(otlp, type, &type_ok);
  const char *why = NULL;
  if (!authorized(p, soup_server_message_get_request_headers(msg), &why)) {
    c->requests[C_AUTH]++;
    soup_message_headers_replace(soup_server_message_get_response_headers(msg),
                                 "WWW-Authenticate", "Bearer realm=\"txld\"");
    refuse(msg, form, 401, why);
    return;
  }
  if (!type_ok) {
    c->requests[C_TYPE]++;
    refuse(msg, form, 415, "OTLP/HTTP: Content-Type application/x-protobuf "
           "or application/json");
    return;
  }
  g_autoptr(GstElement) src = ingest_source(p, msg, form);
  if (!src) {
    c->requests[C_DOWN]++;
    return;
  }
  guint status = 0;
  GBytes *body = request_body(msg, txld_ingest_max_body, &status, &why);
  if (!body) {
    c->requests[status == 415 ? C_TYPE : status == 413 ? C_LARGE
                : status == 503 ? C_DOWN : C_BAD]++;
    refuse(msg, form, status, why);
    return;
  }
  GString *lines = g_string_new(NULL);
  guint64 n = 0;
  TxlOtlpRejected rej = { 0, NULL };
  g_autoptr(GError) e = NULL;
  gboolean ok = decode(form, p, type, body, lines, &n, &rej, &e);
  g_bytes_unref(body);
  if (!ok) {
    g_string_free(lines, TRUE);
    gboolean large = g_error_matches(e, TXL_ERROR, TXL_ERROR_INVALID);
    c->requests[large ? C_LARGE : C_BAD]++;
    refuse(msg, form, large ? 413 : 400, e->message);
    return;
  }
  gsize bytes = lines->len;
  status = push(p, src, lines);
  if (status == 429) {
    c->requests[C_BUSY]++;
    retry_after(msg, 1.0);
    refuse(msg, form, 429, "the pipeline is behind: its ingest queue is "
           "over ingest-max-queue");
    return;
  }
  if (status != 200) {
    c->requests[C_DOWN]++;
    retry_after(msg, 5.0);
    refuse(msg, form, 503, "the pipeline's source did not take the lines");
    return;
  }
  c->requests[C_OK]++;
  c->lines += n;
  c->bytes += bytes;
  c->rejected += rej.count;
  if (rej.count) {
    answer_partial(msg, form, &rej);
    return;
  }
  g_autofree char *num = g_strdup_printf("%" G_GUINT64_FORMAT, n);
  answer(msg, form, 200, 0, num);
}

static TxldDaemon *the_daemon; /* for txld_ingest_admit */

void
txld_ingest_init(TxldDaemon *d, guint64 max_body)
{
  the_daemon = d;
  txld_ingest_max_body = max_body;
}

/* The pipeline an ingest path is for, or NULL with the answer's status
 * and reason. */
static TxldPipeline *
route(TxldDaemon *d, const char *path, const char **why)
{
  if (strcmp(path, "/v1/logs") == 0) {
    for (guint i = 0; i < d->pipelines->len; i++)
      if (((TxldPipeline *)d->pipelines->pdata[i])->conf->otlp)
        return d->pipelines->pdata[i];
    *why = "no pipeline has otlp = true";
    return NULL;
  }
  g_autofree char *name = g_strdup(path + strlen("/pipelines/"));
  *strchr(name, '/') = '\0';
  TxldPipeline *p = txld_daemon_find(d, name);
  if (p && p->conf->ingest)
    return p;
  *why = p ? "this pipeline does not take lines over HTTP (ingest = true)"
           : "no such pipeline";
  return NULL;
}

gboolean
txld_ingest_admit(const char *path, SoupMessageHeaders *headers,
                  guint *status, const char **why)
{
  if (!the_daemon || !txld_ingest_path(path))
    return TRUE;
  TxldPipeline *p = route(the_daemon, path, why);
  *status = 404;
  if (!p)
    return FALSE;
  if (authorized(p, headers, why))
    return TRUE;
  counts_of(p->conf->name)->requests[C_AUTH]++;
  *status = 401;
  return FALSE;
}

gboolean
txld_ingest_handle(TxldDaemon *d, SoupServerMessage *msg, const char *path)
{
  if (!txld_ingest_path(path))
    return FALSE;
  gboolean otlp = g_str_has_suffix(path, "/v1/logs");
  const char *why = NULL;
  TxldPipeline *p = route(d, path, &why);
  if (!p) {
    refuse(msg, otlp ? FORM_OTLP_JSON : FORM_LINES, 404, why);
    return TRUE;
  }
  if (strcmp(soup_server_message_get_method(msg), "POST") != 0) {
    soup_message_headers_replace(soup_server_message_get_response_headers(msg),
                                 "Allow", "POST");
    refuse(msg, otlp ? FORM_OTLP_JSON : FORM_LINES, 405, "use POST");
    return TRUE;
  }
  serve(d, p, msg, otlp);
  return TRUE;
}

/* A counter of Counts (the guint64 at `member`), one sample for each
 * pipeline that takes ingest. */
static void
ingest_counter(TxldDaemon *d, GString *o, const char *name, const char *help,
               gsize member)
{
  g_string_append_printf(o, "# HELP %s %s\n# TYPE %s counter\n", name, help,
                         name);
  for (guint i = 0; i < d->pipelines->len; i++) {
    TxldPipeline *p = d->pipelines->pdata[i];
    if (p->conf->ingest)
      g_string_append_printf(o, "%s{pipeline=\"%s\"} %" G_GUINT64_FORMAT "\n",
                             name, p->conf->name,
                             G_STRUCT_MEMBER(guint64, counts_of(p->conf->name),
                                             member));
  }
}

void
txld_ingest_metrics(TxldDaemon *d, GString *o)
{
  g_string_append(o, "# HELP txld_ingest_requests_total Ingest requests "
                  "(POST .../lines, /v1/logs) by answer.\n# TYPE "
                  "txld_ingest_requests_total counter\n");
  for (guint i = 0; i < d->pipelines->len; i++) {
    TxldPipeline *p = d->pipelines->pdata[i];
    if (!p->conf->ingest)
      continue;
    Counts *c = counts_of(p->conf->name);
    for (int k = 0; k < N_CODES; k++)
      g_string_append_printf(o, "txld_ingest_requests_total{pipeline=\"%s\","
                             "code=\"%u\"} %" G_GUINT64_FORMAT "\n",
                             p->conf->name, code_status[k], c->requests[k]);
  }
  ingest_counter(d, o, "txld_ingest_lines_total",
                 "Lines accepted by ingest (queued in the pipeline).",
                 G_STRUCT_OFFSET(Counts, lines));
  ingest_counter(d, o, "txld_ingest_rejected_records_total",
                 "OTLP log records refused one by one, the rest of their "
                 "request taken (partial success).",
                 G_STRUCT_OFFSET(Counts, rejected));
  g_string_append(o, "# HELP txld_ingest_queued_bytes Bytes accepted and not "
                  "yet taken by the pipeline (its appsrc's queue).\n# TYPE "
                  "txld_ingest_queued_bytes gauge\n");
  for (guint i = 0; i < d->pipelines->len; i++) {
    TxldPipeline *p = d->pipelines->pdata[i];
    GstElement *src = p->conf->ingest && p->pipeline
        ? gst_bin_get_by_name(GST_BIN(p->pipeline), TXLD_INGEST_ELEMENT) : NULL;
    guint64 level = 0;
    if (src && g_object_class_find_property(G_OBJECT_GET_CLASS(src),
                                            "current-level-bytes"))
      g_object_get(src, "current-level-bytes", &level, NULL);
    g_clear_object(&src);
    if (p->conf->ingest)
      g_string_append_printf(o, "txld_ingest_queued_bytes{pipeline=\"%s\"} %"
                             G_GUINT64_FORMAT "\n", p->conf->name, level);
  }
}
