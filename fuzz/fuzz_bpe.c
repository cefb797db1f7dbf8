/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the BPE trainer, pre-tokenizer, normaliser and
 * encoder.
 *
 * Input: one byte of normalisation rules, then text.  The first half of the
 * text trains a small vocabulary; the whole text is then encoded at once
 * and in pieces whose sizes come from the input itself.  Traps when the
 * token ids, lines or offsets differ between the two, when the tokens do not
 * tile the input but for record headers (record.h: skipped, no token), or
 * (without normalisation) when decoding does not give the rest back. */
#include "bpe.h"
#include "fuzz_check.h"
#include "model_internal.h"
#include "record.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  GArray *v; /* int64 quadruples: id, line, start, end */
} Toks;

static void
on_token(int32_t id, gint64 line, gsize start, gsize end, gpointer data)
{
  Toks *t = data;
  gint64 q[4] = { id, line, (gint64)start, (gint64)end };
  g_array_append_vals(t->v, q, 4);
}

static Toks
encode(const TxlTokenizer *tok, const uint8_t *d, size_t n, const uint8_t *cuts,
       size_t ncuts)
{
  Toks t = { g_array_new(FALSE, FALSE, sizeof(gint64)) };
  TxlEncoder *e = txl_encoder_new(tok, on_token, &t);
  size_t at = 0, k = 0;
  while (at < n) {
    size_t piece = ncuts ? 1 + (size_t)cuts[k++ % ncuts] % 17 : n;
    piece = MIN(piece, n - at);
    txl_encoder_push(e, (const char *)d + at, piece);
    at += piece;
  }
  txl_encoder_finish(e);
  txl_encoder_free(e);
  return t;
}

/* Whether text[from, to) is a record header the encoder skips: an RS at a
 * line's start, no line end, closed by the next RS within the limit. */
static gboolean
is_header(const uint8_t *text, gint64 from, gint64 to)
{
  if (to - from < 2 || to - from > TXL_RECORD_MAX_HEADER ||
      text[from] != TXL_RECORD_RS || text[to - 1] != TXL_RECORD_RS ||
      (from > 0 && text[from - 1] != '\n'))
    return FALSE;
  for (gint64 i = from + 1; i < to - 1; i++)
    if (text[i] == '\n' || text[i] == TXL_RECORD_RS)
      return FALSE;
  return TRUE;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1 || size > 1 << 16)
    return 0;
  TxlBpeTrainOptions o = TXL_BPE_TRAIN_OPTIONS_DEFAULT;
  o.normalize = data[0] & TXL_NORM_ALL;
  o.vocab_size = 256 + 2 * TXL_NORM_N_RULES + 200;
  const uint8_t *text = data + 1;
  size_t n = size - 1;
  const char *train = (const char *)text;
  gsize tlen = n / 2;
  TxlBpe *b = txl_bpe_train(&train, &tlen, 1, &o, NULL);
  CHECK(b != NULL);
  TxlTokenizer *tok = txl_tokenizer_new_bpe(b);

  Toks whole = encode(tok, text, n, NULL, 0);
  Toks parts = encode(tok, text, n, text, n);
  CHECK(whole.v->len == parts.v->len);
  CHECK(whole.v->len == 0 || memcmp(whole.v->data, parts.v->data,
                                     whole.v->len * sizeof(gint64)) == 0);

  const gint64 *q = (const gint64 *)whole.v->data;
  gsize nt = whole.v->len / 4;
  gint64 at = 0, line = 1;
  int32_t *ids = g_new(int32_t, nt + 1);
  GByteArray *kept = g_byte_array_new(); /* the bytes tokens cover */
  for (gsize i = 0; i < nt; i++, q += 4) {
    CHECK(q[0] >= 0 && q[0] < txl_bpe_n_tokens(b));
    CHECK((q[2] == at || is_header(text, at, q[2])) && q[3] > q[2]);
    g_byte_array_append(kept, text + q[2], (guint)(q[3] - q[2]));
    CHECK(q[1] == line);
    if (memchr(text + q[2], '\n', (size_t)(q[3] - q[2]))) {
      CHECK(q[3] - q[2] == 1);
      line++;
    }
    at = q[3];
    ids[i] = (int32_t)q[0];
  }
  CHECK(at == (gint64)n || is_header(text, at, (gint64)n));
  if (!o.normalize) {
    GByteArray *back = g_byte_array_new();
    CHECK(txl_tokenizer_decode(tok, ids, nt, back, NULL));
    CHECK(back->len == kept->len &&
          (kept->len == 0 || memcmp(back->data, kept->data, kept->len) == 0));
    g_byte_array_unref(back);
  }
  g_byte_array_unref(kept);
  g_free(ids);
  g_array_unref(whole.v);
  g_array_unref(parts.v);
  txl_tokenizer_free(tok);
  return 0;
}
