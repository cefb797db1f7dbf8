/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Learning on the stream (learner.h): rounds of fine-tuning on the
 * stream's own recent lines, each on a thread of its own, whose weights
 * take over at a fixed line. */
#include "learner.h"

#include "batcher.h"
#include "finite.h"
#include "optim.h"
#include "train.h"

#include <math.h>
#include <string.h>

/* Tokens a round may learn from at most: bounds the window's memory
 * (4 MiB of ids) whatever the lines' lengths. */
#define WINDOW_TOKEN_CAP (1 << 20)
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
  gint64 lines;
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
      !(o.lr > 0 && o.lr < 1) || !(o.dropout >= 0 && o.dropout < 1)) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "learning options out of range (warm-up and window "
                        "at least one line, 1..256 streams, segment 2..4096, "
                        "0 < lr < 1, 0 <= dropout < 1)");
    return NULL;
  }
  if (!txl_params_config_supported(txl_model_config(base), error))
    return NULL;
  TxlLearner *l = g_new0(TxlLearner, 1);
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
  g_free(r->tok);
  if (r->p)
    txl_params_free(r->p);
  g_clear_error(&r->error);
  g_free(r);
}

void
txl_learner_free(TxlLearner *l)
{
  if (!l)
    return;
  if (l->thread)
    g_thread_join(l->thread);
  round_free(l->round);
  txl_model_unref(l->current);
  txl_model_unref(l->base);
  g_array_free(l->tok, TRUE);
  g_array_free(l->len, TRUE);
  g_free(l);
}

/* ---- a round, on its own thread ----------------------------------------- */

static gboolean
round_train(Round *r, TxlTrainState *s, TxlBatcher *b, int B, int T)
{
  const TxlLearnOptions *o = &r->o;
  TxlParams *p = r->p;
  gint64 per_pass = txl_batcher_batches_per_epoch(b);
  gint64 steps = (gint64)ceil(o->passes * (double)per_pass);
  steps = CLAMP(steps, 1, o->max_steps);
  gint64 warm = MAX(1, steps / 10);
  gint64 tail = MIN(per_pass, steps); /* steps averaged for each loss */
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
    round_train(r, s, b, B, T);
  }
  txl_train_state_free(s);
  txl_batcher_free(b);
  r->seconds = (g_get_monotonic_time() - t0) / 1e6;
  return NULL;
}

/* ---- the stream's side ------------------------------------------------ */

static void
window_add(TxlLearner *l, const int32_t *ids, gsize n)
{
  n = MIN(n, (gsize)WINDOW_TOKEN_CAP);
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
    drop_tok += (gsize)g_array_index(l->len, gint64, drop_lines);
    drop_lines++;
  }
  if (drop_lines) {
    g_array_remove_range(l->len, 0, drop_lines);
    g_array_remove_range(l->tok, 0, (guint)drop_tok);
  }
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
  r->n = l->tok->len;
  r->tok = g_memdup2(l->tok->data, sizeof(int32_t) * r->n);
  r->lines = l->len->len;
  l->round = r;
  /* the first round lands at once: the warm-up ends with it */
  l->due = l->lines + (r->index ? l->o.lag_lines : 0);
  l->st.running = TRUE;
  l->thread = g_thread_new("txl-learn", round_run, r);
  return TRUE;
}

/* Waits for the round in flight and takes its weights, or its error. */
static TxlModel *
round_land(TxlLearner *l, GError **error)
{
  g_thread_join(l->thread);
  l->thread = NULL;
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
    m = txl_model_from_params_owned(l->current_p);
    txl_model_unref(l->current);
    l->current = txl_model_ref(m);
  }
  round_free(r);
  return m;
}

TxlModel *
txl_learner_line(TxlLearner *l, const int32_t *ids, gsize n,
                 gboolean flagged, GError **error)
{
  l->lines++;
  l->st.lines = l->lines;
  /* warm-up lines are all learnt from: nothing can be flagged yet */
  if (!flagged || !l->current)
    window_add(l, ids, n);
  if (l->thread && l->lines >= l->due)
    return round_land(l, error);
  if (!l->thread && l->lines >= l->next_round &&
      (l->started == 0 || l->o.every_lines > 0)) {
    l->next_round = l->lines + MAX(l->o.every_lines, 1);
    if (!round_start(l, error))
      return NULL;
    if (l->lines >= l->due) /* lag 0: the round lands at once */
      return round_land(l, error);
  }
  return NULL;
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
