/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strict safetensors reader.
 *
 * Layout: u64 little-endian header length N, N bytes of JSON, then the data
 * area.  The JSON maps tensor names to {dtype, shape, data_offsets} where
 * the offsets are relative to the start of the data area.  Everything in
 * the header is treated as hostile: a checkpoint downloaded from anywhere
 * must not be able to make us read outside the mapping, overflow a size
 * computation or allocate absurd amounts of memory. */
#include "safetensors.h"
#include "bytes.h"
#include "filemap.h"
#include "freeeach.h"
#include "jsondepth.h"

#include <errno.h>
#include <float.h>
#include <fcntl.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A real header is a few hundred bytes per tensor; anything this large is
 * either corrupt or an attempt to make us allocate. */
#define ST_MAX_HEADER (100u * 1000u * 1000u)

struct _StFile {
  void *map;        /* our mmap, or NULL for a borrowed buffer */
  size_t map_size;
  StTensor *tensors;
  gsize n_tensors;
  GHashTable *by_name; /* name -> StTensor* (borrowed) */
  GStringChunk *strings;
};

typedef struct {
  const char *name;
  StDtype dtype;
  unsigned size;
} DtypeInfo;

/* Every dtype the format defines; only the floating ones we can widen to
 * float32 get their own StDtype. */
static const DtypeInfo dtypes[] = {
  { "F32", ST_F32, 4 },       { "F16", ST_F16, 2 },
  { "BF16", ST_BF16, 2 },     { "F64", ST_F64, 8 },
  { "BOOL", ST_OTHER, 1 },    { "U8", ST_OTHER, 1 },
  { "I8", ST_OTHER, 1 },      { "F8_E5M2", ST_OTHER, 1 },
  { "F8_E4M3", ST_OTHER, 1 }, { "I16", ST_OTHER, 2 },
  { "U16", ST_OTHER, 2 },     { "I32", ST_OTHER, 4 },
  { "U32", ST_OTHER, 4 },     { "I64", ST_OTHER, 8 },
  { "U64", ST_OTHER, 8 },
};

static const DtypeInfo *
find_dtype(const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS(dtypes); i++)
    if (strcmp(dtypes[i].name, name) == 0)
      return &dtypes[i];
  return NULL;
}

static unsigned
dtype_size(StDtype d)
{
  switch (d) {
  case ST_F32: return 4;
  case ST_F16: return 2;
  case ST_BF16: return 2;
  case ST_F64: return 8;
  default: return 0;
  }
}

void
st_close(StFile *f)
{
  if (!f)
    return;
  g_clear_pointer(&f->by_name, g_hash_table_unref);
  g_clear_pointer(&f->strings, g_string_chunk_free);
  txl_unmap_file(f->map, f->map_size);
  txl_free_each(g_free, f->tensors, f);
}

gsize
st_n_tensors(const StFile *f)
{
  return f->n_tensors;
}

const StTensor *
st_tensor_at(const StFile *f, gsize i)
{
  return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const StTensor *
st_find(const StFile *f, const char *name)
{
  return g_hash_table_lookup(f->by_name, name);
}

/* ---- header parsing -------------------------------------------------- */

typedef struct {
  GHashTable *seen; /* "object-pointer/member" strings */
  gboolean duplicate;
  char *dup_name;
} DupCheck;

/* JsonObject silently keeps the last of repeated keys, which would let a
 * file describe one tensor twice and have the second silently win.  The
 * parser announces every member as it is read, so repeats are caught
 * here. */
static void
on_object_member(JsonParser *parser, JsonObject *object, const char *name,
                 gpointer user_data)
{
  DupCheck *dc = user_data;
  char *key = g_strdup_printf("%p/%s", (void *)object, name);
  if (!g_hash_table_add(dc->seen, key) && !dc->duplicate) {
    dc->duplicate = TRUE;
    dc->dup_name = g_strdup(name);
  }
}

static void G_GNUC_PRINTF(3, 4)
set_format_error(GError **error, const char *label, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT, "%s: %s", label, msg);
}

/* A JSON integer >= 0.  json-glib wraps literals beyond 64 bits into
 * negative numbers, so the sign test also catches those. */
static gboolean
node_uint(JsonNode *n, uint64_t *out)
{
  if (!n || !JSON_NODE_HOLDS_VALUE(n) ||
      json_node_get_value_type(n) != G_TYPE_INT64)
    return FALSE;
  gint64 v = json_node_get_int(n);
  if (v < 0)
    return FALSE;
  *out = (uint64_t)v;
  return TRUE;
}

typedef struct {
  uint64_t start, end;
  gsize index;
} Span;

static int
cmp_span(const void *a, const void *b)
{
  const Span *x = a, *y = b;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  return 0;
}

static gboolean
parse_entry(const char *label, const char *name, JsonNode *node,
            const guint8 *area, uint64_t area_size, StFile *f, StTensor *t,
            Span *span, GError **error)
{
  if (!JSON_NODE_HOLDS_OBJECT(node)) {
    set_format_error(error, label, "tensor '%s': entry is not a JSON object",
                     name);
    return FALSE;
  }
  JsonObject *o = json_node_get_object(node);

  JsonNode *dn = json_object_get_member(o, "dtype");
  if (!dn) {
    set_format_error(error, label, "tensor '%s': no \"dtype\"", name);
    return FALSE;
  }
  if (!JSON_NODE_HOLDS_VALUE(dn) ||
      json_node_get_value_type(dn) != G_TYPE_STRING) {
    set_format_error(error, label, "tensor '%s': \"dtype\" is not a string",
                     name);
    return FALSE;
  }
  const char *dname = json_node_get_string(dn);
  const DtypeInfo *di = find_dtype(dname);
  if (!di) {
    set_format_error(error, label, "tensor '%s': unknown dtype '%s'", name,
                     dname);
    return FALSE;
  }

  JsonNode *sn = json_object_get_member(o, "shape");
  if (!sn) {
    set_format_error(error, label, "tensor '%s': no \"shape\"", name);
    return FALSE;
  }
  if (!JSON_NODE_HOLDS_ARRAY(sn)) {
    set_format_error(error, label, "tensor '%s': \"shape\" is not an array",
                     name);
    return FALSE;
  }
  JsonArray *sa = json_node_get_array(sn);
  guint nd = json_array_get_length(sa);
  if (nd > ST_MAX_DIMS) {
    set_format_error(error, label,
                     "tensor '%s': %u dimensions, at most %d are supported",
                     name, nd, ST_MAX_DIMS);
    return FALSE;
  }
  /* The product of the non-zero dims must fit too: [0, 2^40, 2^40] holds
   * no data but is as surely corrupt as without the zero. */
  uint64_t nonzero = 1;
  gboolean overflow = FALSE, empty = FALSE;
  for (guint i = 0; i < nd; i++) {
    uint64_t d;
    if (!node_uint(json_array_get_element(sa, i), &d)) {
      set_format_error(error, label,
                       "tensor '%s': shape[%u] is not a non-negative integer",
                       name, i);
      return FALSE;
    }
    t->shape[i] = d;
    if (d == 0)
      empty = TRUE;
    else if (nonzero > G_MAXUINT64 / d)
      overflow = TRUE;
    else
      nonzero *= d;
  }
  uint64_t numel = empty ? 0 : nonzero;
  if (overflow || nonzero > G_MAXUINT64 / di->size) {
    set_format_error(error, label,
                     "tensor '%s': shape is too large (element count "
                     "overflows)", name);
    return FALSE;
  }
  uint64_t nbytes = numel * di->size;

  JsonNode *on = json_object_get_member(o, "data_offsets");
  if (!on) {
    set_format_error(error, label, "tensor '%s': no \"data_offsets\"", name);
    return FALSE;
  }
  if (!JSON_NODE_HOLDS_ARRAY(on) ||
      json_array_get_length(json_node_get_array(on)) != 2) {
    set_format_error(error, label,
                     "tensor '%s': \"data_offsets\" is not an array of two "
                     "integers", name);
    return FALSE;
  }
  JsonArray *oa = json_node_get_array(on);
  uint64_t start, end;
  if (!node_uint(json_array_get_element(oa, 0), &start) ||
      !node_uint(json_array_get_element(oa, 1), &end)) {
    set_format_error(error, label,
                     "tensor '%s': \"data_offsets\" must be non-negative "
                     "integers", name);
    return FALSE;
  }
  if (start > end) {
    set_format_error(error, label,
                     "tensor '%s': data_offsets [%" G_GUINT64_FORMAT
                     ", %" G_GUINT64_FORMAT "] end before start",
                     name, start, end);
    return FALSE;
  }
  if (end > area_size) {
    set_format_error(error, label,
                     "tensor '%s': data_offsets [%" G_GUINT64_FORMAT
                     ", %" G_GUINT64_FORMAT "] run past the data area (%"
                     G_GUINT64_FORMAT " bytes); the file may be truncated",
                     name, start, end, area_size);
    return FALSE;
  }
  if (end - start != nbytes) {
    set_format_error(error, label,
                     "tensor '%s': data_offsets cover %" G_GUINT64_FORMAT
                     " bytes but dtype %s and its shape need %"
                     G_GUINT64_FORMAT, name, end - start, dname, nbytes);
    return FALSE;
  }

  t->name = g_string_chunk_insert(f->strings, name);
  t->dtype = di->dtype;
  t->dtype_name = g_string_chunk_insert_const(f->strings, di->name);
  t->n_dims = (int)nd;
  for (guint i = nd; i < ST_MAX_DIMS; i++)
    t->shape[i] = 0;
  t->data = area + start;
  t->nbytes = nbytes;
  span->start = start;
  span->end = end;
  return TRUE;
}

static StFile *
parse_buffer(const guint8 *data, size_t size, const char *label,
             GError **error)
{
  if (size < 8) {
    set_format_error(error, label,
                     "%zu bytes is too short for a safetensors file (the "
                     "header length alone takes 8)", size);
    return NULL;
  }
  uint64_t hlen = txl_le_get64(data);
  if (hlen > size - 8) {
    set_format_error(error, label,
                     "header length %" G_GUINT64_FORMAT " exceeds the %zu "
                     "bytes that follow it; the file is truncated or not "
                     "safetensors", hlen, size - 8);
    return NULL;
  }
  if (hlen > ST_MAX_HEADER) {
    set_format_error(error, label,
                     "header length %" G_GUINT64_FORMAT " exceeds the limit "
                     "of %u bytes", hlen, ST_MAX_HEADER);
    return NULL;
  }
  if (hlen < 2) {
    set_format_error(error, label, "header length %" G_GUINT64_FORMAT
                     " is too short for a JSON object", hlen);
    return NULL;
  }
  const char *hdr = (const char *)data + 8;
  if (memchr(hdr, '\0', hlen)) {
    set_format_error(error, label, "header contains a NUL byte");
    return NULL;
  }
  /* json-glib recurses per level: a deep header would overflow the stack */
  if (!txl_json_check_depth(hdr, hlen, TXL_JSON_MAX_DEPTH, label, error))
    return NULL;
  const guint8 *area = data + 8 + hlen;
  uint64_t area_size = size - 8 - hlen;

  g_autoptr(JsonParser) parser = json_parser_new();
  DupCheck dc = { g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
                  FALSE, NULL };
  g_signal_connect(parser, "object-member", G_CALLBACK(on_object_member), &dc);
  GError *jerr = NULL;
  gboolean ok = json_parser_load_from_data(parser, hdr, (gssize)hlen, &jerr);
  g_hash_table_unref(dc.seen);
  g_autofree char *dup_name = dc.dup_name;
  if (!ok) {
    set_format_error(error, label, "header is not valid JSON: %s",
                     jerr->message);
    g_error_free(jerr);
    return NULL;
  }
  if (dc.duplicate) {
    set_format_error(error, label, "header repeats the key '%s'", dup_name);
    return NULL;
  }
  JsonNode *root = json_parser_get_root(parser);
  if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
    set_format_error(error, label, "header is not a JSON object");
    return NULL;
  }
  JsonObject *obj = json_node_get_object(root);

  StFile *f = g_new0(StFile, 1);
  f->strings = g_string_chunk_new(4096);
  f->by_name = g_hash_table_new(g_str_hash, g_str_equal);
  guint n_members = json_object_get_size(obj);
  f->tensors = g_new0(StTensor, MAX(n_members, 1));
  Span *spans = g_new0(Span, MAX(n_members, 1));

  /* Header order (get_members keeps it; the iterator does not). */
  GList *members = json_object_get_members(obj);
  for (GList *l = members; l; l = l->next) {
    const char *name = l->data;
    JsonNode *node = json_object_get_member(obj, name);
    if (strcmp(name, "__metadata__") == 0) {
      /* Free-form string map (framework, format); nothing we need. */
      if (!JSON_NODE_HOLDS_OBJECT(node)) {
        set_format_error(error, label, "\"__metadata__\" is not an object");
        g_list_free(members);
        goto fail;
      }
      continue;
    }
    gsize i = f->n_tensors;
    if (!parse_entry(label, name, node, area, area_size, f, &f->tensors[i],
                     &spans[i], error)) {
      g_list_free(members);
      goto fail;
    }
    spans[i].index = i;
    f->n_tensors++;
    g_hash_table_insert(f->by_name, (gpointer)f->tensors[i].name,
                        &f->tensors[i]);
  }
  g_list_free(members);

  /* Two tensors sharing bytes would alias; a writer never produces that. */
  qsort(spans, f->n_tensors, sizeof *spans, cmp_span);
  uint64_t reach = 0;
  gsize reach_idx = 0;
  for (gsize i = 0; i < f->n_tensors; i++) {
    if (spans[i].start == spans[i].end)
      continue;
    if (spans[i].start < reach) {
      set_format_error(error, label,
                       "tensors '%s' and '%s' overlap in the data area",
                       f->tensors[reach_idx].name,
                       f->tensors[spans[i].index].name);
      goto fail;
    }
    reach = spans[i].end;
    reach_idx = spans[i].index;
  }
  g_free(spans);
  return f;

fail:
  g_free(spans);
  st_close(f);
  return NULL;
}

StFile *
st_parse(const void *data, size_t size, GError **error)
{
  g_return_val_if_fail(data != NULL || size == 0, NULL);
  return parse_buffer(data, size, "safetensors", error);
}

StFile *
st_open(const char *path, GError **error)
{
  gsize size;
  void *map = txl_map_file(path, "a safetensors file", &size, error);
  if (!map)
    return NULL;
  StFile *f = parse_buffer(map, size, path, error);
  if (!f) {
    txl_unmap_file(map, size);
    return NULL;
  }
  f->map = map;
  f->map_size = size;
  return f;
}

/* ---- conversion to float32 ----------------------------------------- */

static float
bits_to_float(uint32_t u)
{
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* IEEE binary16 -> binary32; exact for every input.  Subnormal halves
 * are m * 2^-24, which is exactly representable in float32. */
static float
half_to_float(uint16_t h)
{
  uint32_t sign = (uint32_t)(h >> 15) << 31;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) /* inf, or NaN with its payload kept (quiet or not) */
    return bits_to_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float v = ldexpf((float)man, -24);
    return sign ? -v : v;
  }
  return bits_to_float(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

float *
st_to_f32(const StTensor *t, gsize *n, GError **error)
{
  unsigned esize = dtype_size(t->dtype);
  if (esize == 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "tensor '%s': dtype %s cannot be converted to float32",
                t->name, t->dtype_name);
    return NULL;
  }
  if (t->nbytes % esize != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "tensor '%s': %" G_GUINT64_FORMAT " bytes is not a whole "
                "number of %s elements", t->name, t->nbytes, t->dtype_name);
    return NULL;
  }
  uint64_t count = t->nbytes / esize;
  if (count > G_MAXSIZE / sizeof(float)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "tensor '%s': too large for this system", t->name);
    return NULL;
  }
  /* At least one element so that success is never a NULL return. */
  float *out = g_try_malloc(MAX(count, 1) * sizeof(float));
  if (!out) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO,
                "tensor '%s': out of memory for %" G_GUINT64_FORMAT
                " floats", t->name, count);
    return NULL;
  }
  /* The data area is at an arbitrary offset, so read bytes, never cast
   * the pointer; little endian is what the format prescribes. */
  const guint8 *p = t->data;
  switch (t->dtype) {
  case ST_F32:
    for (uint64_t i = 0; i < count; i++)
      out[i] = bits_to_float(txl_le_get32(p + 4 * i));
    break;
  case ST_F16:
    for (uint64_t i = 0; i < count; i++)
      out[i] = half_to_float(txl_le_get16(p + 2 * i));
    break;
  case ST_BF16:
    for (uint64_t i = 0; i < count; i++)
      out[i] = bits_to_float((uint32_t)txl_le_get16(p + 2 * i) << 16);
    break;
  case ST_F64:
    for (uint64_t i = 0; i < count; i++) {
      uint64_t u = txl_le_get64(p + 8 * i);
      double d;
      memcpy(&d, &u, sizeof d);
      /* Out-of-range double -> float is undefined behaviour in C. */
      if (isfinite(d) && fabs(d) > FLT_MAX)
        out[i] = d > 0 ? INFINITY : -INFINITY;
      else
        out[i] = (float)d;
    }
    break;
  default:
    g_assert_not_reached();
  }
  if (n)
    *n = (gsize)count;
  return out;
}
