/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GGUF container: a strict reader over a byte buffer (usually a read-only
 * mmap) and a writer.  The reader validates every length, offset, type and
 * count before it is used, so a truncated or hostile file yields a GError
 * (domain TXL_ERROR, code TXL_ERROR_FORMAT or TXL_ERROR_IO) naming what is
 * wrong, never an out-of-bounds read.  Only GGUF version 3, little endian. */
#ifndef TXL_GGUF_H
#define TXL_GGUF_H

#include "txl.h"
#include <stdint.h>

typedef enum {
  GGUF_TYPE_UINT8 = 0,
  GGUF_TYPE_INT8 = 1,
  GGUF_TYPE_UINT16 = 2,
  GGUF_TYPE_INT16 = 3,
  GGUF_TYPE_UINT32 = 4,
  GGUF_TYPE_INT32 = 5,
  GGUF_TYPE_FLOAT32 = 6,
  GGUF_TYPE_BOOL = 7,
  GGUF_TYPE_STRING = 8,
  GGUF_TYPE_ARRAY = 9,
  GGUF_TYPE_UINT64 = 10,
  GGUF_TYPE_INT64 = 11,
  GGUF_TYPE_FLOAT64 = 12,
} GgufType;

/* ggml tensor types we accept */
#define GGUF_TENSOR_F32 0u
#define GGUF_TENSOR_F16 1u

#define GGUF_MAX_DIMS 4
#define GGUF_DEFAULT_ALIGNMENT 32

typedef struct {
  const char *name;      /* NUL-terminated copy owned by the GgufFile */
  uint32_t n_dims;
  uint64_t ne[GGUF_MAX_DIMS]; /* ne[0] varies fastest; unused dims are 1 */
  uint32_t type;         /* GGUF_TENSOR_* */
  const void *data;      /* inside the buffer, aligned, fully in bounds */
  uint64_t nbytes;
} GgufTensor;

typedef struct _GgufFile GgufFile;

/* Maps and parses a file (read-only mmap, weights are not copied). */
GgufFile *gguf_open(const char *path, GError **error);
/* Parses a caller-owned buffer that must outlive the GgufFile. */
GgufFile *gguf_parse(const void *data, size_t size, GError **error);
void gguf_close(GgufFile *f);

const void *gguf_buffer(const GgufFile *f, size_t *size);
uint32_t gguf_version(const GgufFile *f);

/* Metadata.  Each getter returns FALSE with an error when the key is
 * missing, has the wrong type, or (integers) does not fit the range.
 * Integer getters accept any GGUF integer type. */
gboolean gguf_has_key(const GgufFile *f, const char *key);
/* Every key in file order, with its value as encoded after the type field
 * (what gguf_writer_add_raw() takes), so a file can be copied with keys
 * added or left out without interpreting the others. */
gsize gguf_n_keys(const GgufFile *f);
const char *gguf_key_at(const GgufFile *f, gsize i, uint32_t *type,
                        const void **raw, gsize *raw_len);
gboolean gguf_get_int(const GgufFile *f, const char *key, gint64 min,
                      gint64 max, gint64 *out, GError **error);
gboolean gguf_get_bool(const GgufFile *f, const char *key, gboolean *out,
                       GError **error);
gboolean gguf_get_float(const GgufFile *f, const char *key, double *out,
                        GError **error);
/* Returns a newly allocated NUL-terminated copy; refuses embedded NULs. */
char *gguf_get_string(const GgufFile *f, const char *key, GError **error);
/* Integer arrays (any integer element type) copied into a new gint64[]. */
gboolean gguf_get_int_array(const GgufFile *f, const char *key,
                            gint64 **out, gsize *n, GError **error);
gboolean gguf_get_bool_array(const GgufFile *f, const char *key,
                             gboolean **out, gsize *n, GError **error);
/* String arrays: pointers into the buffer (not NUL-terminated) plus
 * lengths; the arrays are newly allocated, the bytes are not copied. */
gboolean gguf_get_string_array(const GgufFile *f, const char *key,
                               const char ***strs, gsize **lens, gsize *n,
                               GError **error);

gsize gguf_n_tensors(const GgufFile *f);
const GgufTensor *gguf_tensor_at(const GgufFile *f, gsize i);
const GgufTensor *gguf_find_tensor(const GgufFile *f, const char *name);

/* ---- writer --------------------------------------------------------- */

typedef struct _GgufWriter GgufWriter;

GgufWriter *gguf_writer_new(void);
void gguf_writer_free(GgufWriter *w);
void gguf_writer_add_u32(GgufWriter *w, const char *key, uint32_t v);
void gguf_writer_add_i32(GgufWriter *w, const char *key, int32_t v);
void gguf_writer_add_f32(GgufWriter *w, const char *key, float v);
void gguf_writer_add_f64(GgufWriter *w, const char *key, double v);
void gguf_writer_add_bool(GgufWriter *w, const char *key, gboolean v);
void gguf_writer_add_string(GgufWriter *w, const char *key, const char *v);
void gguf_writer_add_u32_array(GgufWriter *w, const char *key,
                               const uint32_t *v, gsize n);
void gguf_writer_add_bool_array(GgufWriter *w, const char *key,
                                const gboolean *v, gsize n);
/* Strings may hold any bytes (lens given). */
void gguf_writer_add_string_array(GgufWriter *w, const char *key,
                                  const char *const *v, const gsize *lens,
                                  gsize n);
/* A value already encoded (from gguf_key_at()); general.alignment must be
 * a u32 and is checked as gguf_writer_add_u32 does. */
void gguf_writer_add_raw(GgufWriter *w, const char *key, uint32_t type,
                         const void *raw, gsize raw_len);
/* ne[] as in GgufTensor.  The data is copied. */
void gguf_writer_add_tensor(GgufWriter *w, const char *name, uint32_t type,
                            uint32_t n_dims, const uint64_t *ne,
                            const void *data, gsize nbytes);
/* A file's keys, as encoded and in file order, those keep() takes (all
 * with keep NULL): a file copied with keys left out or replaced. */
typedef gboolean (*GgufKeyFilter)(const char *key, gconstpointer data);
void gguf_writer_copy_keys(GgufWriter *w, const GgufFile *f,
                           GgufKeyFilter keep, gconstpointer data);
/* Every tensor of f, in file order (the data is copied). */
void gguf_writer_copy_tensors(GgufWriter *w, const GgufFile *f);
/* Writes atomically: temporary file in the same directory, fsync, rename. */
gboolean gguf_writer_write(GgufWriter *w, const char *path, GError **error);

#endif
