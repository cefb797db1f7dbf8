/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GGUF v3 writer.
 *
 * The add_* calls cannot fail (they return void), so a bad argument is
 * remembered and reported by gguf_writer_write(), which then writes
 * nothing.  Everything the writer accepts is something the strict reader
 * accepts too. */
#include "bytes.h"
#include "filemap.h"
#include "freeeach.h"
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_KEY_LEN (64u * 1024u)
#define MAX_TENSOR_NAME_LEN 256u
#define MAX_ALIGNMENT (1u << 20)

typedef struct {
  uint32_t type;
  GByteArray *value; /* encoded exactly as it goes in the file */
} WriterKv;

typedef struct {
  char *name;
  uint32_t type;
  uint32_t n_dims;
  uint64_t ne[GGUF_MAX_DIMS];
  guint8 *data;
  gsize nbytes;
  uint64_t offset; /* assigned by gguf_writer_write() */
} WriterTensor;

struct _GgufWriter {
  GPtrArray *keys; /* char*, in insertion order */
  GHashTable *kvs; /* key -> WriterKv* */
  GPtrArray *tensors; /* WriterTensor* */
  GHashTable *tensor_names;
  uint32_t alignment;
  char *error; /* first bad argument, reported at write time */
};

static void
kv_free(gpointer p)
{
  WriterKv *kv = p;
  g_byte_array_unref(kv->value);
  g_free(kv);
}

static void
tensor_free(gpointer p)
{
  WriterTensor *t = p;
  txl_free_each(g_free, t->name, t->data, t);
}

GgufWriter *
gguf_writer_new(void)
{
  GgufWriter *w = g_new0(GgufWriter, 1);
  w->keys = g_ptr_array_new_with_free_func(g_free);
  w->kvs = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, kv_free);
  w->tensors = g_ptr_array_new_with_free_func(tensor_free);
  w->tensor_names = g_hash_table_new(g_str_hash, g_str_equal);
  w->alignment = GGUF_DEFAULT_ALIGNMENT;
  return w;
}

void
gguf_writer_free(GgufWriter *w)
{
  if (!w)
    return;
  /* each table before the array that owns its keys */
  txl_free_each(g_hash_table_destroy, w->kvs, w->tensor_names);
  txl_free_each(g_ptr_array_unref, w->keys, w->tensors);
  txl_free_each(g_free, w->error, w);
}

static void G_GNUC_PRINTF(2, 3)
remember_error(GgufWriter *w, const char *fmt, ...)
{
  if (w->error)
    return;
  va_list ap;
  va_start(ap, fmt);
  w->error = g_strdup_vprintf(fmt, ap);
  va_end(ap);
}

/* ---- encoding ------------------------------------------------------- */

static void
put_str(GByteArray *b, const void *s, gsize len)
{
  txl_put_u64(b, len);
  g_byte_array_append(b, s, (guint)len);
}

/* GGUF bools are one byte, 0 or 1 (the reader refuses anything else). */
static void
put_bool(GByteArray *b, gboolean v)
{
  guint8 byte = v ? 1 : 0;
  g_byte_array_append(b, &byte, 1);
}

/* Starts a new kv; NULL (and an error remembered) if the key is bad. */
static GByteArray *
new_kv(GgufWriter *w, const char *key, uint32_t type)
{
  if (!key || !*key) {
    remember_error(w, "metadata key is empty");
    return NULL;
  }
  gsize len = strlen(key);
  if (len > MAX_KEY_LEN || !g_utf8_validate(key, (gssize)len, NULL)) {
    remember_error(w, "metadata key '%.64s...' is too long or not UTF-8",
                   key);
    return NULL;
  }
  if (g_hash_table_contains(w->kvs, key)) {
    remember_error(w, "duplicate key '%s'", key);
    return NULL;
  }
  char *k = g_strdup(key);
  WriterKv *kv = g_new0(WriterKv, 1);
  kv->type = type;
  kv->value = g_byte_array_new();
  g_ptr_array_add(w->keys, k);
  g_hash_table_insert(w->kvs, k, kv);
  return kv->value;
}

void
gguf_writer_add_u32(GgufWriter *w, const char *key, uint32_t v)
{
  GByteArray *b = new_kv(w, key, GGUF_TYPE_UINT32);
  if (!b)
    return;
  txl_put_u32(b, v);
  /* The reader lays tensors out by this key, so the writer must too. */
  if (strcmp(key, "general.alignment") == 0) {
    if (v == 0 || (v & (v - 1)) != 0 || v > MAX_ALIGNMENT)
      remember_error(w, "general.alignment = %" G_GUINT32_FORMAT
                     " must be a power of two no larger than %u", v,
                     MAX_ALIGNMENT);
    else
      w->alignment = v;
  }
}

static void
check_not_alignment(GgufWriter *w, const char *key)
{
  if (key && strcmp(key, "general.alignment") == 0)
    remember_error(w, "general.alignment must be written as u32");
}

void
gguf_writer_add_raw(GgufWriter *w, const char *key, uint32_t type,
                    const void *raw, gsize raw_len)
{
  if (key && strcmp(key, "general.alignment") == 0) {
    const guint8 *b = raw;
    if (type != GGUF_TYPE_UINT32 || raw_len != 4)
      remember_error(w, "general.alignment must be written as u32");
    else
      gguf_writer_add_u32(w, key, txl_le_get32(b));
    return;
  }
  if (raw_len > G_MAXUINT) {
    remember_error(w, "value of key '%.64s' is too large to copy", key);
    return;
  }
  GByteArray *b = new_kv(w, key, type);
  if (b)
    g_byte_array_append(b, raw, (guint)raw_len);
}

/* Starts a scalar kv of a type other than u32: general.alignment, which
 * the reader needs as a u32, is refused. */
static GByteArray *
new_scalar(GgufWriter *w, const char *key, uint32_t type)
{
  check_not_alignment(w, key);
  return new_kv(w, key, type);
}

void
gguf_writer_add_i32(GgufWriter *w, const char *key, int32_t v)
{
  GByteArray *b = new_scalar(w, key, GGUF_TYPE_INT32);
  if (b)
    txl_put_u32(b, (uint32_t)v);
}

void
gguf_writer_add_f32(GgufWriter *w, const char *key, float v)
{
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  GByteArray *b = new_scalar(w, key, GGUF_TYPE_FLOAT32);
  if (b)
    txl_put_u32(b, u);
}

void
gguf_writer_add_f64(GgufWriter *w, const char *key, double v)
{
  GByteArray *b = new_scalar(w, key, GGUF_TYPE_FLOAT64);
  if (b)
    txl_put_f64(b, v);
}

void
gguf_writer_add_bool(GgufWriter *w, const char *key, gboolean v)
{
  GByteArray *b = new_scalar(w, key, GGUF_TYPE_BOOL);
  if (b)
    put_bool(b, v);
}

void
gguf_writer_add_string(GgufWriter *w, const char *key, const char *v)
{
  check_not_alignment(w, key);
  if (!v) {
    remember_error(w, "key '%s': string value is NULL", key ? key : "");
    return;
  }
  GByteArray *b = new_kv(w, key, GGUF_TYPE_STRING);
  if (b)
    put_str(b, v, strlen(v));
}

static GByteArray *
new_array(GgufWriter *w, const char *key, uint32_t elem_type, gsize n,
          gboolean data_ok)
{
  check_not_alignment(w, key);
  if (!data_ok) {
    remember_error(w, "key '%s': array data is NULL", key ? key : "");
    return NULL;
  }
  GByteArray *b = new_kv(w, key, GGUF_TYPE_ARRAY);
  if (!b)
    return NULL;
  txl_put_u32(b, elem_type);
  txl_put_u64(b, n);
  return b;
}

/* A u32 or bool array, each element as GGUF stores its type. */
static void
add_array(GgufWriter *w, const char *key, uint32_t type, const void *v,
          gsize n)
{
  GByteArray *b = new_array(w, key, type, n, v || n == 0);
  for (gsize i = 0; b && i < n; i++) {
    if (type == GGUF_TYPE_BOOL)
      put_bool(b, ((const gboolean *)v)[i]);
    else
      txl_put_u32(b, ((const uint32_t *)v)[i]);
  }
}

void
gguf_writer_add_u32_array(GgufWriter *w, const char *key, const uint32_t *v,
                          gsize n)
{
  add_array(w, key, GGUF_TYPE_UINT32, v, n);
}

void
gguf_writer_add_bool_array(GgufWriter *w, const char *key, const gboolean *v,
                           gsize n)
{
  add_array(w, key, GGUF_TYPE_BOOL, v, n);
}

void
gguf_writer_add_string_array(GgufWriter *w, const char *key,
                             const char *const *v, const gsize *lens,
                             gsize n)
{
  gboolean ok = n == 0 || (v && lens);
  for (gsize i = 0; ok && i < n; i++)
    ok = v[i] || lens[i] == 0;
  GByteArray *b = new_array(w, key, GGUF_TYPE_STRING, n, ok);
  if (!b)
    return;
  for (gsize i = 0; i < n; i++)
    put_str(b, lens[i] ? v[i] : "", lens[i]);
}

/* ---- tensors -------------------------------------------------------- */

static gboolean
check_tensor(GgufWriter *w, const char *name, uint32_t type, uint32_t n_dims,
             const uint64_t *ne, const void *data, gsize nbytes)
{
  if (!name || !*name || strlen(name) > MAX_TENSOR_NAME_LEN ||
      !g_utf8_validate(name, -1, NULL)) {
    remember_error(w, "tensor name '%.64s' is empty, longer than %u bytes "
                   "or not UTF-8", name ? name : "", MAX_TENSOR_NAME_LEN);
    return FALSE;
  }
  if (g_hash_table_contains(w->tensor_names, name)) {
    remember_error(w, "duplicate tensor name '%s'", name);
    return FALSE;
  }
  if (type != GGUF_TENSOR_F32 && type != GGUF_TENSOR_F16) {
    remember_error(w, "tensor '%s': type %" G_GUINT32_FORMAT
                   " is not F32 or F16", name, type);
    return FALSE;
  }
  if (n_dims < 1 || n_dims > GGUF_MAX_DIMS || !ne) {
    remember_error(w, "tensor '%s': n_dims = %" G_GUINT32_FORMAT
                   " is outside [1, %d]", name, n_dims, GGUF_MAX_DIMS);
    return FALSE;
  }
  uint64_t want = type == GGUF_TENSOR_F32 ? 4 : 2;
  for (uint32_t d = 0; d < n_dims; d++) {
    if (ne[d] == 0 || want > G_MAXUINT64 / ne[d]) {
      remember_error(w, "tensor '%s': dimension %" G_GUINT32_FORMAT " = %"
                     G_GUINT64_FORMAT " is 0 or makes the size overflow",
                     name, d, ne[d]);
      return FALSE;
    }
    want *= ne[d];
  }
  if (want != nbytes || !data) {
    remember_error(w, "tensor '%s': shape needs %" G_GUINT64_FORMAT
                   " bytes, %" G_GSIZE_FORMAT " given", name, want,
                   data ? nbytes : 0);
    return FALSE;
  }
  return TRUE;
}

void
gguf_writer_add_tensor(GgufWriter *w, const char *name, uint32_t type,
                       uint32_t n_dims, const uint64_t *ne, const void *data,
                       gsize nbytes)
{
  if (!check_tensor(w, name, type, n_dims, ne, data, nbytes))
    return;
  WriterTensor *t = g_new0(WriterTensor, 1);
  t->name = g_strdup(name);
  t->type = type;
  t->n_dims = n_dims;
  for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
    t->ne[d] = d < n_dims ? ne[d] : 1;
  t->data = g_memdup2(data, nbytes);
  t->nbytes = nbytes;
  g_ptr_array_add(w->tensors, t);
  g_hash_table_add(w->tensor_names, t->name);
}

/* ---- copies from a file --------------------------------------------- */

void
gguf_writer_copy_keys(GgufWriter *w, const GgufFile *f, GgufKeyFilter keep,
                      gconstpointer data)
{
  for (gsize i = 0; i < gguf_n_keys(f); i++) {
    uint32_t type;
    const void *raw;
    gsize len;
    const char *key = gguf_key_at(f, i, &type, &raw, &len);
    if (!keep || keep(key, data))
      gguf_writer_add_raw(w, key, type, raw, len);
  }
}

void
gguf_writer_copy_tensors(GgufWriter *w, const GgufFile *f)
{
  for (gsize i = 0; i < gguf_n_tensors(f); i++) {
    const GgufTensor *t = gguf_tensor_at(f, i);
    gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data,
                           t->nbytes);
  }
}

/* ---- output --------------------------------------------------------- */

static uint64_t
align_up(uint64_t x, uint64_t a)
{
  return (x + a - 1) / a * a;
}

/* Header, metadata, tensor infos and the padding up to the data section. */
static GByteArray *
encode_header(GgufWriter *w)
{
  GByteArray *b = g_byte_array_new();
  g_byte_array_append(b, (const guint8 *)"GGUF", 4);
  txl_put_u32(b, 3);
  txl_put_u64(b, w->tensors->len);
  txl_put_u64(b, w->keys->len);
  for (guint i = 0; i < w->keys->len; i++) {
    const char *key = w->keys->pdata[i];
    const WriterKv *kv = g_hash_table_lookup(w->kvs, key);
    put_str(b, key, strlen(key));
    txl_put_u32(b, kv->type);
    g_byte_array_append(b, kv->value->data, kv->value->len);
  }
  uint64_t off = 0;
  for (guint i = 0; i < w->tensors->len; i++) {
    WriterTensor *t = w->tensors->pdata[i];
    off = align_up(off, w->alignment);
    t->offset = off;
    off += t->nbytes;
    put_str(b, t->name, strlen(t->name));
    txl_put_u32(b, t->n_dims);
    for (uint32_t d = 0; d < t->n_dims; d++)
      txl_put_u64(b, t->ne[d]);
    txl_put_u32(b, t->type);
    txl_put_u64(b, t->offset);
  }
  static const guint8 zeros[64];
  gsize end = align_up(b->len, w->alignment);
  while (b->len < end)
    g_byte_array_append(b, zeros, (guint)MIN(sizeof zeros, end - b->len));
  return b;
}

static gboolean
write_all(int fd, const void *buf, gsize n, int *err)
{
  const guint8 *p = buf;
  while (n > 0) {
    ssize_t k = write(fd, p, MIN(n, (gsize)1 << 30));
    if (k < 0) {
      if (errno == EINTR)
        continue;
      *err = errno;
      return FALSE;
    }
    p += k;
    n -= (gsize)k;
  }
  return TRUE;
}

static gboolean
write_zeros(int fd, uint64_t n, int *err)
{
  static const guint8 zeros[4096];
  while (n > 0) {
    gsize k = (gsize)MIN(n, sizeof zeros);
    if (!write_all(fd, zeros, k, err))
      return FALSE;
    n -= k;
  }
  return TRUE;
}

static gboolean
write_contents(GgufWriter *w, int fd, int *err)
{
  g_autoptr(GByteArray) head = encode_header(w);
  if (!write_all(fd, head->data, head->len, err))
    return FALSE;
  uint64_t pos = 0; /* relative to the data section */
  for (guint i = 0; i < w->tensors->len; i++) {
    const WriterTensor *t = w->tensors->pdata[i];
    if (!write_zeros(fd, t->offset - pos, err) ||
        !write_all(fd, t->data, t->nbytes, err))
      return FALSE;
    pos = t->offset + t->nbytes;
  }
  return TRUE;
}

/* Makes the rename itself durable; failures here are not worth an error
 * because the file is already complete under its final name. */
static void
sync_parent_dir(const char *path)
{
  g_autofree char *dir = g_path_get_dirname(path);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
}

gboolean
gguf_writer_write(GgufWriter *w, const char *path, GError **error)
{
  g_return_val_if_fail(w != NULL && path != NULL, FALSE);
  if (w->error) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID, "%s: %s", path,
                w->error);
    return FALSE;
  }
  if (!txl_path_replaceable(path, error))
    return FALSE;
  /* A temporary in the same directory, so rename() stays atomic.  Mode
   * 0666 goes through the umask, as a plain creat() would. */
  g_autofree char *tmp = g_strconcat(path, ".XXXXXX", NULL);
  int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) {
    int e = errno;
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO,
                "%s: cannot create a temporary file: %s", path,
                g_strerror(e));
    return FALSE;
  }
  int err = 0;
  const char *step = "write";
  gboolean ok = write_contents(w, fd, &err);
  if (ok && fsync(fd) != 0) {
    err = errno;
    step = "fsync";
    ok = FALSE;
  }
  if (close(fd) != 0 && ok) {
    err = errno;
    step = "close";
    ok = FALSE;
  }
  if (ok && rename(tmp, path) != 0) {
    err = errno;
    step = "rename";
    ok = FALSE;
  }
  if (!ok) {
    unlink(tmp);
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: %s failed: %s", path,
                step, g_strerror(err));
    return FALSE;
  }
  sync_parent_dir(path);
  return TRUE;
}
