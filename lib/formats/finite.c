/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "finite.h"

/* A float is inf or NaN exactly when its exponent bits are all ones.  The
 * block's largest exponent tells whether to look closer: a loop the
 * compiler vectorises, about as fast as reading the weights. */
gint64
txl_first_nonfinite(const float *v, gsize n)
{
  const guint32 *u = (const guint32 *)v;
  const guint32 EXP = 0x7f800000u;
  for (gsize b = 0; b < n; b += 4096) {
    const gsize e = MIN(n, b + 4096);
    guint32 mx = 0;
    for (gsize i = b; i < e; i++) {
      guint32 x = u[i] & EXP;
      mx = x > mx ? x : mx;
    }
    if (mx != EXP)
      continue;
    for (gsize i = b; i < e; i++)
      if ((u[i] & EXP) == EXP)
        return (gint64)i;
  }
  return -1;
}
