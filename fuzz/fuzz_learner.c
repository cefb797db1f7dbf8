/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the learner's state bytes (lib/train/learner.h), which
 * snapshots of learning streams carry.  The first byte picks raw input or a
 * real state (adapted weights, a round not landed, a window) with the input
 * XORed over it, the second bit a learner grouping sessions (its window
 * names transcripts), the third a warm-up in seconds (lines given times
 * that sometimes go back); an accepted state must then work: more lines go
 * through the restored learner, which lands its rounds. */
#include "config.h"
#include "learner.h"
#include "params.h"
#include "../tests/tu_config.h"
#include "fuzz_check.h"

#include <stdint.h>
#include <stdlib.h>

static TxlModel *base;
/* by kind: lines as they come, grouping sessions; the same timed */
static GBytes *real[4];

static TxlLearnOptions
options(gboolean timed)
{
  TxlLearnOptions o = tu_learn_options(6, 5, 8, 2, 2, 2, 4);
  o.warmup_seconds = timed ? 2.0 : 0.0;
  return o;
}

/* grouping: three sessions at a time, each ending after four lines */
static void
lines(TxlLearner *l, gboolean grouping, int from, int to)
{
  for (int i = from; i < to; i++) {
    txl_learner_set_time(l, 0.7 * (i % 5));
    int32_t ids[5] = { 1, 2 + i % 3, 5, 6 + i % 4, 0 };
    GError *err = NULL;
    char key[16];
    g_snprintf(key, sizeof key, "k%d", i / 12 * 3 + i % 3);
    TxlModel *m = grouping
        ? txl_learner_session_line(l, key, ids, 5, i % 7 == 6, &err)
        : txl_learner_line(l, ids, 5, i % 7 == 6, &err);
    if (grouping && i % 12 >= 9)
      txl_learner_session_end(l, key, i % 5 == 0);
    txl_model_unref(m);
    g_clear_error(&err);
  }
}

static TxlLearner *
learner(gboolean grouping, gboolean timed)
{
  TxlLearnOptions o = options(timed);
  TxlLearner *l = txl_learner_new(base, &o, NULL);
  if (!l || (grouping &&
             !txl_learner_group_sessions(l, (int32_t[]){ 0, 11 }, 2, NULL)))
    abort();
  return l;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  TxlConfig c = tu_plain_config((TuDims){
      .n_token = 12, .d_model = 8, .n_head = 2, .d_head = 4,
      .d_inner = 16, .n_layer = 1, .mem_len = 4, .tgt_len = 4 });
  TxlParams *p = txl_params_new(&c, NULL, 3, NULL);
  if (!p)
    abort();
  base = txl_model_from_params_owned(p);
  for (int k = 0; k < 4; k++) {
    gboolean g = k & 1;
    TxlLearner *l = learner(g, k >> 1);
    lines(l, g, 0, 13); /* a round landed, the next one started */
    gsize n = txl_learner_state_get_size(l);
    guint8 *b = g_malloc(n);
    txl_learner_state_get_data(l, b, n);
    real[k] = g_bytes_new_take(b, n);
    txl_learner_free(l);
  }
  return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  guint8 *state;
  gsize n;
  gboolean grouping = (data[0] & 2) != 0, timed = (data[0] & 4) != 0;
  if (data[0] & 1) {
    const guint8 *r = g_bytes_get_data(real[grouping + 2 * timed], &n);
    state = g_memdup2(r, n);
    for (size_t i = 1; i < size; i++)
      state[(i * 131) % n] ^= data[i];
  } else {
    n = size - 1;
    state = g_memdup2(data + 1, n);
  }
  TxlLearner *l = learner(grouping, timed);
  GError *err = NULL;
  if (txl_learner_state_set_data(l, state, n, &err)) {
    lines(l, grouping, 0, 12);
    gsize k = txl_learner_state_get_size(l);
    guint8 *again = g_malloc(k);
    if (txl_learner_state_get_data(l, again, k) != k)
      abort();
    g_free(again);
  } else {
    CHECK_REFUSED(err);
  }
  txl_learner_free(l);
  g_free(state);
  return 0;
}
