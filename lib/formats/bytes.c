/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The little-endian byte codec's growing and bounded forms (bytes.h). */
#include "bytes.h"

static void
put_le(GByteArray *b, guint64 v, int n)
{
  guint8 x[8];
  txl_le_put64(x, v);
  g_byte_array_append(b, x, (guint)n);
}

void
txl_put_u32(GByteArray *b, guint32 v)
{
  put_le(b, v, 4);
}

void
txl_put_u64(GByteArray *b, guint64 v)
{
  put_le(b, v, 8);
}

void
txl_put_f64(GByteArray *b, gdouble v)
{
  put_le(b, txl_f64_bits(v), 8);
}

void
txl_put_blob(GByteArray *b, const void *data, gsize len)
{
  put_le(b, len, 8);
  if (len)
    g_byte_array_append(b, data, (guint)len);
}

void
txl_reader_init_data(TxlReader *r, const void *data, gsize n)
{
  r->p = data;
  r->end = r->p ? r->p + n : NULL;
  r->ok = r->p != NULL || n == 0;
}

const guint8 *
txl_bytes_data(GBytes *bytes, gsize *n)
{
  *n = 0;
  return bytes ? g_bytes_get_data(bytes, n) : NULL;
}

void
txl_reader_init(TxlReader *r, GBytes *bytes)
{
  gsize n;
  const guint8 *d = txl_bytes_data(bytes, &n);
  txl_reader_init_data(r, d, n);
}

const guint8 *
txl_get_raw(TxlReader *r, gsize n)
{
  if (!r->ok || (gsize)(r->end - r->p) < n) {
    r->ok = FALSE;
    return NULL;
  }
  const guint8 *d = r->p;
  r->p += n;
  return d;
}

guint32
txl_get_u32(TxlReader *r)
{
  const guint8 *d = txl_get_raw(r, 4);
  return d ? txl_le_get32(d) : 0;
}

guint64
txl_get_u64(TxlReader *r)
{
  const guint8 *d = txl_get_raw(r, 8);
  return d ? txl_le_get64(d) : 0;
}

gdouble
txl_get_f64(TxlReader *r)
{
  return txl_f64_from_bits(txl_get_u64(r));
}

const guint8 *
txl_get_blob(TxlReader *r, gsize *len, gsize max)
{
  guint64 n = txl_get_u64(r);
  if (!r->ok || n > max || n > (guint64)(r->end - r->p)) {
    r->ok = FALSE;
    *len = 0;
    return NULL;
  }
  *len = (gsize)n;
  return txl_get_raw(r, (gsize)n);
}

gsize
txl_reader_left(const TxlReader *r)
{
  return r->ok ? (gsize)(r->end - r->p) : 0;
}

gboolean
txl_reader_done(const TxlReader *r)
{
  return r->ok && r->p == r->end;
}
