/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the whole model loader and a short run of it.
 *
 * Every input goes through txl_model_from_buffer(): the GGUF container,
 * the config, the tokenizer, and every tensor checked against the config.
 * An input that loads is then used the way a caller would use it, on a
 * deliberately small stream so that a config cannot turn one execution
 * into gigabytes or minutes: two segments of up to 4 tokens with targets,
 * the full next-token distribution, the scorer, the model and vocabulary
 * ids, every symbol, and the streaming encoder over a few bytes.  The
 * weights are the fuzzer's too, within what the loader accepts (finite
 * floats, however large, which can still overflow to infinity in the
 * kernels); UBSan reports any float-to-int conversion that reaches.
 *
 * The last byte of the input picks the stream options (memory kind,
 * mem_len 0..7, same_length override), so the fuzzer can vary them without
 * a separate input format.  The thread pool is pinned to one thread.
 *
 * The memory budget (TXL_MEMORY_LIMIT) is set to 8 MiB, so that inputs
 * whose lengths ask for more are refused at load (the seeds include one
 * far over it and one just under it), and a stream with the model's own
 * defaults, which a model that loads must be able to open, stays small.
 * A model that loads must have only finite weights (seeds with an inf and
 * a NaN weight check the refusal). */
#include "fuzz_check.h"
#include "model_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEG 4
#define MAX_MEM 7
#define MAX_ENC_IDS 64

typedef struct {
  int n_token;
  int n;
  int32_t ids[MAX_ENC_IDS];
  gsize last_end;
} EncOut;

static void
on_token(int32_t id, gint64 line, gsize start, gsize end, gpointer data)
{
  EncOut *o = data;
  CHECK(id >= 0 && id < o->n_token);
  CHECK(line >= 1 && start < end);
  CHECK(start >= o->last_end || o->n == 0);
  o->last_end = end;
  if (o->n < MAX_ENC_IDS)
    o->ids[o->n++] = id;
}

static void
on_score(gint64 pos, int32_t token, float logprob, gpointer data)
{
  int *count = data;
  CHECK(pos >= 1);
  (void)token;
  (void)logprob;
  (*count)++;
}

/* An independent look at what the loader promises about the weights. */
static void
check_finite(const TxlModel *m)
{
  for (gsize i = 0; i < gguf_n_tensors(m->file); i++) {
    const GgufTensor *t = gguf_tensor_at(m->file, i);
    CHECK(t->type == GGUF_TENSOR_F32);
    for (gsize j = 0; j < t->nbytes / sizeof(float); j++) {
      float v;
      memcpy(&v, (const char *)t->data + j * sizeof v, sizeof v);
      CHECK(isfinite(v));
    }
  }
}

/* Text for the encoder: the input's first bytes, with separators mixed in
 * so that words, blank runs and line ends all occur. */
static void
run_encoder(const TxlTokenizer *tok, int n_token, const uint8_t *data,
            size_t size, EncOut *out)
{
  char text[48];
  size_t n = MIN(size, sizeof text);
  for (size_t i = 0; i < n; i++) {
    uint8_t b = data[i];
    text[i] = (i % 7 == 6) ? ((b & 1) ? '\n' : ' ') : (char)b;
  }
  memset(out, 0, sizeof *out);
  out->n_token = n_token;
  TxlEncoder *enc = txl_encoder_new(tok, on_token, out);
  /* two pieces: ids must not depend on the cut, and finish must flush */
  txl_encoder_push(enc, text, n / 2);
  txl_encoder_push(enc, text + n / 2, n - n / 2);
  txl_encoder_finish(enc);
  txl_encoder_free(enc);
}

static void
run_stream(TxlModel *m, const TxlStreamOptions *o, const EncOut *enc,
           const uint8_t *data, size_t size)
{
  const TxlConfig *c = txl_model_config(m);
  GError *err = NULL;
  TxlStream *s = txl_stream_new(m, o, &err);
  if (!s) {
    check_txl_refusal(err, -1, -1);
    return;
  }
  CHECK(txl_stream_max_segment(s) == MAX_SEG);
  CHECK(txl_stream_mem_len(s) == o->mem_len);
  float probe[1];
  CHECK(!txl_stream_next_logprobs(s, probe, NULL));

  int32_t in[MAX_SEG + 1];
  float lp[MAX_SEG];
  volatile float sink = 0.0f;
  for (int seg = 0; seg < 2; seg++) {
    int n = seg == 0 ? MAX_SEG : 1 + (int)(size % MAX_SEG);
    for (int i = 0; i <= n; i++) {
      int k = seg * (MAX_SEG + 1) + i;
      uint32_t v = enc->n > 0 ? (uint32_t)enc->ids[k % enc->n]
                              : (uint32_t)data[(size_t)k % size] * 2654435761u;
      in[i] = (int32_t)(v % (uint32_t)c->n_token);
    }
    CHECK(txl_stream_forward(s, in, n, in + 1, lp, &err));
    for (int i = 0; i < n; i++)
      sink += lp[i];
    CHECK(txl_stream_mem_used(s) <= o->mem_len);
  }
  /* refused calls leave the stream as it was */
  int32_t bad = c->n_token;
  CHECK(!txl_stream_forward(s, &bad, 1, NULL, NULL, &err));
  check_txl_refusal(err, -1, -1);
  err = NULL;
  CHECK(!txl_stream_forward(s, in, MAX_SEG + 1, NULL, NULL, &err));
  check_txl_refusal(err, -1, -1);
  err = NULL;

  float *full = g_new(float, c->n_token);
  CHECK(txl_stream_next_logprobs(s, full, &err));
  for (int i = 0; i < c->n_token; i++)
    sink += full[i];
  g_free(full);
  (void)txl_stream_state_bytes(s);
  txl_stream_reset(s);
  CHECK(txl_stream_mem_used(s) == 0);
  txl_stream_free(s);
  (void)sink;

  /* the scorer on the same options: partial segments, then finish */
  int scored = 0;
  TxlScorer *sc = txl_scorer_new(m, o, 3, on_score, &scored, &err);
  if (!sc) {
    check_txl_refusal(err, -1, -1);
    return;
  }
  CHECK(txl_scorer_push(sc, in, 2, &err));
  CHECK(txl_scorer_push(sc, in, 5, &err));
  CHECK(txl_scorer_finish(sc, &err));
  CHECK(txl_scorer_tokens_seen(sc) == 7 && scored == 6);
  txl_scorer_free(sc);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  /* one thread: reproducible runs, and no worker threads for ASan to chase */
  setenv("TXL_NUM_THREADS", "1", 1);
  setenv("TXL_MEMORY_LIMIT", "8M", 1);
  CHECK(txl_num_threads() == 1);
  return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  TxlModel *m = PARSED(txl_model_from_buffer, data, size, -1, -1);
  if (!m)
    return 0;
  const TxlConfig *c = txl_model_config(m);
  CHECK(txl_config_validate(c, NULL));
  check_finite(m);
  /* the defaults passed the budget at load: a stream with them opens
   * (unless same_length without memory, which no budget can fix) */
  GError *err = NULL;
  TxlStream *def = txl_stream_new(m, NULL, &err);
  CHECK(def || (c->same_length && c->mem_len == 0));
  if (!def) {
    check_txl_refusal(err, -1, -1);
    err = NULL;
  }
  txl_stream_free(def);
  const TxlTokenizer *tok = txl_model_tokenizer(m);
  CHECK(txl_tokenizer_n_tokens(tok) == c->n_token);
  CHECK(strlen(txl_model_id(m)) == 64 && strlen(txl_model_vocab_id(m)) == 64);

  volatile size_t sink = 0;
  for (int i = -1; i <= c->n_token && i < 4096; i++) {
    gsize len;
    const char *sym = txl_tokenizer_symbol(tok, i, &len);
    CHECK((sym != NULL) == (i >= 0 && i < c->n_token));
    for (gsize j = 0; j < len; j++)
      sink += (uint8_t)sym[j];
  }
  (void)sink;

  EncOut enc;
  run_encoder(tok, c->n_token, data, size, &enc);
  if (txl_tokenizer_type(tok) == TXL_TOKENIZER_NONE)
    CHECK(enc.n == 0);

  uint8_t sel = data[size - 1];
  TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
  o.max_segment = MAX_SEG;
  o.memory = (sel & 1) ? TXL_MEMORY_HIDDEN : TXL_MEMORY_KV;
  o.mem_len = MIN(c->mem_len, (sel >> 1) & MAX_MEM);
  if (sel & 0x10)
    o.same_length = (sel >> 5) & 1;
  run_stream(m, &o, &enc, data, size);

  txl_model_unref(m);
  return 0;
}
