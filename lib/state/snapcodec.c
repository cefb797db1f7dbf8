/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Snapshot float coding: float16/bfloat16 rounding (to nearest, ties to
 * even, as hardware converts) and byte shuffling.  Plain C rather than
 * F16C intrinsics so that a file written on one machine reads the same on
 * any other. */
#include "snapcodec.h"

#include <math.h>
#include <string.h>

gsize
txl_snapcodec_width(TxlSnapshotPrecision p)
{
  return p == TXL_SNAPSHOT_F32 ? 4 : 2;
}

guint16
txl_f32_to_f16(float f)
{
  guint32 x;
  memcpy(&x, &f, 4);
  guint32 sign = (x >> 16) & 0x8000u;
  guint32 exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
  if (exp == 0xffu) /* inf stays inf; NaN stays a (quiet) NaN */
    return (guint16)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31)
    return (guint16)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10)
      return (guint16)sign;
    man |= 0x800000u;
    int shift = 14 - e;
    guint32 h = man >> shift, rem = man & ((1u << shift) - 1),
            half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u)))
      h++;
    return (guint16)(sign | h);
  }
  guint32 h = ((guint32)e << 10) | (man >> 13), rem = man & 0x1fffu;
  /* a carry out of the mantissa correctly bumps the exponent */
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    h++;
  return (guint16)(sign | h);
}

float
txl_f16_to_f32(guint16 hv)
{
  guint32 h = hv;
  guint32 sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu,
          man = h & 0x3ffu, x;
  if (exp == 0) {
    if (!man) {
      x = sign;
    } else {
      int e = -1;
      do {
        e++;
        man <<= 1;
      } while (!(man & 0x400u));
      x = sign | ((guint32)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (man << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

guint16
txl_f32_to_bf16(float f)
{
  guint32 x;
  memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return (guint16)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (guint16)(x >> 16);
}

float
txl_bf16_to_f32(guint16 h)
{
  guint32 x = (guint32)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static void
shuffle_bytes(const guint8 *in, gsize n, gsize w, guint8 *out)
{
  for (gsize b = 0; b < w; b++)
    for (gsize i = 0; i < n; i++)
      out[b * n + i] = in[i * w + b];
}

static void
unshuffle_bytes(const guint8 *in, gsize n, gsize w, guint8 *out)
{
  for (gsize b = 0; b < w; b++)
    for (gsize i = 0; i < n; i++)
      out[i * w + b] = in[b * n + i];
}

void
txl_snapcodec_encode(const float *in, gsize n, TxlSnapshotPrecision p,
                     gboolean shuffle, guint8 *out)
{
  const gsize w = txl_snapcodec_width(p);
  guint8 *plain = shuffle ? g_malloc(n * w + 1) : out;
  for (gsize i = 0; i < n; i++) {
    if (p == TXL_SNAPSHOT_F32) {
      guint32 v;
      memcpy(&v, &in[i], 4);
      v = GUINT32_TO_LE(v);
      memcpy(plain + 4 * i, &v, 4);
    } else {
      guint16 v = p == TXL_SNAPSHOT_F16 ? txl_f32_to_f16(in[i])
                                         : txl_f32_to_bf16(in[i]);
      v = GUINT16_TO_LE(v);
      memcpy(plain + 2 * i, &v, 2);
    }
  }
  if (shuffle) {
    shuffle_bytes(plain, n, w, out);
    g_free(plain);
  }
}

gsize
txl_snapcodec_decode(const guint8 *in, gsize n, TxlSnapshotPrecision p,
                     gboolean shuffle, guint8 *scratch, float *out)
{
  const gsize w = txl_snapcodec_width(p);
  const guint8 *plain = in;
  if (shuffle && scratch) {
    unshuffle_bytes(in, n, w, scratch);
    plain = scratch;
    shuffle = FALSE;
  }
  gsize bad = n;
  for (gsize i = 0; i < n; i++) {
    /* without scratch, byte b of value i is gathered from its plane */
    guint8 b[4];
    for (gsize k = 0; k < w; k++)
      b[k] = shuffle ? in[k * n + i] : plain[i * w + k];
    if (p == TXL_SNAPSHOT_F32) {
      guint32 v;
      memcpy(&v, b, 4);
      v = GUINT32_FROM_LE(v);
      memcpy(&out[i], &v, 4);
    } else {
      guint16 v;
      memcpy(&v, b, 2);
      v = GUINT16_FROM_LE(v);
      out[i] = p == TXL_SNAPSHOT_F16 ? txl_f16_to_f32(v) : txl_bf16_to_f32(v);
    }
    if (bad == n && !isfinite(out[i]))
      bad = i;
  }
  return bad;
}
