/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Repeats of a flagged kind of line (repeats.h). */
#include "repeats.h"

#include <math.h>
#include <string.h>

void
txl_repeats_init(TxlRepeats *r)
{
  memset(r, 0, sizeof *r);
}

static gboolean
is_hex(guchar c)
{
  return g_ascii_isxdigit(c);
}

guint64
txl_line_kind(const char *text, gsize len)
{
  /* FNV-1a over the text, each masked run hashed as one '#' */
  guint64 h = 0xcbf29ce484222325ull;
  const guchar *p = (const guchar *)text;
  for (gsize i = 0; i < len;) {
    gsize j = i;
    gboolean digit = FALSE;
    while (j < len && is_hex(p[j]))
      digit |= g_ascii_isdigit(p[j++]);
    if (j > i && digit) {
      h = (h ^ '#') * 0x100000001b3ull;
      i = j;
      continue;
    }
    /* a run of letters a-f only is text: hashed as it is */
    for (gsize k = i; k < MAX(j, i + 1); k++)
      h = (h ^ p[k]) * 0x100000001b3ull;
    i = MAX(j, i + 1);
  }
  return h;
}

gboolean
txl_repeats_line(TxlRepeats *r, const char *text, gsize len,
                 gboolean flagged)
{
  guint64 now = r->lines++;
  /* forget the kinds flagged longer ago than the horizon */
  guint32 keep = 0;
  for (guint32 i = 0; i < r->n; i++) {
    if (now - r->at[i] <= TXL_REPEAT_HORIZON) {
      r->kind[keep] = r->kind[i];
      r->at[keep++] = r->at[i];
    }
  }
  r->n = keep;
  if (!flagged)
    return FALSE;
  guint64 k = txl_line_kind(text, len);
  for (guint32 i = 0; i < r->n; i++) {
    if (r->kind[i] == k) {
      r->at[i] = now;
      return FALSE;
    }
  }
  /* at most one entry a line within the horizon: HORIZON + 1 slots hold
   * them all */
  r->kind[r->n] = k;
  r->at[r->n++] = now;
  return TRUE;
}

gboolean
txl_repeats_report(TxlRepeats *r, const char *text, gsize len,
                   const TxlLineScore *s, gboolean flagged, gboolean *repeat)
{
  /* a non-finite score is flagged whatever the rule said (its warm-up
   * too): it must never pass for a normal line */
  gboolean broken = s->tokens > 0 && !isfinite(txl_line_worst(s));
  gboolean shown =
      txl_repeats_line(r, text, len, flagged || broken) || broken;
  *repeat = flagged && !shown;
  return shown;
}

void
txl_repeats_put(GByteArray *b, const TxlRepeats *r)
{
  txl_put_u64(b, r->lines);
  txl_put_u32(b, r->n);
  for (guint32 i = 0; i < r->n; i++) {
    txl_put_u64(b, r->kind[i]);
    txl_put_u64(b, r->at[i]);
  }
}

gboolean
txl_repeats_get(TxlReader *rd, TxlRepeats *r)
{
  TxlRepeats t;
  txl_repeats_init(&t);
  t.lines = txl_get_u64(rd);
  t.n = txl_get_u32(rd);
  if (t.n > TXL_REPEAT_HORIZON + 1)
    rd->ok = FALSE;
  for (guint32 i = 0; i < t.n && rd->ok; i++) {
    t.kind[i] = txl_get_u64(rd);
    t.at[i] = txl_get_u64(rd);
    /* each a line already seen, within the horizon of the last, one each */
    if (t.at[i] >= t.lines || t.lines - 1 - t.at[i] > TXL_REPEAT_HORIZON)
      rd->ok = FALSE;
    for (guint32 j = 0; j < i && rd->ok; j++)
      if (t.kind[j] == t.kind[i] || t.at[j] == t.at[i])
        rd->ok = FALSE;
  }
  if (rd->ok)
    *r = t;
  return rd->ok;
}
