/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strict reader for the safetensors format (8-byte little-endian header
 * length, a JSON header, then raw tensor bytes).  Every offset, dtype and
 * shape is checked against the buffer before use. */
#ifndef TXL_SAFETENSORS_H
#define TXL_SAFETENSORS_H

#include "txl.h"
#include <stdint.h>

#define ST_MAX_DIMS 8

typedef enum { ST_F32, ST_F16, ST_BF16, ST_F64, ST_OTHER } StDtype;

typedef struct {
  const char *name;
  StDtype dtype;
  const char *dtype_name; /* as written in the file, e.g. "F32" */
  int n_dims;
  uint64_t shape[ST_MAX_DIMS]; /* PyTorch order: shape[0] is the slowest */
  const void *data;            /* inside the buffer */
  uint64_t nbytes;
} StTensor;

typedef struct _StFile StFile;

StFile *st_open(const char *path, GError **error);           /* mmap */
StFile *st_parse(const void *data, size_t size, GError **error); /* borrowed */
void st_close(StFile *f);
gsize st_n_tensors(const StFile *f);
const StTensor *st_tensor_at(const StFile *f, gsize i);
const StTensor *st_find(const StFile *f, const char *name);
/* Converts any float dtype to a new float32 array (n elements). */
float *st_to_f32(const StTensor *t, gsize *n, GError **error);

#endif
