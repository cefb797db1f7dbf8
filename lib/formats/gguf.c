/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strict GGUF v3 reader.
 *
 * The whole header is walked and checked once, in gguf_parse(), before any
 * GgufFile is handed out: every length is compared with the bytes that are
 * really left, every count is bounded by them before anything is allocated,
 * and every tensor's range is checked against the file and against the other
 * tensors.  The getters afterwards only decode values that are known to lie
 * inside the buffer, so they need no bounds checks of their own. */
#include "gguf.h"
#include "bytes.h"
#include "filemap.h"
#include "freeeach.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_KEY_LEN (64u * 1024u)
#define MAX_TENSOR_NAME_LEN 256u
#define MAX_ALIGNMENT (1u << 20)
/* Far above any real model, low enough that a hostile count cannot make
 * the up-front allocations (or a getter's copy) reach gigabytes. */
#define MAX_KVS (1u << 20)
#define MAX_TENSORS (1u << 20)
#define MAX_ARRAY_GET (1u << 26) /* the largest vocabulary config accepts */

/* The smallest encodings, used to bound hostile counts by the bytes left:
 * a kv is a key length, a 1-byte key, a type and a 1-byte value; a tensor
 * info is a name length, a 1-byte name, n_dims, one dim, type and offset. */
#define MIN_KV_BYTES (8u + 1u + 4u + 1u)
#define MIN_TENSOR_INFO_BYTES (8u + 1u + 4u + 8u + 4u + 8u)

typedef struct {
  char *key;
  uint32_t type;
  /* Arrays: element type and count, val at the first element.  Strings:
   * count is the byte length, val at the bytes.  Scalars: val at the
   * value. */
  uint32_t elem_type;
  uint64_t count;
  const guint8 *val;
  /* The value as encoded after its type field, for copying it unparsed. */
  const guint8 *raw;
  uint64_t raw_len;
} GgufKv;

struct _GgufFile {
  const guint8 *data;
  size_t size;
  void *map; /* non-NULL when gguf_open() mapped the file */
  size_t map_size;
  uint32_t version;
  uint32_t alignment;
  GgufKv *kvs;
  gsize n_kvs;
  GHashTable *kv_index; /* key -> GgufKv* */
  GgufTensor *tensors;
  gsize n_tensors;
  GHashTable *tensor_index; /* name -> GgufTensor* */
};

/* ---- types ---------------------------------------------------------- */

static const char *
type_name(uint32_t t)
{
  static const char *const names[] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string",
    "array", "u64", "i64", "f64",
  };
  return t < G_N_ELEMENTS(names) ? names[t] : "unknown";
}

/* Size of a fixed-size value type; 0 for string, array and unknown. */
static unsigned
type_size(uint32_t t)
{
  switch (t) {
  case GGUF_TYPE_UINT8:
  case GGUF_TYPE_INT8:
  case GGUF_TYPE_BOOL:
    return 1;
  case GGUF_TYPE_UINT16:
  case GGUF_TYPE_INT16:
    return 2;
  case GGUF_TYPE_UINT32:
  case GGUF_TYPE_INT32:
  case GGUF_TYPE_FLOAT32:
    return 4;
  case GGUF_TYPE_UINT64:
  case GGUF_TYPE_INT64:
  case GGUF_TYPE_FLOAT64:
    return 8;
  default:
    return 0;
  }
}

static gboolean
type_is_int(uint32_t t)
{
  return t <= GGUF_TYPE_INT32 || t == GGUF_TYPE_UINT64 ||
         t == GGUF_TYPE_INT64;
}

static gboolean
type_is_bool(uint32_t t)
{
  return t == GGUF_TYPE_BOOL;
}

static gboolean
type_is_string(uint32_t t)
{
  return t == GGUF_TYPE_STRING;
}

static gboolean
type_is_float(uint32_t t)
{
  return t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64;
}

static gboolean
type_is_known(uint32_t t)
{
  return t <= GGUF_TYPE_FLOAT64;
}

static const char *
tensor_type_name(uint32_t t)
{
  return t == GGUF_TENSOR_F32 ? "F32" : t == GGUF_TENSOR_F16 ? "F16" : "?";
}

/* ---- cursor --------------------------------------------------------- */

typedef struct {
  const guint8 *p;
  uint64_t size;
  uint64_t pos;
} Cursor;

static uint64_t
left(const Cursor *c)
{
  return c->size - c->pos;
}

/* Consumes n bytes; FALSE (nothing consumed) if fewer are left.  Comparing
 * n with what is left, never pos + n with size, keeps a hostile n from
 * wrapping around. */
static gboolean
take(Cursor *c, uint64_t n, const guint8 **out)
{
  if (n > left(c))
    return FALSE;
  if (out)
    *out = c->p + c->pos;
  c->pos += n;
  return TRUE;
}

static gboolean
take_u32(Cursor *c, uint32_t *v)
{
  const guint8 *b;
  if (!take(c, 4, &b))
    return FALSE;
  *v = txl_le_get32(b);
  return TRUE;
}

static gboolean
take_u64(Cursor *c, uint64_t *v)
{
  const guint8 *b;
  if (!take(c, 8, &b))
    return FALSE;
  *v = txl_le_get64(b);
  return TRUE;
}

static gboolean
truncated(const Cursor *c, const char *what, GError **error)
{
  txl_fail(error, TXL_ERROR_FORMAT,
           "truncated: %s at offset %" G_GUINT64_FORMAT
           " runs past the end of the file (%" G_GUINT64_FORMAT " bytes)",
           what, c->pos, c->size);
  return FALSE;
}

/* Reads a name (key or tensor name) into a fresh NUL-terminated copy.
 * Names end up in error messages and hash tables, hence non-empty, no NUL
 * and valid UTF-8.  `what` and `idx` only serve the error message. */
static char *
read_name(Cursor *c, const char *what, uint64_t idx, uint64_t max_len,
          GError **error)
{
  uint64_t pos = c->pos;
  uint64_t len;
  const guint8 *b;
  if (!take_u64(c, &len)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "truncated: length of %s #%" G_GUINT64_FORMAT
             " name at offset %" G_GUINT64_FORMAT
             " runs past the end of the file (%" G_GUINT64_FORMAT " bytes)",
             what, idx, pos, c->size);
    return NULL;
  }
  if (len == 0) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "%s #%" G_GUINT64_FORMAT " has an empty name", what, idx);
    return NULL;
  }
  if (len > max_len) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "%s #%" G_GUINT64_FORMAT " name is %" G_GUINT64_FORMAT
             " bytes long, at most %" G_GUINT64_FORMAT " are allowed",
             what, idx, len, max_len);
    return NULL;
  }
  if (!take(c, len, &b)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "truncated: %s #%" G_GUINT64_FORMAT " name (%" G_GUINT64_FORMAT
             " bytes at offset %" G_GUINT64_FORMAT ") runs past the end of the "
             "file (%" G_GUINT64_FORMAT " bytes)", what, idx, len, pos + 8,
             c->size);
    return NULL;
  }
  if (memchr(b, 0, len)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "%s #%" G_GUINT64_FORMAT " name contains a NUL byte", what, idx);
    return NULL;
  }
  if (!g_utf8_validate((const char *)b, (gssize)len, NULL)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "%s #%" G_GUINT64_FORMAT " name is not valid UTF-8", what, idx);
    return NULL;
  }
  return g_strndup((const char *)b, len);
}

/* ---- metadata ------------------------------------------------------- */

static gboolean
check_bools(const char *key, const guint8 *b, uint64_t n, GError **error)
{
  for (uint64_t i = 0; i < n; i++) {
    if (b[i] > 1) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "key '%s': bool value %u at index %" G_GUINT64_FORMAT
               " is neither 0 nor 1", key, b[i], i);
      return FALSE;
    }
  }
  return TRUE;
}

/* Reads one value of type t (not an array) and leaves c after it. */
static gboolean
read_scalar(Cursor *c, const char *key, uint32_t t, GgufKv *kv,
            GError **error)
{
  const guint8 *b;
  if (t == GGUF_TYPE_STRING) {
    uint64_t len;
    if (!take_u64(c, &len) || !take(c, len, &b)) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "key '%s': string value runs past the end of the file (%"
               G_GUINT64_FORMAT " bytes)", key, c->size);
      return FALSE;
    }
    kv->count = len;
    kv->val = b;
    return TRUE;
  }
  unsigned sz = type_size(t);
  g_assert(sz > 0);
  if (!take(c, sz, &b)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "key '%s': %s value runs past the end of the file (%"
             G_GUINT64_FORMAT " bytes)", key, type_name(t), c->size);
    return FALSE;
  }
  if (t == GGUF_TYPE_BOOL && !check_bools(key, b, 1, error))
    return FALSE;
  kv->count = 1;
  kv->val = b;
  return TRUE;
}

static gboolean
read_array(Cursor *c, const char *key, GgufKv *kv, GError **error)
{
  uint32_t et;
  uint64_t n;
  if (!take_u32(c, &et) || !take_u64(c, &n)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "key '%s': array header runs past the end of the file (%"
             G_GUINT64_FORMAT " bytes)", key, c->size);
    return FALSE;
  }
  if (et == GGUF_TYPE_ARRAY) {
    txl_fail(error, TXL_ERROR_UNSUPPORTED,
             "key '%s': nested arrays are not supported", key);
    return FALSE;
  }
  if (!type_is_known(et)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "key '%s': unknown array element type %" G_GUINT32_FORMAT, key,
             et);
    return FALSE;
  }
  kv->elem_type = et;
  kv->count = n;
  kv->val = c->p + c->pos;
  /* Each element takes at least its fixed size (strings: their length
   * field), so a count beyond left / size cannot be genuine. */
  unsigned min = et == GGUF_TYPE_STRING ? 8 : type_size(et);
  if (n > left(c) / min) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "key '%s': array of %" G_GUINT64_FORMAT
             " %s elements does not fit "
             "in the %" G_GUINT64_FORMAT " bytes left in the file",
             key, n, type_name(et), left(c));
    return FALSE;
  }
  if (et != GGUF_TYPE_STRING) {
    const guint8 *b = c->p + c->pos;
    c->pos += n * min; /* fits: checked above */
    return et != GGUF_TYPE_BOOL || check_bools(key, b, n, error);
  }
  for (uint64_t i = 0; i < n; i++) {
    uint64_t len;
    if (!take_u64(c, &len) || !take(c, len, NULL)) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "key '%s': string #%" G_GUINT64_FORMAT " of the array runs past "
               "the end of the file (%" G_GUINT64_FORMAT " bytes)",
               key, i, c->size);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
read_kv(GgufFile *f, Cursor *c, uint64_t idx, GError **error)
{
  GgufKv *kv = &f->kvs[idx];
  kv->key = read_name(c, "key", idx, MAX_KEY_LEN, error);
  if (!kv->key)
    return FALSE;
  /* The slot counts as filled from here so gguf_close() frees the key. */
  f->n_kvs = idx + 1;
  if (g_hash_table_contains(f->kv_index, kv->key)) {
    txl_fail(error, TXL_ERROR_FORMAT, "duplicate key '%s'", kv->key);
    return FALSE;
  }
  if (!take_u32(c, &kv->type)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "key '%s': value type runs past the end of the file (%"
             G_GUINT64_FORMAT " bytes)", kv->key, c->size);
    return FALSE;
  }
  if (!type_is_known(kv->type)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "key '%s': unknown value type %" G_GUINT32_FORMAT, kv->key,
             kv->type);
    return FALSE;
  }
  uint64_t start = c->pos;
  gboolean ok = kv->type == GGUF_TYPE_ARRAY
                    ? read_array(c, kv->key, kv, error)
                    : read_scalar(c, kv->key, kv->type, kv, error);
  if (!ok)
    return FALSE;
  kv->raw = c->p + start;
  kv->raw_len = c->pos - start;
  g_hash_table_insert(f->kv_index, kv->key, kv);
  return TRUE;
}

static gboolean
read_alignment(GgufFile *f, GError **error)
{
  f->alignment = GGUF_DEFAULT_ALIGNMENT;
  const GgufKv *kv = g_hash_table_lookup(f->kv_index, "general.alignment");
  if (!kv)
    return TRUE;
  if (kv->type != GGUF_TYPE_UINT32) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "key 'general.alignment' has type %s, expected u32",
             type_name(kv->type));
    return FALSE;
  }
  uint32_t a = txl_le_get32(kv->val);
  if (a == 0 || (a & (a - 1)) != 0 || a > MAX_ALIGNMENT) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "key 'general.alignment' = %" G_GUINT32_FORMAT
             " must be a power of two no larger than %u", a, MAX_ALIGNMENT);
    return FALSE;
  }
  f->alignment = a;
  return TRUE;
}

/* ---- tensors -------------------------------------------------------- */

/* Offsets are kept relative to the data section until all infos are in. */
static gboolean
read_tensor_info(GgufFile *f, Cursor *c, uint64_t idx, uint64_t *offset,
                 GError **error)
{
  GgufTensor *t = &f->tensors[idx];
  char *name = read_name(c, "tensor", idx, MAX_TENSOR_NAME_LEN, error);
  if (!name)
    return FALSE;
  t->name = name;
  f->n_tensors = idx + 1;
  if (g_hash_table_contains(f->tensor_index, name)) {
    txl_fail(error, TXL_ERROR_FORMAT, "duplicate tensor name '%s'", name);
    return FALSE;
  }
  if (!take_u32(c, &t->n_dims)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "tensor '%s': n_dims runs past the end of the file (%"
             G_GUINT64_FORMAT " bytes)", name, c->size);
    return FALSE;
  }
  if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "tensor '%s': n_dims = %" G_GUINT32_FORMAT " is outside [1, %d]",
             name, t->n_dims, GGUF_MAX_DIMS);
    return FALSE;
  }
  for (int d = 0; d < GGUF_MAX_DIMS; d++)
    t->ne[d] = 1;
  for (uint32_t d = 0; d < t->n_dims; d++) {
    if (!take_u64(c, &t->ne[d])) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tensor '%s': dims run past the end of the file (%"
               G_GUINT64_FORMAT " bytes)", name, c->size);
      return FALSE;
    }
  }
  if (!take_u32(c, &t->type) || !take_u64(c, offset)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "tensor '%s': type/offset run past the end of the file (%"
             G_GUINT64_FORMAT " bytes)", name, c->size);
    return FALSE;
  }
  if (t->type != GGUF_TENSOR_F32 && t->type != GGUF_TENSOR_F16) {
    txl_fail(error, TXL_ERROR_UNSUPPORTED,
             "tensor '%s': ggml type %" G_GUINT32_FORMAT
             " is not supported (only F32 = 0 and F16 = 1)", name, t->type);
    return FALSE;
  }
  uint64_t n = t->type == GGUF_TENSOR_F32 ? 4 : 2;
  for (uint32_t d = 0; d < t->n_dims; d++) {
    if (t->ne[d] == 0) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tensor '%s': dimension %" G_GUINT32_FORMAT " is 0", name, d);
      return FALSE;
    }
    if (n > G_MAXUINT64 / t->ne[d]) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tensor '%s': size of the %s shape overflows 64 bits", name,
               tensor_type_name(t->type));
      return FALSE;
    }
    n *= t->ne[d];
  }
  t->nbytes = n;
  g_hash_table_insert(f->tensor_index, name, t);
  return TRUE;
}

typedef struct {
  uint64_t start; /* absolute */
  gsize idx;
} Extent;

static int
cmp_extent(const void *a, const void *b)
{
  const Extent *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* Places every tensor in the data section and refuses overlaps. */
static gboolean
place_tensors(GgufFile *f, uint64_t header_end, const uint64_t *offsets,
              GError **error)
{
  if (f->n_tensors == 0)
    return TRUE;
  uint64_t a = f->alignment;
  /* header_end <= size and a <= 1 MiB: no overflow. */
  uint64_t base = (header_end + a - 1) / a * a;
  if (base > f->size) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "data section would start at %" G_GUINT64_FORMAT
             ", past the end of the file (%" G_GUINT64_FORMAT " bytes)",
             base, (uint64_t)f->size);
    return FALSE;
  }
  uint64_t avail = f->size - base;
  g_autofree Extent *ext = g_new(Extent, f->n_tensors);
  for (gsize i = 0; i < f->n_tensors; i++) {
    GgufTensor *t = &f->tensors[i];
    uint64_t off = offsets[i];
    if (off % a != 0) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tensor '%s': offset %" G_GUINT64_FORMAT
               " is not a multiple of the alignment %" G_GUINT64_FORMAT,
               t->name, off, a);
      return FALSE;
    }
    if (off > avail || t->nbytes > avail - off) {
      if (off > G_MAXUINT64 - base || t->nbytes > G_MAXUINT64 - base - off)
        txl_fail(error, TXL_ERROR_FORMAT,
                 "tensor '%s': offset %" G_GUINT64_FORMAT
                 " + %" G_GUINT64_FORMAT
                 " bytes runs past the end of the file (%" G_GUINT64_FORMAT
                 " bytes)",
                 t->name, off, t->nbytes, (uint64_t)f->size);
      else
        txl_fail(
            error, TXL_ERROR_FORMAT,
            "tensor '%s': data [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
            ") runs past the end of the file (%" G_GUINT64_FORMAT " bytes)",
            t->name, base + off, base + off + t->nbytes, (uint64_t)f->size);
      return FALSE;
    }
    t->data = f->data + base + off;
    ext[i].start = base + off;
    ext[i].idx = i;
  }
  qsort(ext, f->n_tensors, sizeof *ext, cmp_extent);
  for (gsize i = 1; i < f->n_tensors; i++) {
    const GgufTensor *p = &f->tensors[ext[i - 1].idx];
    const GgufTensor *t = &f->tensors[ext[i].idx];
    uint64_t p_end = ext[i - 1].start + p->nbytes;
    if (p_end > ext[i].start) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tensor '%s' [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
               ") overlaps tensor '%s' [%" G_GUINT64_FORMAT
               ", %" G_GUINT64_FORMAT ")",
               t->name, ext[i].start, ext[i].start + t->nbytes, p->name,
               ext[i - 1].start, p_end);
      return FALSE;
    }
  }
  return TRUE;
}

/* ---- parse ---------------------------------------------------------- */

static gboolean
read_header(GgufFile *f, Cursor *c, uint64_t *n_tensors, uint64_t *n_kvs,
            GError **error)
{
  const guint8 *b;
  if (!take(c, 4, &b))
    return truncated(c, "magic", error);
  if (memcmp(b, "GGUF", 4) != 0) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "not a GGUF file (magic %02x %02x %02x %02x, expected \"GGUF\")",
             b[0], b[1], b[2], b[3]);
    return FALSE;
  }
  if (!take_u32(c, &f->version))
    return truncated(c, "version", error);
  if (f->version != 3) {
    uint32_t swapped = GUINT32_SWAP_LE_BE(f->version);
    if (swapped >= 1 && swapped <= 3)
      txl_fail(error, TXL_ERROR_UNSUPPORTED,
               "big-endian GGUF files are not supported");
    else
      txl_fail(error, TXL_ERROR_UNSUPPORTED,
               "GGUF version %" G_GUINT32_FORMAT " is not supported (only 3)",
               f->version);
    return FALSE;
  }
  if (!take_u64(c, n_tensors))
    return truncated(c, "tensor count", error);
  if (!take_u64(c, n_kvs))
    return truncated(c, "metadata count", error);
  /* Bound the counts by the bytes left before allocating for them. */
  if (*n_kvs > MAX_KVS) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "kv_count %" G_GUINT64_FORMAT " exceeds the limit of %u", *n_kvs,
             MAX_KVS);
    return FALSE;
  }
  if (*n_tensors > MAX_TENSORS) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "tensor_count %" G_GUINT64_FORMAT " exceeds the limit of %u",
             *n_tensors, MAX_TENSORS);
    return FALSE;
  }
  if (*n_kvs > left(c) / MIN_KV_BYTES) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "kv_count %" G_GUINT64_FORMAT
             " cannot fit in the %" G_GUINT64_FORMAT " bytes left in the file",
             *n_kvs, left(c));
    return FALSE;
  }
  if (*n_tensors > left(c) / MIN_TENSOR_INFO_BYTES ||
      *n_tensors * MIN_TENSOR_INFO_BYTES > left(c) - *n_kvs * MIN_KV_BYTES) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "tensor_count %" G_GUINT64_FORMAT " cannot fit in the %"
             G_GUINT64_FORMAT " bytes left in the file", *n_tensors, left(c));
    return FALSE;
  }
  return TRUE;
}

static gboolean
parse_into(GgufFile *f, GError **error)
{
  Cursor c = { f->data, f->size, 0 };
  uint64_t n_tensors, n_kvs;
  if (!read_header(f, &c, &n_tensors, &n_kvs, error))
    return FALSE;
  f->kvs = g_new0(GgufKv, n_kvs);
  for (uint64_t i = 0; i < n_kvs; i++)
    if (!read_kv(f, &c, i, error))
      return FALSE;
  if (!read_alignment(f, error))
    return FALSE;
  f->tensors = g_new0(GgufTensor, n_tensors);
  g_autofree uint64_t *offsets = g_new0(uint64_t, n_tensors);
  for (uint64_t i = 0; i < n_tensors; i++)
    if (!read_tensor_info(f, &c, i, &offsets[i], error))
      return FALSE;
  return place_tensors(f, c.pos, offsets, error);
}

GgufFile *
gguf_parse(const void *data, size_t size, GError **error)
{
  g_return_val_if_fail(data != NULL || size == 0, NULL);
  GgufFile *f = g_new0(GgufFile, 1);
  f->data = data;
  f->size = size;
  f->kv_index = g_hash_table_new(g_str_hash, g_str_equal);
  f->tensor_index = g_hash_table_new(g_str_hash, g_str_equal);
  if (!parse_into(f, error)) {
    gguf_close(f);
    return NULL;
  }
  return f;
}

GgufFile *
gguf_open(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  gsize size;
  void *map = txl_map_file(path, "a GGUF file", &size, error);
  if (!map)
    return NULL;
  GgufFile *f = gguf_parse(map, size, error);
  if (!f) {
    txl_unmap_file(map, size);
    g_prefix_error(error, "%s: ", path);
    return NULL;
  }
  f->map = map;
  f->map_size = size;
  return f;
}

void
gguf_close(GgufFile *f)
{
  if (!f)
    return;
  txl_free_each(g_hash_table_destroy, f->kv_index, f->tensor_index);
  for (gsize i = 0; i < f->n_kvs; i++)
    g_free(f->kvs[i].key);
  for (gsize i = 0; i < f->n_tensors; i++)
    g_free((char *)f->tensors[i].name);
  txl_unmap_file(f->map, f->map_size);
  txl_free_each(g_free, f->kvs, f->tensors, f);
}

const void *
gguf_buffer(const GgufFile *f, size_t *size)
{
  if (size)
    *size = f->size;
  return f->data;
}

uint32_t
gguf_version(const GgufFile *f)
{
  return f->version;
}

/* ---- getters -------------------------------------------------------- */

static const GgufKv *
lookup(const GgufFile *f, const char *key, GError **error)
{
  const GgufKv *kv = g_hash_table_lookup(f->kv_index, key);
  if (!kv)
    txl_fail(error, TXL_ERROR_FORMAT, "missing key '%s'", key);
  return kv;
}

static void
wrong_type(const GgufKv *kv, const char *expected, GError **error)
{
  if (kv->type == GGUF_TYPE_ARRAY)
    txl_fail(error, TXL_ERROR_FORMAT,
             "key '%s' has type array of %s, expected %s", kv->key,
             type_name(kv->elem_type), expected);
  else
    txl_fail(error, TXL_ERROR_FORMAT, "key '%s' has type %s, expected %s",
             kv->key, type_name(kv->type), expected);
}

/* The kv of key if ok(its type); NULL with an error (a missing key, or
 * one of another type than the one expected) otherwise. */
static const GgufKv *
lookup_typed(const GgufFile *f, const char *key, gboolean (*ok)(uint32_t),
             const char *expected, GError **error)
{
  const GgufKv *kv = lookup(f, key, error);
  if (kv && !ok(kv->type)) {
    wrong_type(kv, expected, error);
    return NULL;
  }
  return kv;
}

/* Decodes an integer of type t.  Unsigned 64-bit values above INT64_MAX
 * set *big instead of wrapping. */
static gint64
decode_int(uint32_t t, const guint8 *p, gboolean *big, uint64_t *raw)
{
  *big = FALSE;
  switch (t) {
  case GGUF_TYPE_UINT8: return p[0];
  case GGUF_TYPE_INT8: return (int8_t)p[0];
  case GGUF_TYPE_UINT16: return txl_le_get16(p);
  case GGUF_TYPE_INT16: return (int16_t)txl_le_get16(p);
  case GGUF_TYPE_UINT32: return txl_le_get32(p);
  case GGUF_TYPE_INT32: return (int32_t)txl_le_get32(p);
  case GGUF_TYPE_INT64: return (gint64)txl_le_get64(p);
  case GGUF_TYPE_UINT64:
    *raw = txl_le_get64(p);
    if (*raw > (uint64_t)G_MAXINT64) {
      *big = TRUE;
      return G_MAXINT64;
    }
    return (gint64)*raw;
  default:
    g_assert_not_reached();
    return 0;
  }
}

gsize
gguf_n_keys(const GgufFile *f)
{
  return f->n_kvs;
}

const char *
gguf_key_at(const GgufFile *f, gsize i, uint32_t *type, const void **raw,
            gsize *raw_len)
{
  g_return_val_if_fail(i < f->n_kvs, NULL);
  const GgufKv *kv = &f->kvs[i];
  if (type)
    *type = kv->type;
  if (raw)
    *raw = kv->raw;
  if (raw_len)
    *raw_len = (gsize)kv->raw_len;
  return kv->key;
}

gboolean
gguf_has_key(const GgufFile *f, const char *key)
{
  return g_hash_table_contains(f->kv_index, key);
}

gboolean
gguf_get_int(const GgufFile *f, const char *key, gint64 min, gint64 max,
             gint64 *out, GError **error)
{
  const GgufKv *kv = lookup_typed(f, key, type_is_int, "an integer", error);
  if (!kv)
    return FALSE;
  gboolean big;
  uint64_t raw = 0;
  gint64 v = decode_int(kv->type, kv->val, &big, &raw);
  if (big) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "key '%s' = %" G_GUINT64_FORMAT
             " is out of range [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]",
             key, raw, min, max);
    return FALSE;
  }
  if (v < min || v > max) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "key '%s' = %" G_GINT64_FORMAT
             " is out of range [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]",
             key, v, min, max);
    return FALSE;
  }
  *out = v;
  return TRUE;
}

gboolean
gguf_get_bool(const GgufFile *f, const char *key, gboolean *out,
              GError **error)
{
  const GgufKv *kv = lookup_typed(f, key, type_is_bool, "bool", error);
  if (!kv)
    return FALSE;
  *out = kv->val[0] != 0;
  return TRUE;
}

gboolean
gguf_get_float(const GgufFile *f, const char *key, double *out,
               GError **error)
{
  const GgufKv *kv = lookup_typed(f, key, type_is_float, "f32 or f64", error);
  if (!kv)
    return FALSE;
  if (kv->type == GGUF_TYPE_FLOAT32) {
    uint32_t u = txl_le_get32(kv->val);
    float x;
    memcpy(&x, &u, sizeof x);
    *out = x;
  } else {
    *out = txl_f64_from_bits(txl_le_get64(kv->val));
  }
  return TRUE;
}

char *
gguf_get_string(const GgufFile *f, const char *key, GError **error)
{
  const GgufKv *kv = lookup_typed(f, key, type_is_string, "string", error);
  if (!kv)
    return NULL;
  if (memchr(kv->val, 0, kv->count)) {
    txl_fail(error, TXL_ERROR_FORMAT, "key '%s': string contains a NUL byte",
             key);
    return NULL;
  }
  return g_strndup((const char *)kv->val, kv->count);
}

static const GgufKv *
lookup_array(const GgufFile *f, const char *key, gboolean (*ok)(uint32_t),
             const char *expected, GError **error)
{
  const GgufKv *kv = lookup(f, key, error);
  if (!kv)
    return NULL;
  if (kv->type != GGUF_TYPE_ARRAY || !ok(kv->elem_type)) {
    wrong_type(kv, expected, error);
    return NULL;
  }
  /* A u8 array copied into gint64[] grows eightfold: keep that bounded. */
  if (kv->count > MAX_ARRAY_GET) {
    txl_fail(error, TXL_ERROR_UNSUPPORTED,
             "key '%s': array of %" G_GUINT64_FORMAT
             " elements exceeds the limit of %u",
             key, kv->count, MAX_ARRAY_GET);
    return NULL;
  }
  return kv;
}

gboolean
gguf_get_int_array(const GgufFile *f, const char *key, gint64 **out,
                   gsize *n, GError **error)
{
  const GgufKv *kv =
      lookup_array(f, key, type_is_int, "an array of integers", error);
  if (!kv)
    return FALSE;
  unsigned sz = type_size(kv->elem_type);
  /* One spare slot: a successful call never returns NULL. */
  gint64 *v = g_new(gint64, kv->count + 1);
  for (uint64_t i = 0; i < kv->count; i++) {
    gboolean big;
    uint64_t raw = 0;
    v[i] = decode_int(kv->elem_type, kv->val + i * sz, &big, &raw);
    if (big) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "key '%s': element %" G_GUINT64_FORMAT " = %" G_GUINT64_FORMAT
               " does not fit a signed 64-bit integer", key, i, raw);
      g_free(v);
      return FALSE;
    }
  }
  *out = v;
  *n = kv->count;
  return TRUE;
}

gboolean
gguf_get_bool_array(const GgufFile *f, const char *key, gboolean **out,
                    gsize *n, GError **error)
{
  const GgufKv *kv =
      lookup_array(f, key, type_is_bool, "an array of bool", error);
  if (!kv)
    return FALSE;
  gboolean *v = g_new(gboolean, kv->count + 1);
  for (uint64_t i = 0; i < kv->count; i++)
    v[i] = kv->val[i] != 0;
  *out = v;
  *n = kv->count;
  return TRUE;
}

gboolean
gguf_get_string_array(const GgufFile *f, const char *key, const char ***strs,
                      gsize **lens, gsize *n, GError **error)
{
  const GgufKv *kv =
      lookup_array(f, key, type_is_string, "an array of string", error);
  if (!kv)
    return FALSE;
  const char **s = g_new0(const char *, kv->count + 1);
  gsize *l = g_new0(gsize, kv->count + 1);
  const guint8 *p = kv->val;
  for (uint64_t i = 0; i < kv->count; i++) {
    uint64_t len = txl_le_get64(p);
    s[i] = (const char *)p + 8;
    l[i] = (gsize)len;
    p += 8 + len;
  }
  *strs = s;
  *lens = l;
  *n = kv->count;
  return TRUE;
}

gsize
gguf_n_tensors(const GgufFile *f)
{
  return f->n_tensors;
}

const GgufTensor *
gguf_tensor_at(const GgufFile *f, gsize i)
{
  return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const GgufTensor *
gguf_find_tensor(const GgufFile *f, const char *name)
{
  return g_hash_table_lookup(f->tensor_index, name);
}
