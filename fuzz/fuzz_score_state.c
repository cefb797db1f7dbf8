/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: `txl score`'s part of a text snapshot (section
 * "score-text", tools/cli/score_state.c), read back as --load-snapshot
 * reads it, against the scorer of the snapshot it came from.
 *
 * The real part is that of tests/data/learn-2026-11-28/score.snap (written
 * by `txl score --learn`), loaded at start with its scorer.  Per input,
 * the first byte says whether the rest is the part itself or XORed over
 * the real one (bit 7), and whether the restoring run learns (bit 0: a
 * part with a line's ids is only for one that does).
 *
 * What must hold: a refusal comes with an error message and leaves the
 * state empty as it was; an accepted part holds lines in order, each at
 * most the line being read, no more scored tokens than it pushed, and the
 * line of every token not yet scored; saved again and read back, it saves
 * to the same bytes.
 *
 * Seeds: FUZZ_SCORE_STATE_SEEDS=<dir> makes the target write the real
 * part there at start, as itself (raw, learning and not) and as the one
 * byte that XORs nothing over it (fuzz/corpus-score-state). */
#include "score_text.h"
#include "fuzz_check.h"

#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_SCORE_DIR
#error "FUZZ_SCORE_DIR must name tests/data/learn-2026-11-28"
#endif

static TxlScorer *scorer;
static TxlLearner *learner;
static GBytes *real;

static void
nop(gint64 pos, int32_t token, float lp, gpointer data)
{
  (void)pos, (void)token, (void)lp, (void)data;
}

static void
seed(const char *dir, const char *name, guint8 first, GBytes *rest)
{
  gsize n = 0;
  const guint8 *d = rest ? g_bytes_get_data(rest, &n) : NULL;
  guint8 *b = g_malloc(n + 1);
  b[0] = first;
  if (n)
    memcpy(b + 1, d, n);
  g_autofree char *path = g_build_filename(dir, name, NULL);
  CHECK(g_file_set_contents(path, (const char *)b, (gssize)n + 1, NULL));
  g_free(b);
}

static void
text_score_init(TextScore *t, gboolean learn)
{
  memset(t, 0, sizeof *t);
  t->c.scorer = scorer;
  t->learner = learn ? learner : NULL;
  txl_score_lines_init(t);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  setenv("TXL_NUM_THREADS", "1", 1);
  GError *err = NULL;
  TxlModel *m = txl_model_load(FUZZ_SCORE_DIR "/model.gguf", &err);
  CHECK(m && !err);
  GHashTable *sect = NULL;
  scorer = txl_scorer_load_full(m, FUZZ_SCORE_DIR "/score.snap", nop, NULL,
                                &sect, &err);
  CHECK(scorer && !err);
  real = g_bytes_ref(g_hash_table_lookup(sect, "score-text"));
  g_hash_table_unref(sect);
  TxlLearnOptions o = txl_learn_options_default();
  learner = txl_learner_new(m, &o, &err);
  CHECK(learner && !err);
  txl_model_unref(m);
  /* the real part is accepted by a learning run: the fuzzing starts from
   * a state that is read whole */
  TextScore t;
  text_score_init(&t, TRUE);
  CHECK(txl_score_state_restore(&t, real, &err) && !err);
  CHECK(t.lines.length > 0);
  txl_score_lines_clear(&t);
  const char *dir = getenv("FUZZ_SCORE_STATE_SEEDS");
  if (dir) {
    seed(dir, "real", 0x00, real);
    seed(dir, "real-learning", 0x01, real);
    seed(dir, "xor-none", 0x80, NULL);
    seed(dir, "xor-none-learning", 0x81, NULL);
  }
  return 0;
}

/* The invariants of an accepted state. */
static void
check_state(const TextScore *t)
{
  gint64 prev = 0;
  for (GList *it = t->lines.head; it; it = it->next) {
    const Line *l = it->data;
    CHECK(l->line > prev && l->line <= t->cur_line);
    CHECK(l->acc.s.tokens <= l->pushed && l->text->len <= TEXT_CAP);
    CHECK(!l->ids || (gint64)l->ids->len <= l->pushed + 1);
    CHECK(!l->ids || t->learner);
    prev = l->line;
  }
  for (guint i = 0; i < t->tok_line->len; i++) {
    gint64 line = g_array_index(t->tok_line, gint64, i);
    CHECK(line >= 1 && line <= t->cur_line);
  }
  CHECK(t->tok_base + (gint64)t->tok_line->len ==
        txl_scorer_tokens_seen(scorer));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  gboolean learn = data[0] & 1;
  GBytes *in;
  if (data[0] & 0x80) {
    gsize n;
    const guint8 *r = g_bytes_get_data(real, &n);
    guint8 *x = g_memdup2(r, n);
    for (gsize i = 0; i + 1 < size && i < n; i++)
      x[i] ^= data[i + 1];
    in = g_bytes_new_take(x, n);
  } else {
    in = g_bytes_new(data + 1, size - 1);
  }
  TextScore t;
  text_score_init(&t, learn);
  GError *err = NULL;
  if (txl_score_state_restore(&t, in, &err)) {
    CHECK(err == NULL);
    check_state(&t);
    GBytes *again = txl_score_state_save(&t);
    TextScore t2;
    text_score_init(&t2, learn);
    CHECK(txl_score_state_restore(&t2, again, &err) && !err);
    GBytes *third = txl_score_state_save(&t2);
    CHECK(g_bytes_equal(again, third));
    g_bytes_unref(third);
    g_bytes_unref(again);
    txl_score_lines_clear(&t2);
  } else {
    check_txl_refusal(err, TXL_ERROR_FORMAT, -1);
    CHECK(t.lines.length == 0 && t.tok_line->len == 0);
  }
  txl_score_lines_clear(&t);
  g_bytes_unref(in);
  return 0;
}
