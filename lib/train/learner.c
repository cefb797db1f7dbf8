/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Learning on the stream (learner.h): rounds of fine-tuning on the
 * stream's own recent lines, each on a thread of its own, whose weights
 * take over at a fixed line. */
#include "learner.h"

#include "batcher.h"
#include "bytes.h"
#include "finite.h"
#include "freeeach.h"
#include "model_internal.h"
#include "optim.h"
#include "train.h"
#include "transcripts.h"

#include <math.h>
#include <string.h>

/* Tokens a round may learn from at most: bounds the window's memory
 * (4 MiB of ids) whatever the lines' lengths. */
#define WINDOW_TOKEN_CAP (1 << 20)
/* Tokens the sessions' transcripts hold at most when grouping sessions
 * (16 MiB of ids): what is kept of open sessions and of those the window
 * still names. */
#define TRANSCRIPT_TOKEN_CAP (1 << 22)
/* Global gradient-norm clip, as txl train's default. */
#define CLIP_NORM 0.25

TxlLearnOptions
txl_learn_options_default(void)
{
  return (TxlLearnOptions){
    .warmup_lines = 1000, .every_lines = 5000, .window_lines = 2000,
    .lag_lines = 100, .max_steps = 300, .passes = 4.0, .batch = 8,
    .segment = 64, .lr = 3e-4f, .dropout = 0.1f, .seed = 1,
  };
}

typedef struct {
  int32_t *tok;     /* the round's lines, concatenated */
  guint8 *learn;    /* grouping sessions: a flag per token, 0 for context
                     * (transcripts.h); NULL: every token is learnt */
  gsize n;
  gint64 lines;
  int index;        /* rounds started before this one */
  TxlParams *p;     /* starts as the weights in use; trained in place */
  TxlLearnOptions o;
  GError *error;
  double loss_first, loss_last, seconds;
  gint64 steps;
} Round;

struct _TxlLearner {
  TxlLearnOptions o;
  TxlModel *base;
  TxlModel *current;   /* adapted weights in use; NULL while warming up */
  TxlParams *current_p; /* owned by current */
  GArray *tok;         /* window: usable lines' ids, oldest first */
  GArray *len;         /* tokens of each window line */
  /* grouping sessions (txl_learner_group_sessions): the window is each
   * line's transcript and length instead (guint64 serials; tok stays
   * empty, the ids are the transcripts') */
  TxlTranscripts *tr;
  GArray *ser;
  gint64 lines;
  /* warmup_seconds: the stream's time warmed up so far, the time of the
   * line before and of the next line (NaN: none) */
  double warm_time, prev_t, next_t;
  gint64 next_round;   /* line count that starts the next round */
  gint64 due;          /* line count at which the running round lands */
  int started;
  GThread *thread;
  Round *round;
  TxlLearnStats st;
};

TxlLearner *
txl_learner_new(TxlModel *base, const TxlLearnOptions *opts, GError **error)
{
  TxlLearnOptions o = opts ? *opts : txl_learn_options_default();
  if (o.warmup_lines < 1 || o.every_lines < 0 || o.window_lines < 1 ||
      o.lag_lines < 0 || o.max_steps < 1 || !(o.passes > 0) ||
      o.batch < 1 || o.batch > 256 || o.segment < 2 || o.segment > 4096 ||
      !(o.lr > 0 && o.lr < 1) || !(o.dropout >= 0 && o.dropout < 1) ||
      !(o.warmup_seconds >= 0 && o.warmup_seconds <= TXL_LEARN_MAX_SECONDS)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "learning options out of range (warm-up and window at least "
                "one line, warm-up 0..%g seconds, 1..256 streams, segment "
                "2..4096, 0 < lr < 1, 0 <= dropout < 1)",
                TXL_LEARN_MAX_SECONDS);
    return NULL;
  }
  if (!txl_params_config_supported(txl_model_config(base), error))
    return NULL;
  TxlLearner *l = g_new0(TxlLearner, 1);
  l->prev_t = l->next_t = NAN;
  l->o = o;
  l->base = txl_model_ref(base);
  l->tok = g_array_new(FALSE, FALSE, sizeof(int32_t));
  l->len = g_array_new(FALSE, FALSE, sizeof(gint64));
  l->next_round = o.warmup_lines;
  return l;
}

static void
round_free(Round *r)
{
  if (!r)
    return;
  txl_free_each(g_free, r->tok, r->learn);
  if (r->p)
    txl_params_free(r->p);
  g_clear_error(&r->error);
  g_free(r);
}

/* Waits for the round in flight, if it still runs (its result stays until
 * its line). */
static void
round_wait(TxlLearner *l)
{
  if (l->thread)
    g_thread_join(l->thread);
  l->thread = NULL;
}

void
txl_learner_free(TxlLearner *l)
{
  if (!l)
    return;
  round_wait(l);
  round_free(l->round);
  txl_free_each(txl_model_unref, l->current, l->base);
  txl_free_each(g_array_unref, l->tok, l->len);
  if (l->ser)
    g_array_unref(l->ser);
  txl_transcripts_free(l->tr);
  g_free(l);
}

/* ---- a round, on its own thread ----------------------------------------- */

static gboolean
round_train(Round *r, TxlTrainState *s, TxlBatcher *b, int B, int T)
{
  const TxlLearnOptions *o = &r->o;
  TxlParams *p = r->p;
  gint64 per_pass = txl_batcher_batches_per_epoch(b);
  /* the first round teaches the stream from scratch; a later one starts
   * from weights that know it and only takes in what is new: one pass
   * (on the HDFS slice 0.58 of the time for 30,000 lines; detection held
   * on the splits that judged it, and over all six HDFS splits moved
   * little, one worse: docs/notes/2026-11-28-later-rounds.md) */
  double passes = r->index == 0 ? o->passes : 1.0;
  gint64 steps = (gint64)ceil(passes * (double)per_pass);
  steps = CLAMP(steps, 1, o->max_steps);
  gint64 warm = MAX(1, steps / 10);
  /* steps averaged for each loss: a pass, or a quarter of a short round */
  gint64 tail = MAX(1, MIN(per_pass, steps / 4));
  g_autofree int32_t *in = g_new(int32_t, (gsize)B * T);
  g_autofree int32_t *tg = g_new(int32_t, (gsize)B * T);
  g_autofree float *m = g_new0(float, p->n);
  g_autofree float *v = g_new0(float, p->n);
  TxlAdamW opt = { o->lr, 0.9f, 0.999f, 1e-8f, 0.0f };
  double first = 0, last = 0;
  for (gint64 t = 1; t <= steps; t++) {
    if (txl_batcher_next(b, in, tg))
      txl_train_state_reset(s);
    txl_params_zero_grad(p);
    double loss = txl_train_step(s, in, tg);
    /* reported per learnt token (context tokens add no loss) */
    gsize learnt = 0;
    for (gsize i = 0; i < (gsize)B * T; i++)
      learnt += tg[i] >= 0;
    loss = learnt ? loss * ((double)B * T / (double)learnt) : 0.0;
    if (!isfinite(loss)) {
      g_set_error(&r->error, TXL_ERROR, TXL_ERROR_INVALID,
                  "learning round %d: the loss became non-finite at step %"
                  G_GINT64_FORMAT, r->index + 1, t);
      return FALSE;
    }
    if (t <= tail)
      first += loss;
    if (t > steps - tail)
      last += loss;
    txl_clip_grad_norm(p->grad, p->n, CLIP_NORM);
    opt.lr = txl_lr_at(t, warm, steps, o->lr, o->lr / 10);
    txl_adamw_step(&opt, t, p->data, p->grad, m, v, p->n, NULL);
  }
  r->steps = steps;
  r->loss_first = first / tail;
  r->loss_last = last / tail;
  gint64 bad = txl_first_nonfinite(p->data, p->n);
  if (bad >= 0) {
    g_set_error(&r->error, TXL_ERROR, TXL_ERROR_INVALID,
                "learning round %d: weight %" G_GINT64_FORMAT " became "
                "non-finite", r->index + 1, bad);
    return FALSE;
  }
  return TRUE;
}

static gpointer
round_run(gpointer data)
{
  Round *r = data;
  gint64 t0 = g_get_monotonic_time();
  int T = r->o.segment, B = r->o.batch;
  /* a short window still learns: fewer streams, then shorter segments */
  B = (int)MIN((gsize)B, MAX((gsize)1, r->n / (gsize)(T + 1)));
  if (r->n < (gsize)B * (T + 1))
    T = (int)MAX((gsize)1, r->n / (gsize)B - 1);
  TxlTrainOptions to = TXL_TRAIN_OPTIONS_DEFAULT;
  to.batch = B;
  to.seg_len = T;
  to.dropout = r->o.dropout;
  to.seed = r->o.seed + (guint64)r->index;
  TxlBatcher *b = NULL;
  TxlTrainState *s = NULL;
  if (r->n < 2) {
    g_set_error(&r->error, TXL_ERROR, TXL_ERROR_INVALID,
                "learning round %d: its %" G_GINT64_FORMAT " lines hold "
                "fewer than 2 tokens", r->index + 1, r->lines);
  } else if ((b = txl_batcher_new(r->tok, r->n, B, T, &r->error)) &&
             (s = txl_train_state_new(r->p, &to, &r->error))) {
    txl_batcher_set_learn(b, r->learn);
    round_train(r, s, b, B, T);
  }
  txl_train_state_free(s);
  txl_batcher_free(b);
  r->seconds = (g_get_monotonic_time() - t0) / 1e6;
  return NULL;
}

/* ---- the stream's side ------------------------------------------------ */

gboolean
txl_learner_group_sessions(TxlLearner *l, const int32_t *primer, gsize n,
                           GError **error)
{
  if (l->lines > 0 || l->tr || n > 64) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "a learner groups sessions from its first line on, "
                        "with a primer of at most 64 tokens");
    return FALSE;
  }
  /* one session at most what a round learns from, primer included */
  l->tr = txl_transcripts_new(primer, n, TRANSCRIPT_TOKEN_CAP,
                              WINDOW_TOKEN_CAP - n);
  l->ser = g_array_new(FALSE, FALSE, sizeof(guint64));
  return TRUE;
}

/* A usable line into the window: its ids, or (grouping sessions) its
 * transcript's serial, whose reference the window then holds. */
static void
window_add(TxlLearner *l, const int32_t *ids, gsize n, guint64 serial)
{
  n = MIN(n, (gsize)WINDOW_TOKEN_CAP);
  if (l->tr)
    g_array_append_val(l->ser, serial);
  else
    g_array_append_vals(l->tok, ids, (guint)n);
  gint64 len = (gint64)n;
  g_array_append_val(l->len, len);
  /* the first round learns from every warm-up line */
  guint keep = (guint)MAX(l->o.window_lines,
                          l->started ? 0 : l->o.warmup_lines);
  guint drop_lines = 0;
  gsize drop_tok = 0, total = l->tok->len;
  while (l->len->len - drop_lines > keep ||
         total - drop_tok > WINDOW_TOKEN_CAP) {
    if (l->tr)
      txl_transcripts_release(l->tr,
                              g_array_index(l->ser, guint64, drop_lines));
    else
      drop_tok += (gsize)g_array_index(l->len, gint64, drop_lines);
    drop_lines++;
  }
  g_array_remove_range(l->len, 0, drop_lines);
  if (l->tr)
    g_array_remove_range(l->ser, 0, drop_lines);
  g_array_remove_range(l->tok, 0, (guint)drop_tok);
}

static gboolean
round_start(TxlLearner *l, GError **error)
{
  TxlParams *p = l->current_p ? txl_params_copy(l->current_p, error)
                              : txl_params_from_model(l->base, error);
  if (!p)
    return FALSE;
  Round *r = g_new0(Round, 1);
  r->p = p;
  r->o = l->o;
  r->index = l->started++;
  if (l->tr) {
    r->tok = txl_transcripts_text(l->tr, (const guint64 *)l->ser->data,
                                  (const gint64 *)l->len->data, l->ser->len,
                                  WINDOW_TOKEN_CAP, &r->n, &r->learn,
                                  &r->lines);
  } else {
    r->n = l->tok->len;
    r->tok = g_memdup2(l->tok->data, sizeof(int32_t) * r->n);
    r->lines = l->len->len;
  }
  l->round = r;
  /* the first round lands at once: the warm-up ends with it */
  l->due = l->lines + (r->index ? l->o.lag_lines : 0);
  l->st.running = TRUE;
  l->thread = g_thread_new("txl-learn", round_run, r);
  return TRUE;
}

/* The adapted weights as a model: a view that owns them, under the base
 * model's identity, so that a snapshot names the model it continues
 * (the weights themselves travel in the learner's state). */
static TxlModel *
adapted_model(TxlLearner *l, TxlParams *p)
{
  TxlModel *m = txl_model_from_params_owned(p);
  m->id = g_strdup(txl_model_id(l->base));
  m->vocab_id = g_strdup(txl_model_vocab_id(l->base));
  return m;
}

/* Takes the finished round's weights, or its error. */
static TxlModel *
round_land(TxlLearner *l, GError **error)
{
  round_wait(l);
  Round *r = g_steal_pointer(&l->round);
  l->st.running = FALSE;
  l->st.steps += r->steps;
  l->st.seconds = r->seconds;
  TxlModel *m = NULL;
  if (r->error) {
    l->st.failed++;
    g_propagate_error(error, g_steal_pointer(&r->error));
  } else {
    l->st.rounds++;
    l->st.lines_learnt += r->lines;
    l->st.loss_first = r->loss_first;
    l->st.loss_last = r->loss_last;
    l->current_p = g_steal_pointer(&r->p);
    m = adapted_model(l, l->current_p);
    txl_model_unref(l->current);
    l->current = txl_model_ref(m);
  }
  round_free(r);
  return m;
}

void
txl_learner_set_time(TxlLearner *l, double t)
{
  if (isfinite(t))
    l->next_t = t;
}

/* warmup_seconds: a line is about to be added at the time set for it; the
 * warm-up ends with it once the time between lines adds up to
 * warmup_seconds. */
static void
warmup_clock(TxlLearner *l)
{
  const double t = l->next_t;
  if (isnan(t) || l->started || !(l->o.warmup_seconds > 0))
    return;
  l->next_t = NAN;
  if (t > l->prev_t) /* false while prev_t is NaN; at most what ends it */
    l->warm_time = MIN(l->warm_time + (t - l->prev_t), l->o.warmup_seconds);
  l->prev_t = t;
  if (l->warm_time >= l->o.warmup_seconds)
    l->next_round = MIN(l->next_round, l->lines + 1);
}

/* A line has been added (or left out): rounds start and land. */
static TxlModel *
line_done(TxlLearner *l, GError **error)
{
  if (l->round && l->lines >= l->due)
    return round_land(l, error);
  if (!l->round && l->lines >= l->next_round &&
      (l->started == 0 || l->o.every_lines > 0)) {
    l->next_round = l->lines + MAX(l->o.every_lines, 1);
    if (!round_start(l, error))
      return NULL;
    if (l->lines >= l->due) /* lag 0: the round lands at once */
      return round_land(l, error);
  }
  return NULL;
}

TxlModel *
txl_learner_line(TxlLearner *l, const int32_t *ids, gsize n,
                 gboolean flagged, GError **error)
{
  g_return_val_if_fail(!l->tr, NULL);
  warmup_clock(l);
  l->lines++;
  l->st.lines = l->lines;
  /* warm-up lines are all learnt from: nothing can be flagged yet */
  if (!flagged || !l->current)
    window_add(l, ids, n, 0);
  return line_done(l, error);
}

TxlModel *
txl_learner_session_line(TxlLearner *l, const char *key, const int32_t *ids,
                         gsize n, gboolean flagged, GError **error)
{
  g_return_val_if_fail(l->tr, NULL);
  warmup_clock(l);
  l->lines++;
  l->st.lines = l->lines;
  flagged = flagged && l->current;
  guint64 serial = txl_transcripts_line(l->tr, key, ids, n, flagged);
  if (flagged)
    txl_transcripts_release(l->tr, serial);
  else
    window_add(l, NULL, n, serial);
  return line_done(l, error);
}

void
txl_learner_session_end(TxlLearner *l, const char *key, gboolean flagged)
{
  g_return_if_fail(l->tr);
  txl_transcripts_end(l->tr, key, flagged && l->current);
}

const TxlLearnOptions *
txl_learner_options(const TxlLearner *l)
{
  return &l->o;
}

gboolean
txl_learner_warming_up(const TxlLearner *l)
{
  return l->current == NULL;
}

void
txl_learner_stats(const TxlLearner *l, TxlLearnStats *s)
{
  *s = l->st;
}

gboolean
txl_learner_write_model(TxlLearner *l, const char *path, GError **error)
{
  TxlParams *p = l->current_p;
  TxlParams *tmp = p ? NULL : txl_params_from_model(l->base, error);
  if (!p && !tmp)
    return FALSE;
  gboolean ok = txl_params_write_gguf(p ? p : tmp, txl_params_write_tokenizer,
                                      (gpointer)txl_model_tokenizer(l->base),
                                      path, error);
  if (tmp)
    txl_params_free(tmp);
  return ok;
}

TxlModel *
txl_learner_model(TxlLearner *l)
{
  return l->current ? txl_model_ref(l->current) : NULL;
}

/* ---- state as bytes (docs/api.md) ------------------------------------- *
 *
 * u32 magic "TXLL", u32 version; the options (must match: the rounds to
 * come depend on them); u64 lines, next_round, due; u32 rounds started;
 * the stats but wall times (so that equal runs save equal bytes); the adapted weights (u64 count, f32 each; 0: still warming
 * up); the round not landed yet (u32 0: none; 1: its index, u64 lines, u64
 * steps, f64 losses, its weights; 2: its index, u64 lines and
 * the error text); the window (u64 lines, u64 tokens, each line's length,
 * the ids).  Version 3, a learner grouping sessions: its window instead
 * (u64 lines, each line's transcript serial and u64 length) and the
 * transcripts (transcripts.c).  Version 2 (the window without lengths:
 * its rounds learnt every token of a transcript) is refused.  Versions 4
 * and 5, written with warmup_seconds only: versions 1 and 3 with, after
 * the options, f64 warmup_seconds, the time warmed up so far and the time
 * of the line before (NaN: none yet), so that a stream whose times go on
 * continues exactly (one whose clock starts again lower adds nothing for
 * the gap: time going back).  Weights are
 * stored whole, with no compression of their own: the snapshot file
 * compresses its payload. */
#define STATE_MAGIC 0x4c4c5854u /* "TXLL" */
#define STATE_VERSION 1u
#define STATE_VERSION_SESSIONS 3u
#define STATE_VERSION_SESSIONS_ALL 2u /* refused, above */
#define STATE_VERSION_TIMED 4u          /* 1 with the warm-up's time */
#define STATE_VERSION_SESSIONS_TIMED 5u /* 3 with the warm-up's time */
#define N_OPT_INTS 8

static void
opt_ints(const TxlLearnOptions *o, guint64 v[N_OPT_INTS])
{
  guint64 x[N_OPT_INTS] = {
    (guint64)o->warmup_lines, (guint64)o->every_lines,
    (guint64)o->window_lines, (guint64)o->lag_lines, (guint64)o->max_steps,
    (guint64)o->batch, (guint64)o->segment, o->seed,
  };
  memcpy(v, x, sizeof x);
}

gsize
txl_learner_state_get_size(TxlLearner *l)
{
  round_wait(l); /* a round in flight is saved finished */
  gsize n = 8 + N_OPT_INTS * 8 + 3 * 8 + 3 * 8 + 4 + 8 + 4 + 4 + 8 + 2 * 8;
  if (l->o.warmup_seconds > 0)
    n += 3 * 8;
  n += 8 + (l->current_p ? l->current_p->n * 4 : 0);
  n += 4;
  if (l->round) {
    n += 4 + 8;
    if (l->round->error)
      n += 8 + strlen(l->round->error->message);
    else
      n += 8 + 2 * 8 + 8 + l->round->p->n * 4;
  }
  if (l->tr)
    return n + 8 + (gsize)l->ser->len * 16 +
           txl_transcripts_state_size(l->tr);
  return n + 16 + (gsize)l->len->len * 8 + (gsize)l->tok->len * 4;
}

static void
put_floats(TxlWriter *w, const TxlParams *p)
{
  txl_w_u64(w, p ? p->n : 0);
  if (!p)
    return;
  guint8 *at = w->p;
  txl_w_raw(w, p->data, p->n * 4);
  txl_le_f32_inplace(at, p->n);
}

gsize
txl_learner_state_get_data(TxlLearner *l, guint8 *dst, gsize size)
{
  gsize need = txl_learner_state_get_size(l);
  if (size < need)
    return 0;
  TxlWriter w = { dst };
  guint64 ov[N_OPT_INTS];
  opt_ints(&l->o, ov);
  txl_w_u32(&w, STATE_MAGIC);
  gboolean timed = l->o.warmup_seconds > 0;
  txl_w_u32(&w, l->tr ? (timed ? STATE_VERSION_SESSIONS_TIMED
                               : STATE_VERSION_SESSIONS)
                      : (timed ? STATE_VERSION_TIMED : STATE_VERSION));
  for (int i = 0; i < N_OPT_INTS; i++)
    txl_w_u64(&w, ov[i]);
  txl_w_u64(&w, txl_f64_bits(l->o.passes));
  txl_w_u64(&w, txl_f64_bits(l->o.lr));
  txl_w_u64(&w, txl_f64_bits(l->o.dropout));
  if (timed) {
    txl_w_u64(&w, txl_f64_bits(l->o.warmup_seconds));
    txl_w_u64(&w, txl_f64_bits(l->warm_time));
    txl_w_u64(&w, txl_f64_bits(l->prev_t));
  }
  txl_w_u64(&w, (guint64)l->lines);
  txl_w_u64(&w, (guint64)l->next_round);
  txl_w_u64(&w, (guint64)l->due);
  txl_w_u32(&w, (guint32)l->started);
  txl_w_u64(&w, (guint64)l->st.lines_learnt);
  txl_w_u32(&w, (guint32)l->st.rounds);
  txl_w_u32(&w, (guint32)l->st.failed);
  txl_w_u64(&w, (guint64)l->st.steps);
  txl_w_u64(&w, txl_f64_bits(l->st.loss_first));
  txl_w_u64(&w, txl_f64_bits(l->st.loss_last));
  put_floats(&w, l->current_p);
  Round *r = l->round;
  txl_w_u32(&w, !r ? 0 : r->error ? 2 : 1);
  if (r) {
    txl_w_u32(&w, (guint32)r->index);
    txl_w_u64(&w, (guint64)r->lines);
    if (r->error) {
      gsize len = strlen(r->error->message);
      txl_w_u64(&w, len);
      txl_w_raw(&w, r->error->message, len);
    } else {
      txl_w_u64(&w, (guint64)r->steps);
      txl_w_u64(&w, txl_f64_bits(r->loss_first));
      txl_w_u64(&w, txl_f64_bits(r->loss_last));
      put_floats(&w, r->p);
    }
  }
  if (l->tr) {
    txl_w_u64(&w, l->ser->len);
    for (guint i = 0; i < l->ser->len; i++) {
      txl_w_u64(&w, g_array_index(l->ser, guint64, i));
      txl_w_u64(&w, (guint64)g_array_index(l->len, gint64, i));
    }
    txl_transcripts_state_write(l->tr, &w);
  } else {
    txl_w_u64(&w, l->len->len);
    txl_w_u64(&w, l->tok->len);
    for (guint i = 0; i < l->len->len; i++)
      txl_w_u64(&w, (guint64)g_array_index(l->len, gint64, i));
    guint8 *at = w.p;
    txl_w_raw(&w, l->tok->data, (gsize)l->tok->len * 4);
    txl_le_f32_inplace(at, l->tok->len); /* int32 ids: the same swap */
  }
  g_assert((gsize)(w.p - dst) == need);
  return need;
}

/* Weights from the state: exactly the model's count, every one finite. */
static TxlParams *
get_floats(TxlReader *r, TxlLearner *l, guint64 n, const char *what,
           GError **error)
{
  const TxlConfig *c = txl_model_config(l->base);
  TxlParams *p = txl_params_new(c, NULL, 0, error);
  if (!p)
    return NULL;
  const guint8 *src = n == p->n ? txl_get_raw(r, p->n * 4) : NULL;
  if (src) {
    memcpy(p->data, src, p->n * 4);
    txl_le_f32_inplace((guint8 *)p->data, p->n);
  }
  if (!src || txl_first_nonfinite(p->data, p->n) >= 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "learner state: the %s weights do not fit the model or are "
                "not finite", what);
    txl_params_free(p);
    return NULL;
  }
  return p;
}

typedef struct {
  gint64 lines, next_round, due;
  double warm_time, prev_t;
  int started;
  TxlLearnStats st;
  TxlParams *current;
  Round *round;
  GArray *len, *tok, *ser;
  TxlTranscripts *tr;
} Parsed;

static void
parsed_clear(Parsed *ps)
{
  if (ps->current)
    txl_params_free(ps->current);
  round_free(ps->round);
  if (ps->len)
    g_array_free(ps->len, TRUE);
  if (ps->tok)
    g_array_free(ps->tok, TRUE);
  if (ps->ser)
    g_array_free(ps->ser, TRUE);
  txl_transcripts_free(ps->tr);
}

static gboolean
parse_round(TxlReader *r, TxlLearner *l, Parsed *ps, GError **error)
{
  guint32 kind = txl_get_u32(r);
  if (kind == 0)
    return r->ok;
  Round *rd = ps->round = g_new0(Round, 1);
  rd->o = l->o;
  rd->index = (int)txl_get_u32(r);
  rd->lines = (gint64)txl_get_u64(r);
  if (kind == 2) {
    gsize len = 0;
    const guint8 *msg = txl_get_blob(r, &len, 4096);
    if (!msg)
      return FALSE;
    rd->error = g_error_new(TXL_ERROR, TXL_ERROR_INVALID, "%.*s", (int)len,
                            (const char *)msg);
    return TRUE;
  }
  if (kind != 1)
    return FALSE;
  rd->steps = (gint64)txl_get_u64(r);
  rd->loss_first = txl_get_f64(r);
  rd->loss_last = txl_get_f64(r);
  guint64 n = txl_get_u64(r);
  return r->ok && (rd->p = get_floats(r, l, n, "pending round's", error));
}

static gboolean
parse_window(TxlReader *r, Parsed *ps, int n_token)
{
  guint64 nl = txl_get_u64(r), nt = txl_get_u64(r);
  if (!r->ok || nl > txl_reader_left(r) / 8 || nt > WINDOW_TOKEN_CAP)
    return FALSE;
  ps->len = g_array_sized_new(FALSE, FALSE, sizeof(gint64), (guint)nl);
  guint64 sum = 0;
  for (guint64 i = 0; i < nl; i++) {
    gint64 v = (gint64)txl_get_u64(r);
    if (v < 0 || v > WINDOW_TOKEN_CAP)
      return FALSE;
    sum += (guint64)v;
    g_array_append_val(ps->len, v);
  }
  const guint8 *ids = sum == nt ? txl_get_raw(r, nt * 4) : NULL;
  if (!ids)
    return FALSE;
  ps->tok = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), (guint)nt);
  g_array_set_size(ps->tok, (guint)nt);
  if (nt) /* an empty array's data may be NULL */
    memcpy(ps->tok->data, ids, nt * 4);
  txl_le_f32_inplace((guint8 *)ps->tok->data, nt);
  /* the next round trains on these ids: one outside the vocabulary would
   * be refused there (a critical) and fail every round after
   * (fuzz_elements found it) */
  for (guint64 i = 0; i < nt; i++) {
    int32_t id = g_array_index(ps->tok, int32_t, i);
    if (id < 0 || id >= n_token)
      return FALSE;
  }
  return TRUE;
}

/* A learner grouping sessions: its window (each line's serial and
 * length), then the transcripts it names. */
static gboolean
parse_sessions(TxlReader *r, TxlLearner *l, Parsed *ps, int n_token)
{
  guint64 nl = txl_get_u64(r);
  if (!r->ok || nl > txl_reader_left(r) / 16)
    return FALSE;
  ps->len = g_array_sized_new(FALSE, FALSE, sizeof(gint64), (guint)nl);
  ps->tok = g_array_new(FALSE, FALSE, sizeof(int32_t));
  ps->ser = g_array_sized_new(FALSE, FALSE, sizeof(guint64), (guint)nl);
  g_array_set_size(ps->ser, (guint)nl);
  g_array_set_size(ps->len, (guint)nl);
  /* references per serial, keyed by the array's own elements */
  GHashTable *refs = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint i = 0; i < nl; i++) {
    guint64 *v = &g_array_index(ps->ser, guint64, i);
    *v = txl_get_u64(r);
    guint64 len = txl_get_u64(r);
    if (len > WINDOW_TOKEN_CAP)
      r->ok = FALSE;
    g_array_index(ps->len, gint64, i) = (gint64)len;
    guint c = GPOINTER_TO_UINT(g_hash_table_lookup(refs, v));
    g_hash_table_insert(refs, v, GUINT_TO_POINTER(c + 1));
  }
  ps->tr = txl_transcripts_new_like(l->tr);
  gboolean ok = r->ok && !g_hash_table_contains(refs, &(guint64){ 0 }) &&
                txl_transcripts_state_read(ps->tr, r, n_token, refs);
  g_hash_table_destroy(refs);
  return ok;
}

static gboolean
parse_state(TxlReader *r, TxlLearner *l, Parsed *ps, GError **error)
{
  guint64 ov[N_OPT_INTS];
  opt_ints(&l->o, ov);
  guint32 magic = txl_get_u32(r), version = txl_get_u32(r);
  gboolean timed = version == STATE_VERSION_TIMED ||
                   version == STATE_VERSION_SESSIONS_TIMED;
  if (timed) /* the same layout as its untimed version, and the time */
    version = version == STATE_VERSION_TIMED ? STATE_VERSION
                                             : STATE_VERSION_SESSIONS;
  guint32 want = l->tr ? STATE_VERSION_SESSIONS : STATE_VERSION;
  if (magic == STATE_MAGIC && version > STATE_VERSION_SESSIONS_TIMED) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "learner state: version %u, written by a newer txl (this "
                "one reads versions 1 to %u): continue it with that txl, or "
                "start afresh", version, STATE_VERSION_SESSIONS_TIMED);
    return FALSE;
  }
  if (magic != STATE_MAGIC ||
      (version != STATE_VERSION && version != STATE_VERSION_SESSIONS &&
       version != STATE_VERSION_SESSIONS_ALL))
    return FALSE;
  if (version == STATE_VERSION_SESSIONS_ALL) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "learner state: version %u was written by a learner whose "
                "rounds learnt every line of a session again (before "
                "they learnt only the window's lines); it cannot continue, "
                "start afresh", version);
    return FALSE;
  }
  if (version != want) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "learner state: version %u was written by a learner that "
                "%s, this one %s (a snapshot of txlsessions before learning "
                "grouped sessions cannot continue; start afresh)", version,
                version == STATE_VERSION ? "learns lines as they come"
                                         : "groups sessions",
                l->tr ? "groups sessions" : "learns lines as they come");
    return FALSE;
  }
  gboolean same = TRUE;
  for (int i = 0; i < N_OPT_INTS; i++)
    same &= txl_get_u64(r) == ov[i];
  same &= txl_get_f64(r) == l->o.passes;
  same &= txl_get_f64(r) == (double)l->o.lr;
  same &= txl_get_f64(r) == (double)l->o.dropout;
  same &= timed == (l->o.warmup_seconds > 0);
  if (timed) {
    same &= txl_get_f64(r) == l->o.warmup_seconds;
    ps->warm_time = txl_get_f64(r);
    ps->prev_t = txl_get_f64(r);
  } else {
    ps->prev_t = NAN;
  }
  if (r->ok && !same) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "learner state: saved with other learning options "
                        "(warm-up in lines or seconds, rounds, window, steps "
                        "or seed)");
    return FALSE;
  }
  if (r->ok && (!(ps->warm_time >= 0 &&
                  ps->warm_time <= l->o.warmup_seconds) ||
                (!isnan(ps->prev_t) && !isfinite(ps->prev_t)))) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_FORMAT,
                        "learner state: the warm-up's time is out of range");
    return FALSE;
  }
  ps->lines = (gint64)txl_get_u64(r);
  ps->next_round = (gint64)txl_get_u64(r);
  ps->due = (gint64)txl_get_u64(r);
  ps->started = (int)txl_get_u32(r);
  ps->st.lines_learnt = (gint64)txl_get_u64(r);
  ps->st.rounds = (int)txl_get_u32(r);
  ps->st.failed = (int)txl_get_u32(r);
  ps->st.steps = (gint64)txl_get_u64(r);
  ps->st.loss_first = txl_get_f64(r);
  ps->st.loss_last = txl_get_f64(r);
  /* every count is bounded well below where the stream's additions to it
   * would overflow (no stream gets near); the sum is taken wide: two
   * counts near INT_MAX overflowed an int (fuzz_elements) */
  const gint64 cap = G_MAXINT64 / 2;
  if (!r->ok || ps->lines < 0 || ps->lines > cap || ps->next_round < 0 ||
      ps->next_round > cap || ps->due < 0 || ps->due > cap ||
      ps->started < 0 || ps->started > G_MAXINT / 2 || ps->st.rounds < 0 ||
      ps->st.failed < 0 || ps->st.lines_learnt < 0 ||
      ps->st.lines_learnt > cap || ps->st.steps < 0 || ps->st.steps > cap ||
      (gint64)ps->st.rounds + ps->st.failed > ps->started)
    return FALSE;
  guint64 n = txl_get_u64(r);
  if (n && !(ps->current = get_floats(r, l, n, "adapted", error)))
    return FALSE;
  if (!parse_round(r, l, ps, error))
    return FALSE;
  int n_token = txl_model_config(l->base)->n_token;
  if (!(l->tr ? parse_sessions(r, l, ps, n_token)
              : parse_window(r, ps, n_token)))
    return FALSE;
  return txl_reader_done(r);
}

gboolean
txl_learner_state_set_data(TxlLearner *l, const guint8 *src, gsize size,
                           GError **error)
{
  TxlReader r;
  txl_reader_init_data(&r, src, size);
  Parsed ps = { 0 };
  GError *err = NULL;
  if (!parse_state(&r, l, &ps, &err)) {
    parsed_clear(&ps);
    if (err)
      g_propagate_error(error, err);
    else
      g_set_error_literal(error, TXL_ERROR, TXL_ERROR_FORMAT,
                          "learner state: malformed");
    return FALSE;
  }
  /* checked whole: now replace */
  round_wait(l);
  round_free(l->round);
  l->round = g_steal_pointer(&ps.round);
  txl_model_unref(l->current);
  l->current = NULL;
  l->current_p = NULL;
  if (ps.current) {
    l->current_p = g_steal_pointer(&ps.current);
    l->current = adapted_model(l, l->current_p);
  }
  g_array_free(l->len, TRUE);
  g_array_free(l->tok, TRUE);
  l->len = g_steal_pointer(&ps.len);
  l->tok = g_steal_pointer(&ps.tok);
  if (l->tr) {
    g_array_free(l->ser, TRUE);
    txl_transcripts_free(l->tr);
    l->ser = g_steal_pointer(&ps.ser);
    l->tr = g_steal_pointer(&ps.tr);
  }
  l->lines = ps.lines;
  l->warm_time = ps.warm_time;
  l->prev_t = ps.prev_t;
  l->next_t = NAN;
  l->next_round = ps.next_round;
  l->due = ps.due;
  l->started = ps.started;
  l->st = ps.st;
  l->st.lines = l->lines;
  l->st.running = FALSE;
  return TRUE;
}
