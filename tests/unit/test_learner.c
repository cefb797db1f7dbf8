/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Learning on the stream (lib/train/learner.h): the lines at which new
 * weights take over, determinism, learning that lowers the loss, the
 * steps of a later round, state bytes that continue bit for bit from any
 * line (a round in flight included), hostile state, and a round that goes non-finite; grouping
 * sessions: the text a round learns from (lib/train/transcripts.h), state
 * that continues bit for bit, and state of the other kind refused. */
#include "config.h"
#include "learner.h"
#include "params.h"
#include "stream_state.h"
#include "testutil.h"
#include "transcripts.h"
#include "tu_config.h"

#include <math.h>
#include <string.h>
#include "tu_test.h"

#define N_LINES 400

static TxlModel *
tiny_model(float scale)
{
  TxlConfig c = tu_train_config();
  c.mem_len = 8;
  c.tgt_len = 8;
  g_autoptr(GError) err = NULL;
  TxlParams *p = txl_params_new(&c, NULL, 7, &err);
  g_assert_no_error(err);
  for (gsize i = 0; i < p->n; i++)
    p->data[i] *= scale;
  return txl_model_from_params_owned(p);
}

/* Line i of a little "log": a template with a field, and a rare line. */
static int
line_ids(int i, int32_t *ids)
{
  if (i % 37 == 36) {
    for (int k = 0; k < 6; k++)
      ids[k] = 30 + (i * 7 + k) % 9;
    return 6;
  }
  int n = 0;
  ids[n++] = 1;
  ids[n++] = 2 + i % 3;
  ids[n++] = 10 + (i * 5) % 7;
  ids[n++] = 20;
  ids[n++] = 21;
  ids[n++] = 0; /* the line end */
  return n;
}

static TxlLearnOptions
small_options(void)
{
  TxlLearnOptions o = tu_learn_options(60, 90, 80, 25, 12, 2, 8);
  o.lr = 3e-3f;
  return o;
}

static GBytes *
state_of(TxlLearner *l)
{
  gsize n = txl_learner_state_get_size(l);
  guint8 *b = g_malloc(n);
  g_assert_cmpuint(txl_learner_state_get_data(l, b, n), ==, n);
  return g_bytes_new_take(b, n);
}

/* Runs lines [from, to); records in landed[] the lines after which new
 * weights took over. */
static void
run_lines(TxlLearner *l, int from, int to, GArray *landed)
{
  for (int i = from; i < to; i++) {
    int32_t ids[8];
    int n = line_ids(i, ids);
    g_autoptr(GError) err = NULL;
    TxlModel *m = txl_learner_line(l, ids, n, i % 37 == 36 && i > 60, &err);
    g_assert_no_error(err);
    if (m) {
      g_array_append_val(landed, i);
      txl_model_unref(m);
    }
  }
}

/* A new learner over base with options o, run through lines [0, to). */
static TxlLearner *
learner_after(TxlModel *base, const TxlLearnOptions *o, int to,
              GArray *landed)
{
  g_autoptr(GError) err = NULL;
  TxlLearner *l = txl_learner_new(base, o, &err);
  g_assert_no_error(err);
  run_lines(l, 0, to, landed);
  return l;
}

/* The state of a learner as learner_after leaves it. */
static GBytes *
state_after(TxlModel *base, const TxlLearnOptions *o, int to, GArray *landed)
{
  TxlLearner *l = learner_after(base, o, to, landed);
  GBytes *st = state_of(l);
  txl_learner_free(l);
  return st;
}

/* A new learner over base with options o, its state set to st. */
static TxlLearner *
learner_from(TxlModel *base, const TxlLearnOptions *o, GBytes *st)
{
  g_autoptr(GError) err = NULL;
  TxlLearner *l = txl_learner_new(base, o, &err);
  g_assert_no_error(err);
  gsize n;
  const guint8 *d = g_bytes_get_data(st, &n);
  g_assert_true(txl_learner_state_set_data(l, d, n, &err));
  g_assert_no_error(err);
  return l;
}

/* What each test starts from: the tiny model scaled by `scale`, the small
 * options, an array for the lines at which new weights took over, and
 * the learner under test once the test makes it. */
typedef struct {
  TxlModel *base;
  TxlLearnOptions o;
  GArray *landed;
  TxlLearner *l;
} Fx;

static Fx
fx_new(float scale)
{
  return (Fx){ tiny_model(scale), small_options(),
               g_array_new(FALSE, FALSE, sizeof(int)), NULL };
}

static void
fx_done(Fx *f)
{
  g_array_free(f->landed, TRUE);
  g_clear_pointer(&f->l, txl_learner_free);
  txl_model_unref(f->base);
}

TU_TEST("/learner/rounds-land-at-fixed-lines", test_rounds_land_at_fixed_lines)
{
  Fx f = fx_new(1.0f);
  f.l = learner_after(f.base, &f.o, 0, NULL); /* no line yet */
  g_assert_true(txl_learner_warming_up(f.l));
  run_lines(f.l, 0, N_LINES, f.landed);
  /* the first round lands with line 60 (index 59); later rounds start
   * every 90 lines and land 25 lines later: 150+25, 240+25, 330+25 */
  int want[] = { 59, 174, 264, 354 };
  g_assert_cmpuint(f.landed->len, ==, G_N_ELEMENTS(want));
  for (guint i = 0; i < f.landed->len; i++)
    g_assert_cmpint(g_array_index(f.landed, int, i), ==, want[i]);
  g_assert_false(txl_learner_warming_up(f.l));
  TxlLearnStats st;
  txl_learner_stats(f.l, &st);
  g_assert_cmpint(st.rounds, ==, 4);
  g_assert_cmpint(st.failed, ==, 0);
  g_assert_cmpint(st.lines, ==, N_LINES);
  /* learning a repetitive stream lowers its loss within a round */
  g_assert_cmpfloat(st.loss_last, <, st.loss_first);
  fx_done(&f);
}

/* The first round makes 4 passes over the warm-up's lines; a later one,
 * starting from weights that know the stream, one pass over its window:
 * with windows of equal size, a quarter of the steps. */
TU_TEST("/learner/later-rounds-one-pass", test_later_rounds_one_pass)
{
  Fx f = fx_new(1.0f);
  /* every line is 6 tokens: the warm-up (80 lines) and the second
   * round's window (the 80 unflagged lines before line 180) are equal */
  f.o = tu_learn_options(80, 100, 80, 10, 1000, 2, 8);
  f.l = learner_after(f.base, &f.o, 80, f.landed);
  TxlLearnStats first, both;
  txl_learner_stats(f.l, &first);
  run_lines(f.l, 80, 200, f.landed);
  txl_learner_stats(f.l, &both);
  g_assert_cmpint(both.rounds, ==, 2);
  g_assert_cmpint(first.steps, >=, 40);
  g_assert_cmpint(first.steps, ==, 4 * (both.steps - first.steps));
  fx_done(&f);
}

/* The adapted weights score the stream's lines better than the model
 * they started from. */
TU_TEST("/learner/adapted-model-scores-better", test_adapted_model_scores_better)
{
  Fx f = fx_new(1.0f);
  f.o.max_steps = 60;
  g_autoptr(GError) err = NULL;
  f.l = learner_after(f.base, &f.o, 60, f.landed);
  g_assert_cmpuint(f.landed->len, ==, 1);
  TxlModel *m = txl_learner_model(f.l);
  g_assert_nonnull(m);
  g_assert_cmpstr(txl_model_id(m), ==, txl_model_id(f.base));
  double nll[2];
  TxlModel *models[2] = { f.base, m };
  for (int k = 0; k < 2; k++) {
    TxlStream *s = txl_stream_new(models[k], NULL, &err);
    g_assert_no_error(err);
    int32_t ids[64 * 8];
    int n = 0;
    for (int i = 100; n < 400; i++)
      n += line_ids(i, ids + n);
    float lp[8];
    nll[k] = 0;
    for (int at = 0; at + 1 < n; at += 8) {
      int len = MIN(8, n - 1 - at);
      g_assert_true(txl_stream_forward(s, ids + at, len, ids + at + 1, lp,
                                       &err));
      for (int i = 0; i < len; i++)
        nll[k] -= lp[i];
    }
    txl_stream_free(s);
  }
  g_assert_cmpfloat(nll[1], <, 0.7 * nll[0]);
  txl_model_unref(m);
  fx_done(&f);
}

/* Equal input gives equal state; saved at any line (before the warm-up
 * ends, with a round in flight, between rounds) and restored into a new
 * learner, the run ends in the uninterrupted run's state, byte for byte,
 * having landed at the same lines. */
TU_TEST("/learner/state-continues", test_state_continues)
{
  Fx f = fx_new(1.0f);
  GArray *want = g_array_new(FALSE, FALSE, sizeof(int));
  g_autoptr(GBytes) end = state_after(f.base, &f.o, 280, want);
  int cuts[] = { 1, 30, 59, 60, 100, 160, 170, 174, 175, 200, 279 };
  for (guint c = 0; c < G_N_ELEMENTS(cuts); c++) {
    GArray *got = g_array_new(FALSE, FALSE, sizeof(int));
    g_autoptr(GBytes) mid = state_after(f.base, &f.o, cuts[c], got);
    TxlLearner *r = learner_from(f.base, &f.o, mid);
    run_lines(r, cuts[c], 280, got);
    g_autoptr(GBytes) fin = state_of(r);
    g_assert_true(g_bytes_equal(fin, end));
    g_assert_cmpuint(got->len, ==, want->len);
    for (guint i = 0; i < got->len; i++)
      g_assert_cmpint(g_array_index(got, int, i), ==,
                      g_array_index(want, int, i));
    g_array_free(got, TRUE);
    txl_learner_free(r);
  }
  g_array_free(want, TRUE);
  fx_done(&f);
}

/* A timed warm-up: line i at time times[i] (NaN: none given). */
static void
run_timed(TxlLearner *l, const double *times, int from, int to,
          GArray *landed)
{
  for (int i = from; i < to; i++) {
    if (!isnan(times[i]))
      txl_learner_set_time(l, times[i]);
    int32_t ids[8];
    int n = line_ids(i, ids);
    g_autoptr(GError) err = NULL;
    TxlModel *m = txl_learner_line(l, ids, n, FALSE, &err);
    g_assert_no_error(err);
    if (m) {
      g_array_append_val(landed, i);
      txl_model_unref(m);
    }
  }
}

/* The warm-up ends at the line where warmup_seconds of the stream's time
 * have passed, counting only time going forward between lines that have
 * one; saved at any line and restored, the run lands where the
 * uninterrupted one does and ends in its state; a learner without
 * warmup_seconds still writes version 1, one with it version 4, and
 * neither takes the other's state. */
TU_TEST("/learner/warmup-seconds", test_warmup_seconds)
{
  Fx f = fx_new(1.0f);
  f.o.warmup_seconds = 10.0;
  f.o.every_lines = 0;
  /* 0.5 s a line, a clock started again (back by 4 s) at line 8, lines 12
   * to 14 without a time, a 4 s gap before line 16 */
  double t[80];
  for (int i = 0; i < 80; i++)
    t[i] = 0.5 * i;
  for (int i = 8; i < 80; i++)
    t[i] -= 4.0;
  for (int i = 12; i < 15; i++)
    t[i] = NAN;
  for (int i = 16; i < 80; i++)
    t[i] += 4.0;
  /* forward time after line i: 1..7 add 0.5 each (3.5), 8 adds 0 (back),
   * 9..11 add 0.5 each (5.0), 15 adds t[15] - t[11] = 2.0 (7.0), 16 adds
   * 4.5 (11.5 >= 10): line 16 is the warm-up's last */
  TxlLearner *l = txl_learner_new(f.base, &f.o, NULL);
  run_timed(l, t, 0, 80, f.landed);
  g_assert_cmpuint(f.landed->len, ==, 1);
  g_assert_cmpint(g_array_index(f.landed, int, 0), ==, 16);
  g_autoptr(GBytes) end = state_of(l);
  txl_learner_free(l);
  g_assert_cmpuint(((const guint8 *)g_bytes_get_data(end, NULL))[4], ==, 4);
  /* cuts before, at and after the time that ends it */
  int cuts[] = { 1, 8, 12, 15, 16, 17, 40 };
  for (guint c = 0; c < G_N_ELEMENTS(cuts); c++) {
    GArray *got = g_array_new(FALSE, FALSE, sizeof(int));
    l = txl_learner_new(f.base, &f.o, NULL);
    run_timed(l, t, 0, cuts[c], got);
    g_autoptr(GBytes) mid = state_of(l);
    txl_learner_free(l);
    l = learner_from(f.base, &f.o, mid);
    run_timed(l, t, cuts[c], 80, got);
    g_autoptr(GBytes) fin = state_of(l);
    g_assert_true(g_bytes_equal(fin, end));
    g_assert_cmpuint(got->len, ==, 1);
    g_assert_cmpint(g_array_index(got, int, 0), ==, 16);
    g_array_free(got, TRUE);
    txl_learner_free(l);
  }
  /* restored before line 16 under a clock started again (every time
   * 1,000 s back): line 16 adds nothing, and the 3 s still wanted after
   * the 7 s saved take lines 17 to 22 */
  {
    GArray *got = g_array_new(FALSE, FALSE, sizeof(int));
    l = txl_learner_new(f.base, &f.o, NULL);
    run_timed(l, t, 0, 16, got);
    g_autoptr(GBytes) mid = state_of(l);
    txl_learner_free(l);
    double back[80];
    for (int i = 0; i < 80; i++)
      back[i] = t[i] - 1000.0;
    l = learner_from(f.base, &f.o, mid);
    run_timed(l, back, 16, 80, got);
    g_assert_cmpuint(got->len, ==, 1);
    g_assert_cmpint(g_array_index(got, int, 0), ==, 22);
    g_array_free(got, TRUE);
    txl_learner_free(l);
  }
  /* no times at all: the line count ends it (warmup_lines 60) */
  {
    GArray *got = g_array_new(FALSE, FALSE, sizeof(int));
    double none[80];
    for (int i = 0; i < 80; i++)
      none[i] = NAN;
    l = txl_learner_new(f.base, &f.o, NULL);
    run_timed(l, none, 0, 80, got);
    g_assert_cmpint(g_array_index(got, int, 0), ==, 59);
    g_array_free(got, TRUE);
    txl_learner_free(l);
  }
  /* the state of one kind is refused by the other, naming the options */
  TxlLearnOptions lines_only = f.o;
  lines_only.warmup_seconds = 0;
  g_autoptr(GBytes) plain = state_after(f.base, &lines_only, 10, f.landed);
  g_assert_cmpuint(((const guint8 *)g_bytes_get_data(plain, NULL))[4], ==, 1);
  struct { const TxlLearnOptions *o; GBytes *st; } other[] = {
    { &f.o, plain }, { &lines_only, end },
  };
  for (guint k = 0; k < G_N_ELEMENTS(other); k++) {
    g_autoptr(GError) err = NULL;
    l = txl_learner_new(f.base, other[k].o, NULL);
    gsize n;
    const guint8 *d = g_bytes_get_data(other[k].st, &n);
    g_assert_false(txl_learner_state_set_data(l, d, n, &err));
    g_assert_nonnull(strstr(err->message, "seconds"));
    txl_learner_free(l);
  }
  /* a saved warm-up time out of range (after magic, version, 8 option
   * integers, 3 option floats and warmup_seconds: offset 104) is refused
   * naming it */
  {
    gsize n;
    const guint8 *d = g_bytes_get_data(end, &n);
    const double bad_time[] = { 20.0, -1.0, NAN };
    for (guint k = 0; k < G_N_ELEMENTS(bad_time); k++) {
      g_autoptr(GError) err = NULL;
      guint8 *bad = g_memdup2(d, n);
      guint64 bits;
      memcpy(&bits, &bad_time[k], 8);
      for (int b = 0; b < 8; b++)
        bad[104 + b] = (guint8)(bits >> (8 * b));
      l = txl_learner_new(f.base, &f.o, NULL);
      g_assert_false(txl_learner_state_set_data(l, bad, n, &err));
      g_assert_nonnull(strstr(err->message, "warm-up's time"));
      txl_learner_free(l);
      g_free(bad);
    }
  }
  /* out of range */
  for (guint k = 0; k < 3; k++) {
    g_autoptr(GError) err = NULL;
    TxlLearnOptions o = f.o;
    o.warmup_seconds = k == 0 ? -1.0 : k == 1 ? NAN : 1e12;
    g_assert_null(txl_learner_new(f.base, &o, &err));
    g_assert_nonnull(err);
  }
  fx_done(&f);
}

/* The state d (n bytes) with the vn bytes at `at` replaced by v: refused
 * by l, with a message (returned, to g_free). */
static char *
refused_with(TxlLearner *l, const guint8 *d, gsize n, gsize at,
             const void *v, gsize vn)
{
  guint8 *bad = g_memdup2(d, n);
  memcpy(bad + at, v, vn);
  GError *err = NULL;
  g_assert_false(txl_learner_state_set_data(l, bad, n, &err));
  g_assert_nonnull(err);
  char *msg = g_strdup(err->message);
  g_error_free(err);
  g_free(bad);
  return msg;
}

/* Truncated, corrupted or foreign state is refused and changes nothing. */
TU_TEST("/learner/hostile-state", test_hostile_state)
{
  Fx f = fx_new(1.0f);
  g_autoptr(GError) err = NULL;
  /* adapted weights and a round in flight */
  g_autoptr(GBytes) good = state_after(f.base, &f.o, 170, f.landed);
  gsize n;
  const guint8 *d = g_bytes_get_data(good, &n);
  f.l = learner_after(f.base, &f.o, 10, f.landed);
  g_autoptr(GBytes) before = state_of(f.l);
  /* every truncation (in steps: the weights are most of it) */
  for (gsize cut = 0; cut < n; cut += cut < 400 ? 1 : 997) {
    g_clear_error(&err);
    g_assert_false(txl_learner_state_set_data(f.l, d, cut, &err));
    g_assert_nonnull(err);
  }
  /* a NaN among the weights, a window longer than its ids */
  float nan = NAN;
  g_free(refused_with(f.l, d, n, 200, &nan, 4));
  /* a window id outside the vocabulary (its ids end the state; the next
   * round would train on it: found by fuzz_elements) */
  gint32 out = txl_model_config(f.base)->n_token;
  guint8 le[4] = { (guint8)out, (guint8)(out >> 8), (guint8)(out >> 16),
                   (guint8)(out >> 24) };
  g_free(refused_with(f.l, d, n, n - 4, le, 4));
  /* rounds and failed rounds whose sum overflows an int (it wrapped to
   * below the rounds started: found by fuzz_elements); they lie after the
   * magic, version, 8 option ints, 3 doubles, lines, next round, due (8
   * bytes each), started (4) and lines learnt (8) */
  const guint8 big[8] = { 0, 0, 0xff, 0x7f, 0, 0, 0xff, 0x7f };
  g_free(refused_with(f.l, d, n, 8 + 11 * 8 + 3 * 8 + 4 + 8, big, 8));
  /* a newer version (after the magic): refused by its number */
  const guint8 v99[4] = { 99, 0, 0, 0 };
  g_autofree char *newer = refused_with(f.l, d, n, 4, v99, 4);
  g_assert_true(strstr(newer, "version 99, written by a newer txl"));
  /* other options */
  TxlLearnOptions o2 = f.o;
  o2.window_lines++;
  TxlLearner *c = txl_learner_new(f.base, &o2, &err);
  g_clear_error(&err);
  g_assert_false(txl_learner_state_set_data(c, d, n, &err));
  g_assert_true(strstr(err->message, "options") != NULL);
  txl_learner_free(c);
  g_autoptr(GBytes) after = state_of(f.l);
  g_assert_true(g_bytes_equal(before, after));
  fx_done(&f);
}

/* Weights so large that the forward overflows: the round's loss is not
 * finite, the round is dropped with a message, and the stream keeps its
 * weights (still the model file's: warming up). */
TU_TEST("/learner/nonfinite-round-dropped", test_nonfinite_round_dropped)
{
  Fx f = fx_new(1e18f);
  g_autoptr(GError) err = NULL;
  f.l = learner_after(f.base, &f.o, 0, NULL);
  int failed_at = -1;
  for (int i = 0; i < 100; i++) {
    int32_t ids[8];
    int n = line_ids(i, ids);
    g_clear_error(&err);
    TxlModel *m = txl_learner_line(f.l, ids, n, FALSE, &err);
    g_assert_null(m);
    if (err && failed_at < 0)
      failed_at = i;
  }
  g_assert_cmpint(failed_at, ==, 59);
  TxlLearnStats st;
  txl_learner_stats(f.l, &st);
  g_assert_cmpint(st.failed, ==, 1);
  g_assert_cmpint(st.rounds, ==, 0);
  g_assert_true(txl_learner_warming_up(f.l));
  g_assert_null(txl_learner_model(f.l));
  fx_done(&f);
}

TU_TEST("/learner/bad-options", test_bad_options)
{
  Fx f = fx_new(1.0f);
  f.o.warmup_lines = 0;
  g_autoptr(GError) err = NULL;
  g_assert_null(txl_learner_new(f.base, &f.o, &err));
  g_assert_nonnull(err);
  fx_done(&f);
}

/* ---- grouping sessions ------------------------------------------------ */

static void
assert_text(TxlTranscripts *t, const guint64 *ser, const gint64 *lens,
            gsize n, gsize cap, const int32_t *want, gsize n_want,
            const char *learnt, gint64 want_lines)
{
  gsize got_n = 0;
  gint64 lines = -1;
  g_autofree guint8 *learn = NULL;
  g_autofree int32_t *got = txl_transcripts_text(t, ser, lens, n, cap,
                                                 &got_n, &learn, &lines);
  g_assert_cmpuint(got_n, ==, n_want);
  g_assert_cmpuint(strlen(learnt), ==, n_want);
  if (n_want)
    g_assert_cmpmem(got, got_n * 4, want, n_want * 4);
  for (gsize i = 0; i < n_want; i++)
    g_assert_cmpint(learn[i], ==, learnt[i] == '1');
  g_assert_cmpint(lines, ==, want_lines);
}

/* A round's text, worked out by hand: each session's lines together after
 * the primer (99), in the order of each session's last window line, the
 * most recent first under the token bound; only the tokens of the
 * window's lines are learnt (flag 1), the primer and a session's earlier
 * lines are context; a session that ended and came back is a new one; a
 * flagged line drops its session; over the cap, the transcript touched
 * longest ago goes; a session too long for one transcript starts over. */
TU_TEST("/learner/transcripts-text", test_transcripts_text)
{
  const int32_t primer[] = { 99 };
  TxlTranscripts *t = txl_transcripts_new(primer, 1, 10, 10);
  guint64 w[8];
  /* each window line's tokens */
  const gint64 L[8] = { 2, 1, 1, 1, 1, 6, 1, 0 };
  w[0] = txl_transcripts_line(t, "a", (int32_t[]){ 1, 2 }, 2, FALSE);
  w[1] = txl_transcripts_line(t, "b", (int32_t[]){ 3 }, 1, FALSE);
  w[2] = txl_transcripts_line(t, "a", (int32_t[]){ 4 }, 1, FALSE);
  g_assert_cmpuint(w[0], ==, w[2]);
  g_assert_cmpuint(w[0], !=, w[1]);
  assert_text(t, w, L, 3, 100, (int32_t[]){ 99, 3, 99, 1, 2, 4 }, 6,
              "010111", 3);
  /* the bound keeps the most recent session whole, not a part of b */
  assert_text(t, w, L, 3, 5, (int32_t[]){ 99, 1, 2, 4 }, 4, "0111", 2);
  /* only the sessions the window names, and of them only the window's
   * lines are learnt: a's first line is context */
  assert_text(t, w + 1, L + 1, 1, 100, (int32_t[]){ 99, 3 }, 2, "01", 1);
  assert_text(t, w + 2, L + 2, 1, 100, (int32_t[]){ 99, 1, 2, 4 }, 4,
              "0001", 1);
  txl_transcripts_end(t, "a", FALSE);
  txl_transcripts_end(t, "nobody", TRUE); /* unknown: nothing */
  w[3] = txl_transcripts_line(t, "a", (int32_t[]){ 5 }, 1, FALSE);
  g_assert_cmpuint(w[3], !=, w[0]);
  assert_text(t, w, L, 4, 100, (int32_t[]){ 99, 3, 99, 1, 2, 4, 99, 5 }, 8,
              "01011101", 4);
  /* a flagged line: b is not learnt from, even its earlier lines */
  w[4] = txl_transcripts_line(t, "b", (int32_t[]){ 6 }, 1, TRUE);
  g_assert_cmpuint(w[4], ==, w[1]);
  assert_text(t, w, L, 5, 100, (int32_t[]){ 99, 1, 2, 4, 99, 5 }, 6,
              "011101", 3);
  /* held: {1,2,4} and {5}; c brings 6 (10, the cap), then one more: the
   * first a, touched longest ago, goes */
  w[5] = txl_transcripts_line(t, "c", (int32_t[]){ 7, 8, 9, 10, 11, 12 }, 6,
                              FALSE);
  assert_text(t, w, L, 6, 100,
              (int32_t[]){ 99, 1, 2, 4, 99, 5, 99, 7, 8, 9, 10, 11, 12 }, 13,
              "0111010111111", 4);
  /* the state, read back, goes on the same way (the touch order too) */
  gsize sz = txl_transcripts_state_size(t);
  g_autofree guint8 *buf = g_malloc(sz);
  TxlWriter tw = { buf };
  txl_transcripts_state_write(t, &tw);
  g_assert_cmpuint((gsize)(tw.p - buf), ==, sz);
  GHashTable *refs = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (int i = 0; i < 6; i++) {
    guint c = GPOINTER_TO_UINT(g_hash_table_lookup(refs, &w[i]));
    g_hash_table_insert(refs, &w[i], GUINT_TO_POINTER(c + 1));
  }
  TxlTranscripts *t2 = txl_transcripts_new_like(t);
  TxlReader rd;
  txl_reader_init_data(&rd, buf, sz);
  g_assert_true(txl_transcripts_state_read(t2, &rd, 100, refs));
  g_assert_true(txl_reader_done(&rd));
  /* ids outside a vocabulary of 12 (12 is held) are refused */
  TxlTranscripts *t3 = txl_transcripts_new_like(t);
  txl_reader_init_data(&rd, buf, sz);
  g_assert_false(txl_transcripts_state_read(t3, &rd, 12, refs));
  txl_transcripts_free(t3);
  g_hash_table_destroy(refs);
  w[6] = txl_transcripts_line(t, "c", (int32_t[]){ 13 }, 1, FALSE);
  assert_text(t, w, L, 7, 100,
              (int32_t[]){ 99, 5, 99, 7, 8, 9, 10, 11, 12, 13 }, 10,
              "0101111111", 3);
  g_assert_cmpuint(txl_transcripts_line(t2, "c", (int32_t[]){ 13 }, 1, FALSE),
                   ==, w[6]);
  assert_text(t2, w, L, 7, 100,
              (int32_t[]){ 99, 5, 99, 7, 8, 9, 10, 11, 12, 13 }, 10,
              "0101111111", 3);
  /* a window holding only c's last line learns only that */
  assert_text(t2, w + 6, L + 6, 1, 100,
              (int32_t[]){ 99, 7, 8, 9, 10, 11, 12, 13 }, 8, "00000001", 1);
  for (int i = 0; i < 7; i++)
    txl_transcripts_release(t2, w[i]);
  txl_transcripts_free(t2);
  /* the session flagged as it ends */
  txl_transcripts_end(t, "c", TRUE);
  assert_text(t, w, L, 7, 100, (int32_t[]){ 99, 5 }, 2, "01", 1);
  for (int i = 0; i < 7; i++)
    txl_transcripts_release(t, w[i]);
  txl_transcripts_free(t);
  /* a session longer than one may hold (8 here) starts over from the line
   * that would pass it, and a line longer than that keeps its first 8; the
   * window's older lines of it are gone, so what is learnt is what it
   * holds */
  t = txl_transcripts_new(primer, 1, 100, 8);
  guint64 f[3];
  const gint64 F[3] = { 5, 3, 1 };
  f[0] = txl_transcripts_line(t, "", (int32_t[]){ 1, 2, 3, 4, 5 }, 5, FALSE);
  f[1] = txl_transcripts_line(t, "", (int32_t[]){ 6, 7, 8 }, 3, FALSE);
  assert_text(t, f, F, 2, 100, (int32_t[]){ 99, 1, 2, 3, 4, 5, 6, 7, 8 }, 9,
              "011111111", 2);
  f[2] = txl_transcripts_line(t, "", (int32_t[]){ 9 }, 1, FALSE);
  assert_text(t, f, F, 3, 100, (int32_t[]){ 99, 9 }, 2, "01", 1);
  txl_transcripts_release(t, txl_transcripts_line(t, "", (int32_t[]){
      10, 11, 12, 13, 14, 15, 16, 17, 18 }, 9, FALSE));
  assert_text(t, f, F, 3, 100,
              (int32_t[]){ 99, 10, 11, 12, 13, 14, 15, 16, 17 }, 9,
              "011111111", 1);
  for (int i = 0; i < 3; i++)
    txl_transcripts_release(t, f[i]);
  txl_transcripts_free(t);
}

/* Line i of an interleaved log: four sessions open at a time, six lines
 * each (lines of block i / 24, the session i % 4 of it); a session ends
 * after its last line, flagged when its block is 3 mod 5. */
static void
run_session_lines(TxlLearner *l, int from, int to, GArray *landed)
{
  for (int i = from; i < to; i++) {
    int32_t ids[8];
    int n = line_ids(i, ids);
    char key[32];
    g_snprintf(key, sizeof key, "s%d.%d", i / 24, i % 4);
    g_autoptr(GError) err = NULL;
    TxlModel *m = txl_learner_session_line(l, key, ids, n,
                                           i % 37 == 36 && i > 60, &err);
    g_assert_no_error(err);
    if (m) {
      g_array_append_val(landed, i);
      txl_model_unref(m);
    }
    if (i % 24 >= 20)
      txl_learner_session_end(l, key, (i / 24) % 5 == 3);
  }
}

static TxlLearner *
session_learner(Fx *f)
{
  g_autoptr(GError) err = NULL;
  TxlLearner *l = txl_learner_new(f->base, &f->o, &err);
  g_assert_no_error(err);
  g_assert_true(txl_learner_group_sessions(l, (int32_t[]){ 0 }, 1, &err));
  return l;
}

static GBytes *
session_state_after(Fx *f, int to, GArray *landed)
{
  TxlLearner *l = session_learner(f);
  run_session_lines(l, 0, to, landed);
  GBytes *st = state_of(l);
  txl_learner_free(l);
  return st;
}

/* As state-continues, grouping sessions: saved at any line and restored,
 * the run ends in the uninterrupted run's state byte for byte, landing at
 * the same lines; a learner of the other kind refuses the bytes, naming
 * it; so do truncations. */
TU_TEST("/learner/sessions-state-continues", test_sessions_state_continues)
{
  Fx f = fx_new(1.0f);
  GArray *want = g_array_new(FALSE, FALSE, sizeof(int));
  g_autoptr(GBytes) end = session_state_after(&f, 280, want);
  int want_landed[] = { 59, 174, 264 };
  g_assert_cmpuint(want->len, ==, G_N_ELEMENTS(want_landed));
  for (guint i = 0; i < want->len; i++)
    g_assert_cmpint(g_array_index(want, int, i), ==, want_landed[i]);
  int cuts[] = { 1, 30, 59, 60, 100, 170, 175, 279 };
  for (guint c = 0; c < G_N_ELEMENTS(cuts); c++) {
    GArray *got = g_array_new(FALSE, FALSE, sizeof(int));
    g_autoptr(GBytes) mid = session_state_after(&f, cuts[c], got);
    TxlLearner *r = session_learner(&f);
    gsize n;
    const guint8 *d = g_bytes_get_data(mid, &n);
    g_autoptr(GError) err = NULL;
    g_assert_true(txl_learner_state_set_data(r, d, n, &err));
    run_session_lines(r, cuts[c], 280, got);
    g_autoptr(GBytes) fin = state_of(r);
    g_assert_true(g_bytes_equal(fin, end));
    g_assert_cmpuint(got->len, ==, want->len);
    g_array_free(got, TRUE);
    txl_learner_free(r);
  }
  /* learning whole sessions is not learning lines as they come */
  g_autoptr(GBytes) flat = state_after(f.base, &f.o, 280, f.landed);
  gsize nf, ns;
  const guint8 *df = g_bytes_get_data(flat, &nf);
  const guint8 *ds = g_bytes_get_data(end, &ns);
  g_autoptr(GError) err = NULL;
  f.l = session_learner(&f);
  g_assert_false(txl_learner_state_set_data(f.l, df, nf, &err));
  g_assert_nonnull(strstr(err->message, "groups sessions"));
  g_clear_error(&err);
  TxlLearner *plain = learner_after(f.base, &f.o, 0, NULL);
  g_assert_false(txl_learner_state_set_data(plain, ds, ns, &err));
  g_assert_nonnull(strstr(err->message, "groups sessions"));
  txl_learner_free(plain);
  /* a state of version 2 (the learner that learnt every token of its
   * sessions again) is refused, naming the version, and changes nothing */
  g_autoptr(GBytes) kept = state_of(f.l);
  g_autofree guint8 *v2 = g_memdup2(ds, ns);
  g_assert_cmpuint(v2[4], ==, 3);
  v2[4] = 2;
  g_clear_error(&err);
  g_assert_false(txl_learner_state_set_data(f.l, v2, ns, &err));
  g_assert_nonnull(strstr(err->message, "version 2"));
  g_autoptr(GBytes) still = state_of(f.l);
  g_assert_true(g_bytes_equal(kept, still));
  /* the weights differ from learning the same lines interleaved: the
   * adapted weights are the end of both states' fixed part */
  g_assert_false(g_bytes_equal(flat, end));
  g_autoptr(GBytes) before = state_of(f.l);
  for (gsize cut = 0; cut < ns; cut += cut < 400 || cut > ns - 3000 ? 1 : 997) {
    g_clear_error(&err);
    g_assert_false(txl_learner_state_set_data(f.l, ds, cut, &err));
    g_assert_nonnull(err);
  }
  g_autoptr(GBytes) after = state_of(f.l);
  g_assert_true(g_bytes_equal(before, after));
  g_array_free(want, TRUE);
  fx_done(&f);
}

TU_MAIN()
