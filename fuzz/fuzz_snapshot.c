/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: txl_scorer_load, txl_sessions_load and
 * txl_snapshot_describe on arbitrary bytes.  The model is a small fixed one (fuzz/corpus-snapshot/model.gguf is
 * written by fuzz/make_snapshot_seeds.sh); the input is written to a file
 * because the loader reads files.  A loaded scorer or set of sessions must
 * go on scoring (sessions seeds: fuzz/make_snapshot_seeds.sh, with the
 * options below).  Seeds forged by fuzz/make_budget_seeds.py reach the
 * resource budget and the refusal of non-finite memory. */
#include "sessions_seed.h"
#include "txl.h"

#include <glib/gstdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

static TxlModel *model;
static char *path;

static void
nop(gint64 pos, int32_t token, float lp, gpointer data)
{
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  g_setenv("TXL_NUM_THREADS", "1", TRUE);
  /* a small budget: inputs that fit it still stay far below -rss_limit_mb,
   * and the budget checks (corpus-snapshot/budget-*.snap) are reached */
  g_setenv("TXL_MEMORY_LIMIT", "64M", TRUE);
  GError *err = NULL;
  model = txl_model_load(FUZZ_SNAPSHOT_MODEL, &err);
  if (!model) {
    fprintf(stderr, "fuzz_snapshot: %s\n", err->message);
    abort();
  }
  path = g_strdup_printf("/dev/shm/fuzz-snapshot-%d.snap", (int)getpid());
  return 0;
}

static void one(const uint8_t *data, size_t size);

/* Most mutations break the checksum, which the loader checks first; with
 * the trailing SHA-256 recomputed, the same input also reaches the checks
 * of every field behind it. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  one(data, size);
  if (size > 32) {
    uint8_t *fixed = g_memdup2(data, size);
    GChecksum *cs = g_checksum_new(G_CHECKSUM_SHA256);
    g_checksum_update(cs, fixed, size - 32);
    gsize n = 32;
    g_checksum_get_digest(cs, fixed + size - 32, &n);
    g_checksum_free(cs);
    one(fixed, size);
    g_free(fixed);
  }
  return 0;
}

static void
one(const uint8_t *data, size_t size)
{
  if (!g_file_set_contents(path, (const char *)data, (gssize)size, NULL))
    return;
  GError *err = NULL;
  GString *info = g_string_new(NULL);
  gboolean described = txl_snapshot_describe(path, info, &err);
  g_clear_error(&err);
  g_string_free(info, TRUE);
  TxlScorer *s = txl_scorer_load(model, path, nop, NULL, &err);
  if (s) {
    if (!described)
      abort(); /* loadable but not describable: the two checks disagree */
    int32_t ids[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    txl_scorer_push(s, ids, 9, NULL);
    txl_scorer_finish(s, NULL);
    txl_scorer_free(s);
  } else if (!err) {
    abort(); /* refused without saying why */
  }
  g_clear_error(&err);
  /* the same bytes as a sessions snapshot (most are refused as the other
   * kind; the seeds of that kind reach the sessions section) */
  /* rescore: kept ids are read, and scored again below */
  TxlSessionOptions o = sessions_seed_options(TRUE);
  TxlSessions *ss = txl_sessions_load(model, path, &o, NULL, NULL, NULL, NULL,
                                      &err);
  if (ss) {
    if (!described)
      abort();
    const char *lines[] = { "a k1", "b k2 x", "k1 again", "k4", "k5 end" };
    for (unsigned i = 0; i < G_N_ELEMENTS(lines); i++) {
      txl_sessions_push_line(ss, lines[i], -1, NULL);
      if (i == 1) /* the sessions open now end scored again */
        txl_sessions_set_model(ss, model, NULL);
    }
    txl_sessions_finish(ss, NULL);
    txl_sessions_free(ss);
  } else if (!err) {
    abort();
  }
  g_clear_error(&err);
  g_unlink(path);
}
