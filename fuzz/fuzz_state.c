/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the tokenizer, baseline and repeats states that
 * snapshots carry.  The first byte picks the tokenizer (byte, word, BPE,
 * BPE with field normalisation), the baseline, or (0xf0 and over) the
 * kinds of line flagged lately; the rest is the state.  A state that is
 * accepted must then work: text goes through the restored encoder, values
 * through the restored baseline, lines through the restored repeats. */
#include "baseline.h"
#include "repeats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "bpe.h"
#include "txl.h"
#include "fuzz_check.h"
#include "../tests/tu_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static TxlTokenizer *toks[3];

static const char sample[] =
    "2026-11-22 07:13:25 INFO dfs.DataNode: Receiving blk_-1608 src: "
    "/10.250.19.102:54106\nGröße ☃ 0x7fff1234 the cat sat\n  spaces\tend\n";

static void
nop(int32_t id, gint64 line, gsize a, gsize b, gpointer data)
{
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  for (int norm = 0; norm <= 1; norm++) {
    toks[norm] = tu_bpe_tokenizer(sample, sizeof sample - 1, norm, NULL);
    if (!toks[norm])
      abort();
  }
  return 0;
}

static void
encoder_case(const TxlTokenizer *tok, const uint8_t *data, size_t size)
{
  TxlEncoder *e = txl_encoder_new(tok, nop, NULL);
  /* a real state first, so that mutations start from valid ones */
  txl_encoder_push(e, sample, (gsize)(size % sizeof sample));
  GBytes *st = g_bytes_new(data, size);
  GError *err = NULL;
  if (txl_encoder_restore(e, st, &err)) {
    txl_encoder_push(e, sample, sizeof sample - 1);
    GBytes *again = txl_encoder_save(e);
    g_bytes_unref(again);
    txl_encoder_finish(e);
  } else {
    CHECK_REFUSED(err);
  }
  g_bytes_unref(st);
  txl_encoder_free(e);
}

static void
repeats_case(const uint8_t *data, size_t size)
{
  TxlReader r;
  txl_reader_init_data(&r, data, size);
  TxlRepeats rp;
  if (!txl_repeats_get(&r, &rp) || !txl_reader_done(&r))
    return;
  /* accepted: saved back as it came, then lines of every kind go on */
  GByteArray *b = g_byte_array_new();
  txl_repeats_put(b, &rp);
  if (b->len != size || memcmp(b->data, data, size) != 0)
    abort();
  g_byte_array_unref(b);
  for (int i = 0; i < 300; i++) {
    const char *line = sample + i % (sizeof sample - 1);
    txl_repeats_line(&rp, line, strlen(line) % 40, i % 3 != 0);
    if (rp.n > TXL_REPEAT_HORIZON + 1)
      abort();
  }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  if (data[0] >= 0xf0) {
    repeats_case(data + 1, size - 1);
    return 0;
  }
  int which = data[0] % 4;
  data++;
  size--;
  if (which < 2) {
    encoder_case(toks[which], data, size);
    return 0;
  }
  if (which == 2) {
    /* a state saved from a real encoder, with the input's bytes over it */
    TxlEncoder *e = txl_encoder_new(toks[1], nop, NULL);
    txl_encoder_push(e, sample, size % (sizeof sample - 1));
    GBytes *st = txl_encoder_save(e);
    gsize n;
    const guint8 *d = g_bytes_get_data(st, &n);
    guint8 *m = g_memdup2(d, n);
    for (size_t i = 0; i < size && n; i++)
      m[i % n] ^= data[i];
    txl_encoder_free(e);
    encoder_case(toks[1], m, n);
    g_free(m);
    g_bytes_unref(st);
    return 0;
  }
  TxlBaseline *b = txl_baseline_new(TXL_BASELINE_MAD, 16, 4, 0.5, NULL);
  GBytes *st = g_bytes_new(data, size);
  GError *err = NULL;
  if (txl_baseline_restore(b, st, &err)) {
    /* what was accepted is saved back as it came (but q, which the MAD
     * kind does not use), a hand-over under way included */
    gsize n = txl_baseline_state_get_size(b);
    guint8 *again = g_malloc(n);
    if (n != size || txl_baseline_state_get_data(b, again, n) != n ||
        memcmp(again, data, 20) != 0 || memcmp(again + 28, data + 28, n - 28))
      abort();
    g_free(again);
    double s, t;
    for (int i = 0; i < 20; i++) {
      if (i == 7)
        txl_baseline_restart(b);
      if (txl_baseline_threshold(b, &t) && !isfinite(t))
        abort();
      if (txl_baseline_session_threshold(b, &t) && !isfinite(t))
        abort();
      txl_baseline_score(b, i * 0.1, &s);
      txl_baseline_add(b, i * 0.1);
    }
  } else {
    CHECK_REFUSED(err);
  }
  g_bytes_unref(st);
  txl_baseline_free(b);
  return 0;
}
