/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Eight-lane float helpers in GCC/Clang vector extensions: the compiler
 * emits AVX2/AVX-512 where the target has it and plain code elsewhere.
 * They exist because the scalar loops they replace (expf, max and sum
 * reductions) cannot be vectorised without -ffast-math, and they were half
 * of the attention time on small models. */
#ifndef TXL_VECMATH_H
#define TXL_VECMATH_H

#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

static inline v8f
v8_load(const float *p)
{
  v8f v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void
v8_store(float *p, v8f v)
{
  memcpy(p, &v, sizeof v);
}

static inline v8f
v8_set1(float x)
{
  return (v8f){ x, x, x, x, x, x, x, x };
}

/* mask ? a : b, lane by lane (C has no vector ?:) */
static inline v8f
v8_select(v8i mask, v8f a, v8f b)
{
  v8i ia, ib, r;
  memcpy(&ia, &a, sizeof ia);
  memcpy(&ib, &b, sizeof ib);
  r = (ia & mask) | (ib & ~mask);
  v8f out;
  memcpy(&out, &r, sizeof out);
  return out;
}

static inline v8f
v8_max(v8f a, v8f b)
{
  return v8_select(a > b, a, b);
}

/* e^x with relative error below 2e-7 over the float range: x = n ln2 + r,
 * |r| <= ln2/2, e^r by its Taylor series to r^7, 2^n built in the exponent
 * bits.  Inputs below -87 give 0 (the only case softmax feeds it). */
static inline v8f
v8_exp(v8f x)
{
  const v8f lo = v8_set1(-87.0f), hi = v8_set1(88.0f);
  v8i under = x <= lo;
  x = v8_select(under, lo, x);
  x = v8_select(x > hi, hi, x);
  const v8f shifter = v8_set1(12582912.0f); /* 1.5 * 2^23: rounds to int */
  v8f t = x * v8_set1(1.44269504088896341f) + shifter;
  v8f n = t - shifter;
  v8f r = x - n * v8_set1(0.693145751953125f);
  r = r - n * v8_set1(1.42860682030941723e-6f);
  v8f p = v8_set1(1.0f / 5040.0f);
  p = p * r + v8_set1(1.0f / 720.0f);
  p = p * r + v8_set1(1.0f / 120.0f);
  p = p * r + v8_set1(1.0f / 24.0f);
  p = p * r + v8_set1(1.0f / 6.0f);
  p = p * r + v8_set1(0.5f);
  p = p * r + v8_set1(1.0f);
  p = p * r + v8_set1(1.0f);
  v8i e = (__builtin_convertvector(n, v8i) + 127) << 23;
  v8f scale;
  memcpy(&scale, &e, sizeof scale);
  v8f res = p * scale;
  return v8_select(under, v8_set1(0.0f), res);
}

static inline float
v8_hmax(v8f v)
{
  float m = v[0];
  for (int i = 1; i < 8; i++)
    m = v[i] > m ? v[i] : m;
  return m;
}

static inline float
v8_hsum(v8f v)
{
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

/* Scalar e^x by the same formula, for loop tails. */
static inline float
txl_exp1(float x)
{
  float buf[8] = { x, x, x, x, x, x, x, x };
  return v8_exp(v8_load(buf))[0];
}

#endif
