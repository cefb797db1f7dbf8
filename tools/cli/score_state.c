/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl score's part of a text snapshot (score_text.h); the scorer's state
 * and the tokenizer's (section "tokenizer") are kept beside it. */
#include "score_text.h"
#include "txl_formats.h"

#define TEXT_STATE_VERSION 3u /* 2: each line's TxlLineAcc (lib/anomaly/lines.h);
                                 3: its weights generation and ids (--learn) */

void
txl_score_line_free(gpointer p)
{
  Line *l = p;
  g_string_free(l->text, TRUE);
  if (l->ids)
    g_array_free(l->ids, TRUE);
  g_free(l);
}

void
txl_score_lines_init(TextScore *t)
{
  g_queue_init(&t->lines);
  t->tok_line = g_array_new(FALSE, FALSE, sizeof(gint64));
  t->cur_line = 1;
}

void
txl_score_lines_clear(TextScore *t)
{
  g_queue_clear_full(&t->lines, txl_score_line_free);
  g_array_free(t->tok_line, TRUE);
}

GBytes *
txl_score_state_save(TextScore *t)
{
  GByteArray *b = g_byte_array_new();
  gint64 first = t->last_scored + 1; /* the oldest line still needed */
  first = CLAMP(first, t->tok_base, t->tok_base + (gint64)t->tok_line->len);
  txl_put_u32(b, TEXT_STATE_VERSION);
  txl_put_u64(b, (guint64)t->cur_line);
  txl_put_u64(b, (guint64)first);
  guint n = t->tok_line->len - (guint)(first - t->tok_base);
  txl_put_u32(b, n);
  for (guint i = 0; i < n; i++)
    txl_put_u64(b, (guint64)g_array_index(t->tok_line, gint64,
                                          first - t->tok_base + i));
  txl_put_u32(b, t->lines.length);
  for (GList *it = t->lines.head; it; it = it->next) {
    Line *l = it->data;
    txl_put_u64(b, (guint64)l->line);
    txl_put_u64(b, l->bytes);
    txl_put_u64(b, (guint64)l->pushed);
    txl_put_u32(b, l->closed);
    txl_put_u32(b, (guint32)l->text->len);
    g_byte_array_append(b, (const guint8 *)l->text->str, (guint)l->text->len);
    txl_line_acc_put(b, &l->acc);
    txl_put_u32(b, (guint32)l->gen);
    txl_put_u32(b, l->ids ? l->ids->len : 0);
    for (guint i = 0; l->ids && i < l->ids->len; i++)
      txl_put_u32(b, (guint32)g_array_index(l->ids, int32_t, i));
  }
  return g_byte_array_free_to_bytes(b);
}

/* A line's weights generation and ids (text state 3); ids only when
 * learning, and then at most the tokens the line has pushed. */
static gboolean
line_ids_restore(TextScore *t, Line *l, TxlReader *r)
{
  guint32 gen = txl_get_u32(r), n = txl_get_u32(r);
  if (!r->ok || gen > G_MAXINT32 || n > txl_reader_left(r) / 4 ||
      n > (guint64)l->pushed + 1 || (n && !t->learner))
    return FALSE;
  l->gen = (int)gen;
  if (t->learner)
    l->ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
  for (guint32 i = 0; i < n; i++) {
    int32_t id = (int32_t)txl_get_u32(r);
    g_array_append_val(l->ids, id);
  }
  return TRUE;
}

/* The lines of a state, oldest first, into lines; cur: the line being
 * read. */
static gboolean
lines_restore(TextScore *t, TxlReader *r, guint32 version, gint64 cur,
              GQueue *lines)
{
  guint32 nlines = txl_get_u32(r);
  gint64 prev = 0;
  for (guint32 i = 0; r->ok && i < nlines; i++) {
    gint64 line = (gint64)txl_get_u64(r);
    guint64 bytes = txl_get_u64(r);
    gint64 pushed = (gint64)txl_get_u64(r);
    guint32 closed = txl_get_u32(r), tlen = txl_get_u32(r);
    if (!r->ok || closed > 1 || tlen > TEXT_CAP ||
        tlen > txl_reader_left(r) || line <= prev || line > cur ||
        pushed < 0)
      return FALSE;
    Line *l = g_new0(Line, 1);
    l->line = prev = line;
    l->bytes = bytes;
    l->pushed = pushed;
    l->closed = closed != 0;
    l->text = g_string_new_len((const char *)txl_get_raw(r, tlen),
                               (gssize)tlen);
    g_queue_push_tail(lines, l);
    if (!txl_line_acc_get(r, &l->acc) || l->acc.s.tokens > l->pushed)
      return FALSE;
    if (version >= 3 && !line_ids_restore(t, l, r))
      return FALSE;
  }
  return txl_reader_done(r);
}

gboolean
txl_score_state_restore(TextScore *t, GBytes *state, GError **error)
{
  TxlReader r;
  txl_reader_init(&r, state);
  guint32 version = txl_get_u32(&r);
  if (r.ok && version == 1) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_FORMAT,
                        "the snapshot's text-scoring state is version 1, "
                        "written by a txl that scored lines per raw byte; "
                        "this txl scores them per normalised byte with a "
                        "worst part (docs/line-scores.md) and cannot continue "
                        "those lines: score the input again from its start");
    return FALSE;
  }
  if (r.ok && version > TEXT_STATE_VERSION) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "the snapshot's text-scoring state is version %u, written by "
                "a newer txl (this one reads versions 2 to %u): continue it "
                "with that txl", version, TEXT_STATE_VERSION);
    return FALSE;
  }
  gint64 cur = (gint64)txl_get_u64(&r), base = (gint64)txl_get_u64(&r);
  guint32 n = txl_get_u32(&r);
  gint64 seen = txl_scorer_tokens_seen(t->c.scorer);
  GArray *tl = g_array_new(FALSE, FALSE, sizeof(gint64));
  GQueue lines = G_QUEUE_INIT;
  if (!r.ok || version < 2 || n > txl_reader_left(&r) / 8 || cur < 1 ||
      cur > G_MAXINT64 / 2 || base < 0 || base != seen - (gint64)n)
    goto bad;
  for (guint32 i = 0; i < n; i++) {
    gint64 line = (gint64)txl_get_u64(&r);
    if (line < 1 || line > cur)
      goto bad;
    g_array_append_val(tl, line);
  }
  if (!lines_restore(t, &r, version, cur, &lines))
    goto bad;
  g_queue_clear_full(&t->lines, txl_score_line_free);
  t->lines = lines;
  g_array_free(t->tok_line, TRUE);
  t->tok_line = tl;
  t->tok_base = base;
  t->last_scored = base - 1;
  t->cur_line = cur;
  return TRUE;
bad:
  g_queue_clear_full(&lines, txl_score_line_free);
  g_array_free(tl, TRUE);
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
              "the snapshot's text-scoring state is malformed");
  return FALSE;
}
