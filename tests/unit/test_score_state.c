/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tools/cli/score_state.c, compiled in: `txl score`'s part of a text
 * snapshot, on the part of tests/data/learn-2026-11-28/score.snap (written
 * by an older build, learning).  It is read whole by a learning run and
 * saved again to the same bytes; a run that does not learn refuses it
 * (its lines carry ids); version 1 and a newer version are refused by
 * their number; a refusal leaves the state as it was. */
#include "score_text.h"
#include "txl_formats.h"

#include <string.h>
#include "tu_test.h"

#define DIR TXL_SOURCE_ROOT "/tests/data/learn-2026-11-28"

static void
nop(gint64 pos, int32_t token, float lp, gpointer data)
{
  (void)pos, (void)token, (void)lp, (void)data;
}

typedef struct {
  TxlModel *m;
  TxlScorer *sc;
  TxlLearner *learner;
  GBytes *part;
} Fx;

static Fx
fx_new(void)
{
  Fx f = { 0 };
  g_autoptr(GError) err = NULL;
  f.m = txl_model_load(DIR "/model.gguf", &err);
  g_assert_no_error(err);
  GHashTable *sect = NULL;
  f.sc = txl_scorer_load_full(f.m, DIR "/score.snap", nop, NULL, &sect, &err);
  g_assert_no_error(err);
  f.part = g_bytes_ref(g_hash_table_lookup(sect, "score-text"));
  g_hash_table_unref(sect);
  TxlLearnOptions o = txl_learn_options_default();
  f.learner = txl_learner_new(f.m, &o, &err);
  g_assert_no_error(err);
  return f;
}

static void
fx_free(Fx *f)
{
  g_bytes_unref(f->part);
  txl_learner_free(f->learner);
  txl_scorer_free(f->sc);
  txl_model_unref(f->m);
}

static void
text_init(TextScore *t, Fx *f, gboolean learn)
{
  memset(t, 0, sizeof *t);
  t->c.scorer = f->sc;
  t->learner = learn ? f->learner : NULL;
  txl_score_lines_init(t);
}

/* The part with its version set to v: refused, and the message holds
 * want; the state stays empty. */
static void
refused_at_version(Fx *f, guint32 v, const char *want)
{
  gsize n;
  const guint8 *src = g_bytes_get_data(f->part, &n); /* n set first */
  guint8 *d = g_memdup2(src, n);
  txl_le_put32(d, v);
  g_autoptr(GBytes) b = g_bytes_new_take(d, n);
  TextScore t;
  text_init(&t, f, TRUE);
  g_autoptr(GError) err = NULL;
  g_assert_false(txl_score_state_restore(&t, b, &err));
  g_assert_nonnull(err);
  if (!strstr(err->message, want))
    g_error("version %u: %s", v, err->message);
  g_assert_cmpuint(t.lines.length, ==, 0);
  txl_score_lines_clear(&t);
}

TU_TEST("/score-state/older-part", test_older_part)
{
  Fx f = fx_new();
  TextScore t;
  text_init(&t, &f, TRUE);
  g_autoptr(GError) err = NULL;
  g_assert_true(txl_score_state_restore(&t, f.part, &err));
  g_assert_no_error(err);
  g_assert_cmpuint(t.lines.length, >, 0);
  g_autoptr(GBytes) again = txl_score_state_save(&t);
  g_assert_true(g_bytes_equal(again, f.part));
  txl_score_lines_clear(&t);
  /* lines with ids are for a run that learns */
  text_init(&t, &f, FALSE);
  g_assert_false(txl_score_state_restore(&t, f.part, &err));
  g_assert_nonnull(err);
  g_clear_error(&err);
  txl_score_lines_clear(&t);
  refused_at_version(&f, 1, "version 1, written by a txl that scored lines "
                     "per raw byte");
  refused_at_version(&f, 99, "version 99, written by a newer txl");
  fx_free(&f);
}

TU_MAIN()
