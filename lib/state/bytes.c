/* Little-endian state fields (bytes.h). */
#include "bytes.h"

#include <string.h>

static void
put_le(GByteArray *b, guint64 v, int n)
{
  guint8 x[8];
  for (int i = 0; i < n; i++)
    x[i] = (guint8)(v >> (8 * i));
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
  guint64 u;
  memcpy(&u, &v, 8);
  put_le(b, u, 8);
}

void
txl_put_blob(GByteArray *b, const void *data, gsize len)
{
  put_le(b, len, 8);
  if (len)
    g_byte_array_append(b, data, (guint)len);
}

void
txl_reader_init(TxlReader *r, GBytes *bytes)
{
  gsize n = 0;
  r->p = bytes ? g_bytes_get_data(bytes, &n) : NULL;
  r->end = r->p ? r->p + n : NULL;
  r->ok = r->p != NULL || n == 0;
}

static guint64
get_le(TxlReader *r, int n)
{
  if (!r->ok || r->end - r->p < n) {
    r->ok = FALSE;
    return 0;
  }
  guint64 v = 0;
  for (int i = 0; i < n; i++)
    v |= (guint64)r->p[i] << (8 * i);
  r->p += n;
  return v;
}

guint32
txl_get_u32(TxlReader *r)
{
  return (guint32)get_le(r, 4);
}

guint64
txl_get_u64(TxlReader *r)
{
  return get_le(r, 8);
}

gdouble
txl_get_f64(TxlReader *r)
{
  guint64 u = get_le(r, 8);
  gdouble v;
  memcpy(&v, &u, 8);
  return v;
}

const guint8 *
txl_get_blob(TxlReader *r, gsize *len, gsize max)
{
  guint64 n = get_le(r, 8);
  if (!r->ok || n > max || n > (guint64)(r->end - r->p)) {
    r->ok = FALSE;
    *len = 0;
    return NULL;
  }
  const guint8 *d = r->p;
  r->p += n;
  *len = (gsize)n;
  return d;
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
