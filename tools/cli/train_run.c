/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl train: train a model on text or log files, on the CPU.
 *
 * The data are tokenised once, cut into `batch` parallel streams and read
 * segment by segment with recurrent memory, as the official trainer does.
 * Every --checkpoint-every steps (and on Ctrl-C) the model file is written
 * together with MODEL.train, which holds what --resume needs to continue
 * bit for bit: optimiser moments, step, data position, memory and the
 * dropout generator. */
#include "txl_engine.h"
#include "txl_train.h"
#include "txl_formats.h"
#include "train_core.h"
#include "train_run.h"
#include "train_data.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

static void
on_sigint(int sig)
{
  interrupted = 1;
}

void
train_options_init(TrainOptions *o)
{
  *o = (TrainOptions){
    .val_fraction = -1, .vocab = 1024, .layers = 4, .d_model = 256,
    .heads = 8, .d_head = 32, .d_inner = 1024, .mem_len = 128,
    .segment = 64, .dropout = 0.1, .dropatt = 0.0, .batch = 16,
    .steps = 2000, .warmup = 100, .lr = 1e-3, .min_lr = 1e-4,
    .weight_decay = 0.01, .clip = 0.25, .seed = 1, .eval_every = 250,
    .eval_tokens = 65536, .checkpoint_every = 500, .log_every = 50,
  };
}


gboolean
train_options_check(const TrainOptions *o, GError **error)
{
  struct { const char *name; double v, lo, hi; } r[] = {
    { "--layers", o->layers, 1, 64 },
    { "--d-model", o->d_model, 2, 8192 },
    { "--heads", o->heads, 1, 256 },
    { "--d-head", o->d_head, 1, 1024 },
    { "--d-inner", o->d_inner, 1, 65536 },
    { "--mem-len", o->mem_len, 0, 65536 },
    { "--segment", o->segment, 1, 65536 },
    { "--batch", o->batch, 1, 4096 },
    { "--steps", (double)o->steps, 1, 1e9 },
    { "--warmup", o->warmup, 0, 1e9 },
    { "--lr", o->lr, 1e-9, 10 },
    { "--min-lr", o->min_lr, 0, 10 },
    { "--weight-decay", o->weight_decay, 0, 10 },
    { "--clip", o->clip, 0, 1e9 },
    { "--dropout", o->dropout, 0, 0.95 },
    { "--dropatt", o->dropatt, 0, 0.95 },
    { "--val-fraction", o->val_fraction, 0, 0.9 },
    { "--vocab", o->vocab, 257, 1 << 20 },
    { "--eval-every", o->eval_every, 0, 1e9 },
    { "--eval-tokens", o->eval_tokens, 1, 1e9 },
    { "--checkpoint-every", o->checkpoint_every, 0, 1e9 },
    { "--log-every", o->log_every, 1, 1e9 },
    { "--time-limit", o->time_limit_min, 0, 1e6 },
    { "--stop-after", (double)o->stop_after, 0, 1e18 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(r); i++) {
    if (!(r[i].v >= r[i].lo && r[i].v <= r[i].hi)) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "%s %g is outside [%g, %g]", r[i].name, r[i].v, r[i].lo,
                  r[i].hi);
      return FALSE;
    }
  }
  if (o->d_model % 2) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "--d-model must be even");
    return FALSE;
  }
  return TRUE;
}

static void
fill_config(const TrainOptions *o, const TrainData *d, TxlConfig *c)
{
  memset(c, 0, sizeof *c);
  c->n_token = d->n_token;
  c->d_model = o->d_model;
  c->d_embed = o->d_model;
  c->n_head = o->heads;
  c->d_head = o->d_head;
  c->d_inner = o->d_inner;
  c->n_layer = o->layers;
  c->mem_len = o->mem_len;
  c->tgt_len = o->segment;
  c->clamp_len = 0;
  c->same_length = FALSE;
  c->pre_lnorm = !o->post_ln;
  c->untie_r = TRUE;
  c->tie_weight = TRUE;
  c->div_val = 1;
  c->n_cutoffs = 0;
  c->tie_projs[0] = FALSE;
  c->layer_norm_eps = 1e-5f;
  c->cluster_order = TXL_CLUSTER_HF;
}

typedef struct {
  double nll;
  gint64 tokens;
  gint64 bytes;
  const TrainData *d;
  gint64 offset; /* first val token */
} EvalAcc;

static void
eval_token(gint64 pos, int32_t token, float logprob, gpointer p)
{
  EvalAcc *a = p;
  a->nll -= logprob;
  a->tokens++;
  a->bytes += a->d->token_bytes ? a->d->token_bytes[a->offset + pos] : 1;
}

/* Validation in nats/token and bits per byte, with the inference engine
 * over the current weights. */
static gboolean
evaluate(TrainCore *core, const TrainData *d, int max_tokens, double *nats,
         double *bpb, GError **error)
{
  TxlModel *m = train_core_model(core, error);
  if (!m)
    return FALSE;
  EvalAcc acc = { 0, 0, 0, d, d->n_train };
  gsize n = MIN((gsize)max_tokens + 1, d->n_val);
  TxlScorer *s = txl_scorer_new(m, NULL, 0, eval_token, &acc, error);
  gboolean ok = s && txl_scorer_push(s, d->ids + d->n_train, n, error) &&
                txl_scorer_finish(s, error);
  txl_scorer_free(s);
  txl_model_unref(m);
  if (!ok)
    return FALSE;
  *nats = acc.nll / MAX(acc.tokens, 1);
  *bpb = acc.nll / G_LN2 / MAX(acc.bytes, 1);
  return TRUE;
}

/* ---- checkpoints ----------------------------------------------------- */

typedef struct {
  gint64 step;
  float *m, *v;
} OptState;

typedef struct {
  TrainCore *core;
  const TrainData *d;
} Initial;

static gboolean
write_initial(const char *path, gpointer data, GError **error)
{
  Initial *i = data;
  return train_data_save_model(i->core, i->d, path, error);
}

/* What the end of a run would refuse, refused before its first step: an
 * output that is not a file, a folder that cannot be written, a model no
 * stream could open (lengths over the memory budget).  The initial weights
 * are written beside the output, loaded and removed. */
static gboolean
check_output(TrainCore *core, const TrainData *d, const char *output,
             GError **error)
{
  Initial i = { core, d };
  return txl_model_write_checked(output, write_initial, &i, FALSE, error);
}

static char *
state_path(const char *model)
{
  return g_strconcat(model, ".train", NULL);
}

static gboolean
save_checkpoint(TrainCore *core, const TrainData *d, const TrainOptions *o,
                const OptState *os, TxlBatcher *b, GError **error)
{
  if (!train_data_save_model(core, d, o->output, error))
    return FALSE;
  gsize n;
  train_core_params(core, &n);
  g_autofree float *st = g_new(float, MAX(train_core_memory_floats(core), 1));
  guint64 dstep;
  int mlen;
  train_core_state_get(core, st, &dstep, &mlen);
  const TxlConfig *cfg = train_core_config(core);
  gsize sn = (gsize)cfg->n_layer * o->batch * mlen * cfg->d_model;
  GgufWriter *w = gguf_writer_new();
  gguf_writer_add_string(w, "general.architecture", "transfo-xl-train");
  gguf_writer_add_u32(w, "train.version", 1);
  gguf_writer_add_string(w, "train.data_id", d->data_id);
  gguf_writer_add_string(w, "train.options_id", d->options_id);
  /* steps and data positions fit u32 for any run this tool can do */
  gguf_writer_add_u32(w, "train.step", (uint32_t)os->step);
  gguf_writer_add_u32(w, "train.batch_pos", (uint32_t)txl_batcher_position(b));
  gguf_writer_add_u32(w, "train.dropout_step", (uint32_t)dstep);
  gguf_writer_add_u32(w, "train.mem_used", (uint32_t)mlen);
  uint64_t ne[1] = { n };
  gguf_writer_add_tensor(w, "adam.m", GGUF_TENSOR_F32, 1, ne, os->m, n * 4);
  gguf_writer_add_tensor(w, "adam.v", GGUF_TENSOR_F32, 1, ne, os->v, n * 4);
  uint64_t se[1] = { MAX(sn, 1) };
  gguf_writer_add_tensor(w, "memory", GGUF_TENSOR_F32, 1, se, st,
                         MAX(sn, 1) * 4);
  g_autofree char *sp = state_path(o->output);
  gboolean ok = gguf_writer_write(w, sp, error);
  gguf_writer_free(w);
  return ok;
}

static gboolean
load_checkpoint(TrainCore *core, const TrainData *d, const char *model,
                int batch, OptState *os, TxlBatcher *b, GError **error)
{
  g_autofree char *sp = state_path(model);
  GgufFile *f = gguf_open(sp, error);
  if (!f)
    return FALSE;
  gboolean ok = FALSE;
  gint64 step, pos, version, dstep, mlen;
  g_autofree char *data_id = NULL, *opt_id = NULL;
  gsize n;
  train_core_params(core, &n);
  const TxlConfig *cfg = train_core_config(core);
  if (!gguf_get_int(f, "train.version", 1, 1, &version, error) ||
      !gguf_get_int(f, "train.dropout_step", 0, G_MAXUINT32, &dstep, error) ||
      !gguf_get_int(f, "train.mem_used", 0, cfg->mem_len, &mlen, error) ||
      !gguf_get_int(f, "train.step", 0, G_MAXUINT32, &step, error) ||
      !gguf_get_int(f, "train.batch_pos", 0, G_MAXUINT32, &pos, error) ||
      !(data_id = gguf_get_string(f, "train.data_id", error)) ||
      !(opt_id = gguf_get_string(f, "train.options_id", error)))
    goto out;
  if (strcmp(data_id, d->data_id) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "%s was made on other training data: resume needs the same "
                "input files", sp);
    goto out;
  }
  if (strcmp(opt_id, d->options_id) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "%s was made with other model or training options: resume "
                "needs the same ones", sp);
    goto out;
  }
  const GgufTensor *tm = gguf_find_tensor(f, "adam.m");
  const GgufTensor *tv = gguf_find_tensor(f, "adam.v");
  const GgufTensor *ts = gguf_find_tensor(f, "memory");
  gsize sn = (gsize)cfg->n_layer * batch * mlen * cfg->d_model;
  if (!tm || !tv || !ts || tm->type != GGUF_TENSOR_F32 ||
      tv->type != GGUF_TENSOR_F32 || ts->type != GGUF_TENSOR_F32 ||
      tm->nbytes != n * 4 || tv->nbytes != n * 4 ||
      ts->nbytes != MAX(sn, 1) * 4) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: optimiser state does not match the model", sp);
    goto out;
  }
  if (!train_core_state_set(core, ts->data, (guint64)dstep, (int)mlen, error))
    goto out;
  memcpy(os->m, tm->data, n * 4);
  memcpy(os->v, tv->data, n * 4);
  os->step = step;
  txl_batcher_seek(b, pos);
  ok = TRUE;
out:
  gguf_close(f);
  return ok;
}

/* ---- progress -------------------------------------------------------- */

static void
progress(gboolean tty, gint64 step, gint64 total, double loss, double tps,
         double elapsed, float lr)
{
  double eta = tps > 0 ? elapsed / MAX(step, 1) * (total - step) : 0;
  if (tty)
    fprintf(stderr, "\rstep %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
            "  loss %.4f  %.0f tok/s  lr %.2e  ETA %02d:%02d:%02d ", step,
            total, loss, tps, lr, (int)(eta / 3600), (int)fmod(eta / 60, 60),
            (int)fmod(eta, 60));
  else
    fprintf(stderr, "step %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
            " loss %.4f tok/s %.0f lr %.3e eta_s %.0f\n", step, total, loss,
            tps, lr, eta);
}

/* s, owned by keep from now on */
static char *
kept(GPtrArray *keep, char *s)
{
  g_ptr_array_add(keep, s);
  return s;
}

void
train_options_add_entries(GOptionContext *ctx, TrainOptions *o,
                          GPtrArray *keep)
{
#define HELP(...) kept(keep, g_strdup_printf(__VA_ARGS__))
  const GOptionEntry e[] = {
    { "vocab", 0, 0, G_OPTION_ARG_INT, &o->vocab, HELP("BPE vocabulary size (default %d)", o->vocab), "N" },
    { "layers", 0, 0, G_OPTION_ARG_INT, &o->layers, HELP("Layers (default %d)", o->layers), "N" },
    { "d-model", 0, 0, G_OPTION_ARG_INT, &o->d_model, HELP("Hidden size (default %d)", o->d_model), "N" },
    { "heads", 0, 0, G_OPTION_ARG_INT, &o->heads, HELP("Attention heads (default %d)", o->heads), "N" },
    { "d-head", 0, 0, G_OPTION_ARG_INT, &o->d_head, HELP("Size of each head (default %d)", o->d_head), "N" },
    { "d-inner", 0, 0, G_OPTION_ARG_INT, &o->d_inner, HELP("Feed-forward size (default %d)", o->d_inner), "N" },
    { "mem-len", 0, 0, G_OPTION_ARG_INT, &o->mem_len, HELP("Memory length in positions (default %d)", o->mem_len), "N" },
    { "segment", 0, 0, G_OPTION_ARG_INT, &o->segment, HELP("Segment length in tokens (default %d)", o->segment), "N" },
    { "dropout", 0, 0, G_OPTION_ARG_DOUBLE, &o->dropout, HELP("Dropout rate (default %g)", o->dropout), "P" },
    { "batch", 0, 0, G_OPTION_ARG_INT, &o->batch, HELP("Parallel streams (default %d)", o->batch), "N" },
    { "steps", 0, 0, G_OPTION_ARG_INT64, &o->steps, HELP("Optimiser steps (default %" G_GINT64_FORMAT ")", o->steps), "N" },
    { "lr", 0, 0, G_OPTION_ARG_DOUBLE, &o->lr, HELP("Peak learning rate (default %g)", o->lr), "LR" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &o->seed, HELP("Random seed (default %" G_GINT64_FORMAT ")", o->seed), "N" },
    { "time-limit", 0, 0, G_OPTION_ARG_DOUBLE, &o->time_limit_min, "Stop (with a checkpoint) after this many minutes", "MIN" },
    { NULL },
  };
#undef HELP
  g_option_context_add_main_entries(ctx, e, NULL);
}

/* A resumed run must continue the same run: everything that shapes the
 * weights goes into this fingerprint. */
static void
set_fingerprint(TrainData *d, const TrainOptions *o, const TxlConfig *c)
{
  g_autofree char *desc = g_strdup_printf(
    "n_token=%d d_model=%d n_head=%d d_head=%d d_inner=%d n_layer=%d "
    "mem_len=%d tgt_len=%d pre_lnorm=%d batch=%d steps=%" G_GINT64_FORMAT
    " warmup=%d lr=%.9g min_lr=%.9g wd=%.9g clip=%.9g dropout=%.9g "
    "dropatt=%.9g seed=%" G_GINT64_FORMAT " init=%s",
    c->n_token, c->d_model, c->n_head, c->d_head, c->d_inner, c->n_layer,
    c->mem_len, c->tgt_len, c->pre_lnorm, o->batch, o->steps, o->warmup, o->lr,
    o->min_lr, o->weight_decay, o->clip, o->dropout, o->dropatt, o->seed,
    o->init ? o->init : "");
  train_data_set_options_id(d, desc);
}

int
train_run(const TrainOptions *o)
{
  g_autoptr(GError) err = NULL;
  int rc = 1;
  TrainData *d = NULL;
  TrainCore *core = NULL;
  TxlBatcher *b = NULL;
  OptState os = { 0 };
  int32_t *in = NULL, *tg = NULL;

  TrainDataOptions dopt = { (const char *const *)o->inputs, o->n_inputs,
                            o->val_path, o->val_fraction, o->tokenizer, o->vocab,
                            o->normalize, o->segment, o->init };
  d = train_data_load(&dopt, &err);
  if (!d)
    goto out;
  TrainSetup setup = { .batch = o->batch, .dropout = (float)o->dropout,
                       .dropatt = (float)o->dropatt, .seed = (guint64)o->seed };
  fill_config(o, d, &setup.cfg);
  if (!txl_config_validate(&setup.cfg, &err))
    goto out;
  set_fingerprint(d, o, &setup.cfg);
  core = train_core_new(&setup, o->resume ? o->output : o->init, &err);
  if (o->resume && o->init)
    fprintf(stderr, "txl train: --resume takes the weights from %s; --init is ignored\n", o->output);
  if (!core || !check_output(core, d, o->output, &err))
    goto out;
  b = txl_batcher_new(d->ids, d->n_train, o->batch, o->segment, &err);
  if (!b) {
    g_prefix_error(&err, "training data: ");
    goto out;
  }
  gsize np;
  float *params = train_core_params(core, &np);
  float *grads = train_core_grads(core);
  const guint8 *decay = train_core_decay_mask(core);
  os.m = g_new0(float, np);
  os.v = g_new0(float, np);
  if (o->resume && !load_checkpoint(core, d, o->output, o->batch, &os, b, &err))
    goto out;
  fprintf(stderr, "txl train: %zu parameters, %zu train / %zu validation "
          "tokens, %" G_GINT64_FORMAT " batches per pass%s\n", np, d->n_train,
          d->n_val, txl_batcher_batches_per_epoch(b),
          o->resume ? " (resumed)" : "");

  struct sigaction sa = { 0 };
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  const gboolean tty = isatty(STDERR_FILENO);
  const gsize BT = (gsize)o->batch * o->segment;
  in = g_new(int32_t, BT);
  tg = g_new(int32_t, BT);
  double t0 = g_get_monotonic_time() / 1e6, t_last = t0;
  gint64 tok_since = 0, first_step = os.step;
  double loss_avg = 0, train_s = 0;
  gint64 trained = 0;
  while (os.step < o->steps && !interrupted) {
    double ts = g_get_monotonic_time() / 1e6;
    if (txl_batcher_next(b, in, tg))
      train_core_reset_memory(core);
    double loss = train_core_step(core, in, tg);
    if (!isfinite(loss)) {
      g_set_error(&err, TXL_ERROR, TXL_ERROR_INVALID,
                  "the loss became %g at step %" G_GINT64_FORMAT
                  ": lower --lr or raise --warmup", loss, os.step);
      goto out;
    }
    if (o->clip > 0)
      txl_clip_grad_norm(grads, np, o->clip);
    TxlAdamW opt = { txl_lr_at(os.step, o->warmup, o->steps, (float)o->lr,
                               (float)o->min_lr),
                     0.9f, 0.999f, 1e-8f, (float)o->weight_decay };
    os.step++;
    txl_adamw_step(&opt, os.step, params, grads, os.m, os.v, np, decay);
    train_s += g_get_monotonic_time() / 1e6 - ts;
    trained += BT;
    loss_avg = os.step - first_step == 1 ? loss : 0.95 * loss_avg + 0.05 * loss;
    tok_since += BT;
    double now = g_get_monotonic_time() / 1e6;
    if (tty || os.step % o->log_every == 0 || os.step == o->steps) {
      progress(tty, os.step, o->steps, loss_avg, tok_since / MAX(now - t_last, 1e-9),
               now - t0, opt.lr);
      if (!tty || now - t_last > 2.0) {
        t_last = now;
        tok_since = 0;
      }
    }
    gboolean last = os.step == o->steps;
    gboolean out_of_time = (o->time_limit_min > 0 &&
                            now - t0 > o->time_limit_min * 60.0) ||
                           (o->stop_after > 0 && os.step >= o->stop_after);
    if ((o->eval_every > 0 && os.step % o->eval_every == 0) || last ||
        out_of_time) {
      double nats, bpb;
      if (!evaluate(core, d, o->eval_tokens, &nats, &bpb, &err))
        goto out;
      fprintf(stderr, "%svalidation step %" G_GINT64_FORMAT ": %.4f nats/token, "
              "%.4f bits/byte\n", tty ? "\n" : "", os.step, nats, bpb);
    }
    if ((o->checkpoint_every > 0 && os.step % o->checkpoint_every == 0) ||
        last || out_of_time) {
      if (!save_checkpoint(core, d, o, &os, b, &err))
        goto out;
    }
    if (out_of_time) {
      fprintf(stderr, "txl train: stopped at step %" G_GINT64_FORMAT
              "; --resume continues\n", os.step);
      break;
    }
  }
  if (interrupted) {
    if (!save_checkpoint(core, d, o, &os, b, &err))
      goto out;
    fprintf(stderr, "%stxl train: interrupted at step %" G_GINT64_FORMAT
            "; checkpoint written, --resume continues\n", tty ? "\n" : "",
            os.step);
    rc = 130;
    goto out;
  }
  fprintf(stderr, "txl train: trained %" G_GINT64_FORMAT " tokens in %.2f s "
          "(%.0f tokens/s, validation excluded)\n", trained, train_s,
          trained / MAX(train_s, 1e-9));
  fprintf(stderr, "txl train: wrote %s\n", o->output);
  rc = 0;

out:
  if (err)
    fprintf(stderr, "txl train: %s\n", err->message);
  g_free(in);
  g_free(tg);
  g_free(os.m);
  g_free(os.v);
  txl_batcher_free(b);
  train_core_free(core);
  train_data_free(d);
  return rc;
}
