/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libtxl's one little-endian byte codec: every file and state format
 * (GGUF, snapshots, the state bytes of streams, encoders, sessions,
 * baselines and samplers, an element's part of a pipeline's state) reads
 * and writes its fields with these, so that byte order is decided in one
 * place.  It sits in the formats layer, the highest one that stores
 * bytes, so that every layer below and the plugins can include it.
 *
 * Three forms: loads and stores at a pointer the caller has bounded
 * (txl_le_*), appends to a growing array (txl_put_*), and a bounded reader
 * (txl_get_*): past the end it returns zeros and stays not ok, so a parser
 * checks once, at the end, and never reads out of bounds. */
#ifndef TXL_BYTES_H
#define TXL_BYTES_H

#include <glib.h>
#include <string.h>

static inline guint16
txl_le_get16(const guint8 *p)
{
  return (guint16)(p[0] | (p[1] << 8));
}

static inline guint32
txl_le_get32(const guint8 *p)
{
  return (guint32)p[0] | ((guint32)p[1] << 8) | ((guint32)p[2] << 16) |
         ((guint32)p[3] << 24);
}

static inline guint64
txl_le_get64(const guint8 *p)
{
  return (guint64)txl_le_get32(p) | ((guint64)txl_le_get32(p + 4) << 32);
}

static inline void
txl_le_put32(guint8 *p, guint32 v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (guint8)(v >> (8 * i));
}

static inline void
txl_le_put64(guint8 *p, guint64 v)
{
  txl_le_put32(p, (guint32)v);
  txl_le_put32(p + 4, (guint32)(v >> 32));
}

/* n host floats at p as little-endian bytes, in place (a byte swap, so
 * also the way back); nothing to do on little-endian hosts. */
static inline void
txl_le_f32_inplace(guint8 *p, gsize n)
{
#if G_BYTE_ORDER != G_LITTLE_ENDIAN
  for (gsize i = 0; i < n; i++, p += 4) {
    guint32 u;
    memcpy(&u, p, 4);
    txl_le_put32(p, u);
  }
#else
  (void)p;
  (void)n;
#endif
}

/* A double's bits, stored like a u64. */
static inline guint64
txl_f64_bits(gdouble v)
{
  guint64 u;
  memcpy(&u, &v, 8);
  return u;
}

static inline gdouble
txl_f64_from_bits(guint64 u)
{
  gdouble v;
  memcpy(&v, &u, 8);
  return v;
}

void txl_put_u32(GByteArray *b, guint32 v);
void txl_put_u64(GByteArray *b, guint64 v);
void txl_put_f64(GByteArray *b, gdouble v);
void txl_put_blob(GByteArray *b, const void *data, gsize len); /* u64 len */

/* Writing into a caller's buffer of known size (a state get_data): each
 * store advances the cursor; the caller sized the buffer first. */
typedef struct {
  guint8 *p;
} TxlWriter;

static inline void
txl_w_u32(TxlWriter *w, guint32 v)
{
  txl_le_put32(w->p, v);
  w->p += 4;
}

static inline void
txl_w_u64(TxlWriter *w, guint64 v)
{
  txl_le_put64(w->p, v);
  w->p += 8;
}

static inline void
txl_w_raw(TxlWriter *w, const void *data, gsize n)
{
  if (n)
    memcpy(w->p, data, n);
  w->p += n;
}

typedef struct {
  const guint8 *p, *end;
  gboolean ok; /* FALSE once anything was missing */
} TxlReader;

/* The data of bytes (NULL, *n 0, for NULL bytes: a state not given). */
const guint8 *txl_bytes_data(GBytes *bytes, gsize *n);
/* NULL or empty bytes: an empty reader */
void txl_reader_init(TxlReader *r, GBytes *bytes);
/* Over n bytes at data (NULL with n 0: empty). */
void txl_reader_init_data(TxlReader *r, const void *data, gsize n);
guint32 txl_get_u32(TxlReader *r);
guint64 txl_get_u64(TxlReader *r);
gdouble txl_get_f64(TxlReader *r);
/* a pointer into the bytes, or NULL (and ok FALSE) past the end or above
 * max */
const guint8 *txl_get_blob(TxlReader *r, gsize *len, gsize max);
/* bytes not read yet (0 once not ok) */
gsize txl_reader_left(const TxlReader *r);
/* n raw bytes (a pointer into the data), NULL and not ok past the end */
const guint8 *txl_get_raw(TxlReader *r, gsize n);
/* all read, nothing left over */
gboolean txl_reader_done(const TxlReader *r);

#endif
