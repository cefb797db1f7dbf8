/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pieces a snapshot carries besides the memory: the float coding
 * (float16/bfloat16 rounding, byte shuffle), the streaming tokenizer's
 * state cut anywhere (mid-line, mid-field, inside a UTF-8 character), the
 * scoring baseline, and named sections in the file. */
#include "baseline.h"
#include "generate.h"
#include "bpe.h"
#include "snapcodec.h"
#include "testutil.h"

#include <math.h>
#include "tu_test.h"

TU_TEST("/snapstate/f16", test_f16)
{
  /* every half value survives a round trip through float */
  for (guint32 h = 0; h < 0x10000; h++) {
    float f = txl_f16_to_f32((guint16)h);
    if (isnan(f))
      continue;
    g_assert_cmpuint(txl_f32_to_f16(f), ==, h);
  }
  /* known values, rounding to nearest even, overflow, subnormals */
  g_assert_cmpuint(txl_f32_to_f16(1.0f), ==, 0x3c00);
  g_assert_cmpuint(txl_f32_to_f16(-2.0f), ==, 0xc000);
  g_assert_cmpuint(txl_f32_to_f16(65504.0f), ==, 0x7bff);
  g_assert_cmpuint(txl_f32_to_f16(1e6f), ==, 0x7c00);
  g_assert_cmpuint(txl_f32_to_f16(1.0f + 1.0f / 2048), ==, 0x3c00); /* tie: even */
  g_assert_cmpuint(txl_f32_to_f16(1.0f + 3.0f / 2048), ==, 0x3c02); /* tie: even */
  g_assert_cmpuint(txl_f32_to_f16(5.960464477539063e-08f), ==, 0x0001);
  g_assert_cmpfloat(txl_f16_to_f32(0x0001), ==, 5.960464477539063e-08f);
  g_assert_true(isnan(txl_f16_to_f32(txl_f32_to_f16(NAN))));
  /* the rounding error is at most half a unit in the last place */
  GRand *r = g_rand_new_with_seed(3);
  for (int i = 0; i < 100000; i++) {
    float f = (float)g_rand_double_range(r, -1000, 1000);
    float back = txl_f16_to_f32(txl_f32_to_f16(f));
    g_assert_cmpfloat(fabsf(back - f), <=, fabsf(f) * (1.0f / 2048) + 1e-7f);
    float bb = txl_bf16_to_f32(txl_f32_to_bf16(f));
    g_assert_cmpfloat(fabsf(bb - f), <=, fabsf(f) * (1.0f / 256));
  }
  g_rand_free(r);
  g_assert_cmpuint(txl_f32_to_bf16(1.0f), ==, 0x3f80);
  g_assert_true(isnan(txl_bf16_to_f32(txl_f32_to_bf16(NAN))));
}

TU_TEST("/snapstate/codec", test_codec)
{
  enum { N = 1001 };
  float in[N], out[N];
  GRand *r = g_rand_new_with_seed(4);
  for (int i = 0; i < N; i++)
    in[i] = (float)g_rand_double_range(r, -3, 3);
  g_rand_free(r);
  guint8 buf[4 * N], scratch[4 * N];
  for (int p = TXL_SNAPSHOT_F32; p <= TXL_SNAPSHOT_BF16; p++)
    for (int sh = 0; sh <= 1; sh++) {
      txl_snapcodec_encode(in, N, p, sh, buf);
      txl_snapcodec_decode(buf, N, p, sh, scratch, out);
      for (int i = 0; i < N; i++) {
        if (p == TXL_SNAPSHOT_F32)
          g_assert_cmpmem(&in[i], 4, &out[i], 4);
        else if (p == TXL_SNAPSHOT_F16)
          g_assert_cmpfloat(out[i], ==, txl_f16_to_f32(txl_f32_to_f16(in[i])));
        else
          g_assert_cmpfloat(out[i], ==, txl_bf16_to_f32(txl_f32_to_bf16(in[i])));
      }
    }
}

/* ---- tokenizer state ------------------------------------------------- */

typedef struct {
  GString *log; /* "id line start end\n" per token */
} Sink;

static void
on_token(int32_t id, gint64 line, gsize start, gsize end, gpointer data)
{
  Sink *s = data;
  g_string_append_printf(s->log, "%d %" G_GINT64_FORMAT " %zu %zu\n", id, line,
                         start, end);
}

/* Whole text in one encoder, against: the first `cut` bytes, the state
 * saved, a new encoder restored from it, the rest. */
static void
check_cuts(const TxlTokenizer *tok, const char *text, gsize len, gsize step)
{
  Sink whole = { g_string_new(NULL) };
  TxlEncoder *e = txl_encoder_new(tok, on_token, &whole);
  txl_encoder_push(e, text, len);
  txl_encoder_finish(e);
  txl_encoder_free(e);
  for (gsize cut = 0; cut <= len; cut += step) {
    Sink a = { g_string_new(NULL) };
    TxlEncoder *e1 = txl_encoder_new(tok, on_token, &a);
    txl_encoder_push(e1, text, cut);
    GBytes *st = txl_encoder_save(e1);
    g_assert_cmpuint(txl_encoder_offset(e1), ==, cut);
    txl_encoder_free(e1);
    TxlEncoder *e2 = txl_encoder_new(tok, on_token, &a);
    g_autoptr(GError) err = NULL;
    g_assert_true(txl_encoder_restore(e2, st, &err));
    g_assert_no_error(err);
    txl_encoder_push(e2, text + cut, len - cut);
    txl_encoder_finish(e2);
    txl_encoder_free(e2);
    g_assert_cmpstr(a.log->str, ==, whole.log->str);
    /* every truncation of the state is refused and changes nothing */
    gsize n;
    const guint8 *d = g_bytes_get_data(st, &n);
    Sink c = { g_string_new(NULL) };
    TxlEncoder *e3 = txl_encoder_new(tok, on_token, &c);
    for (gsize k = 0; k < n; k += 1 + n / 17) {
      GBytes *t = g_bytes_new(d, k);
      GError *terr = NULL;
      g_assert_false(txl_encoder_restore(e3, t, &terr));
      g_assert_nonnull(terr);
      g_error_free(terr);
      g_bytes_unref(t);
    }
    g_assert_cmpint(txl_encoder_line(e3), ==, 1);
    g_assert_cmpuint(txl_encoder_offset(e3), ==, 0);
    txl_encoder_free(e3);
    g_string_free(c.log, TRUE);
    g_bytes_unref(st);
    g_string_free(a.log, TRUE);
  }
  g_string_free(whole.log, TRUE);
}

static const char sample[] =
    "2026-11-22 07:13:25 INFO dfs.DataNode: Receiving blk_-1608999687919862906"
    " src: /10.250.19.102:54106 dest: /10.250.19.102:50010\n"
    "Größe überschritten — naïve café ☃ 0x7fff1234 \xe2\x82\xac\n"
    "   spaces   then\ttab and a very_long_identifier_with_underscores\n"
    "\xff\xfe invalid utf-8 \xc3 cut\n"
    "no newline at the end";

TU_TEST("/snapstate/encoder-bpe", test_encoder_bpe)
{
  for (int norm = 0; norm <= 1; norm++) {
    g_autoptr(GError) err = NULL;
    TxlTokenizer *tok = tu_bpe_tokenizer(sample, sizeof sample - 1, norm, &err);
    g_assert_no_error(err);
    check_cuts(tok, sample, sizeof sample - 1, 1);
    txl_tokenizer_free(tok);
  }
}

TU_TEST("/snapstate/encoder-byte-word", test_encoder_byte_word)
{
  char *path;
  TxlModel *m = tu_small_model(2, &path); /* byte tokenizer */
  g_autoptr(GError) err = NULL;
  const TxlTokenizer *byte = txl_model_tokenizer(m);
  check_cuts(byte, sample, sizeof sample - 1, 3);
  /* a word tokenizer's state does not fit a byte tokenizer */
  char *wpath;
  TxlModel *wm = tu_word_model(&wpath, FALSE);
  const TxlTokenizer *word = txl_model_tokenizer(wm);
  check_cuts(word, sample, sizeof sample - 1, 1);
  Sink s = { g_string_new(NULL) };
  TxlEncoder *we = txl_encoder_new(word, on_token, &s);
  txl_encoder_push(we, "ab", 2);
  GBytes *st = txl_encoder_save(we);
  TxlEncoder *be = txl_encoder_new(byte, on_token, &s);
  g_assert_false(txl_encoder_restore(be, st, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_FORMAT);
  g_bytes_unref(st);
  txl_encoder_free(we);
  txl_encoder_free(be);
  tu_model_done(wm, wpath);
  g_string_free(s.log, TRUE);
  tu_model_done(m, path);
}

/* ---- baseline --------------------------------------------------------- */

TU_TEST("/snapstate/baseline", test_baseline_state)
{
  g_autoptr(GError) err = NULL;
  for (int kind = 0; kind <= 1; kind++)
    for (int cut = 0; cut < 40; cut += 7) {
      TxlBaseline *a = txl_baseline_new(kind, 16, 4, 0.9, &err);
      TxlBaseline *b = txl_baseline_new(kind, 16, 4, 0.9, &err);
      GRand *r = g_rand_new_with_seed(cut);
      for (int i = 0; i < cut; i++)
        txl_baseline_add(a, g_rand_double(r));
      GBytes *st = txl_baseline_save(a);
      g_assert_true(txl_baseline_restore(b, st, &err));
      for (int i = 0; i < 50; i++) {
        double x = g_rand_double(r) * 3, sa = 0, sb = 0;
        g_assert_cmpint(txl_baseline_score(a, x, &sa), ==,
                        txl_baseline_score(b, x, &sb));
        g_assert_cmpmem(&sa, 8, &sb, 8);
        txl_baseline_add(a, x);
        txl_baseline_add(b, x);
      }
      /* another window is refused, and changes nothing */
      TxlBaseline *other = txl_baseline_new(kind, 32, 4, 0.9, &err);
      GError *e = NULL;
      g_assert_false(txl_baseline_restore(other, st, &e));
      g_assert_nonnull(e);
      g_clear_error(&e);
      g_assert_cmpint(txl_baseline_count(other), ==, 0);
      gsize n;
      const guint8 *d = g_bytes_get_data(st, &n);
      GBytes *cut_st = g_bytes_new(d, n - 1);
      g_assert_false(txl_baseline_restore(other, cut_st, &e));
      g_clear_error(&e);
      g_bytes_unref(cut_st);
      txl_baseline_free(other);
      g_bytes_unref(st);
      g_rand_free(r);
      txl_baseline_free(a);
      txl_baseline_free(b);
    }
}

/* ---- sections and precision in the file ------------------------------ */

typedef struct {
  float lp[200];
} Lp;

static void
collect(gint64 pos, int32_t token, float logprob, gpointer data)
{
  Lp *l = data;
  if (pos < 200)
    l->lp[pos] = logprob;
}

TU_TEST("/snapstate/sections-precision", test_sections_precision)
{
  char *path;
  TxlModel *m = tu_small_model(7, &path);
  g_autofree char *snap = tu_beside(path, "s.snap");
  g_autoptr(GError) err = NULL;
  int32_t ids[200];
  for (int i = 0; i < 200; i++)
    ids[i] = (i * 37 + 11) % txl_model_config(m)->n_token;
  Lp whole = { 0 };
  TxlScorer *s = txl_scorer_new(m, NULL, 8, collect, &whole, &err);
  g_assert_true(txl_scorer_push(s, ids, 200, &err));
  txl_scorer_free(s);

  GHashTable *sect = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                           (GDestroyNotify)g_bytes_unref);
  g_hash_table_insert(sect, "tokenizer", g_bytes_new("abc\0def", 7));
  g_hash_table_insert(sect, "empty", g_bytes_new(NULL, 0));
  gsize sizes[3][2];
  for (int p = TXL_SNAPSHOT_F32; p <= TXL_SNAPSHOT_BF16; p++)
    for (int sh = 0; sh <= 1; sh++) {
      Lp got = { 0 };
      s = txl_scorer_new(m, NULL, 8, collect, &got, &err);
      g_assert_true(txl_scorer_push(s, ids, 101, &err));
      TxlSnapshotOptions o = { p, sh, 0 };
      g_assert_true(txl_scorer_save_full(s, snap, &o, sect, &sizes[p][sh],
                                         &err));
      g_assert_no_error(err);
      txl_scorer_free(s);
      GHashTable *back = NULL;
      s = txl_scorer_load_full(m, snap, collect, &got, &back, &err);
      g_assert_no_error(err);
      g_assert_cmpuint(g_hash_table_size(back), ==, 2);
      gsize n;
      const void *d = g_bytes_get_data(g_hash_table_lookup(back, "tokenizer"), &n);
      g_assert_cmpmem(d, n, "abc\0def", 7);
      g_assert_cmpuint(g_bytes_get_size(g_hash_table_lookup(back, "empty")), ==, 0);
      g_hash_table_unref(back);
      g_assert_true(txl_scorer_push(s, ids + 101, 99, &err));
      txl_scorer_free(s);
      double drift = 0;
      for (int i = 101; i < 200; i++)
        drift = MAX(drift, fabs(got.lp[i] - whole.lp[i]));
      if (p == TXL_SNAPSHOT_F32)
        g_assert_cmpfloat(drift, ==, 0.0);
      else /* rounded memory: close, not exact */
        g_assert_cmpfloat(drift, <, p == TXL_SNAPSHOT_F16 ? 1e-2 : 1e-1);
      GString *js = g_string_new(NULL);
      g_assert_true(txl_snapshot_describe(snap, js, &err));
      g_assert_nonnull(strstr(js->str, "\"tokenizer\": 7"));
      g_string_free(js, TRUE);
    }
  g_assert_cmpuint(sizes[TXL_SNAPSHOT_F16][1], <, sizes[TXL_SNAPSHOT_F32][1]);
  /* bad options and section names are refused */
  s = txl_scorer_new(m, NULL, 8, collect, &whole, &err);
  TxlSnapshotOptions bad = { 7, TRUE, 0 };
  GError *e = NULL;
  g_assert_false(txl_scorer_save_full(s, snap, &bad, NULL, NULL, &e));
  g_clear_error(&e);
  g_hash_table_insert(sect, "", g_bytes_new(NULL, 0));
  g_assert_false(txl_scorer_save_full(s, snap, NULL, sect, NULL, &e));
  g_clear_error(&e);
  txl_scorer_free(s);
  g_hash_table_unref(sect);
  g_remove(snap);
  tu_model_done(m, path);
}

/* A generation saved halfway draws the same tokens after a load. */
TU_TEST("/snapstate/generator", test_generator)
{
  char *path;
  TxlModel *m = tu_small_model(9, &path);
  g_autofree char *snap = tu_beside(path, "g.snap");
  g_autoptr(GError) err = NULL;
  TxlSamplerOptions so = { 0.9f, 40, 0.95f, 1234 };
  int32_t prompt[7] = { 5, 17, 99, 3, 250, 8, 1 }, a[30], b[30];
  TxlGenerator *g = txl_generator_new(m, NULL, &so, &err);
  g_assert_true(txl_generator_feed(g, prompt, 7, &err));
  for (int i = 0; i < 30; i++)
    g_assert_true(txl_generator_next(g, &a[i], &err));
  txl_generator_free(g);

  g = txl_generator_new(m, NULL, &so, &err);
  g_assert_true(txl_generator_feed(g, prompt, 7, &err));
  for (int i = 0; i < 12; i++)
    g_assert_true(txl_generator_next(g, &b[i], &err));
  GHashTable *extra = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                            (GDestroyNotify)g_bytes_unref);
  g_hash_table_insert(extra, "mine", g_bytes_new("x", 1));
  g_assert_true(txl_generator_save(g, snap, NULL, extra, NULL, &err));
  g_hash_table_unref(extra);
  txl_generator_free(g);
  TxlSamplerOptions other = so;
  other.seed = 99; /* the saved generator state wins */
  GHashTable *back = NULL;
  g = txl_generator_load(m, snap, &other, &back, &err);
  g_assert_no_error(err);
  g_assert_true(g_hash_table_contains(back, "mine"));
  g_assert_false(g_hash_table_contains(back, "sampler"));
  g_hash_table_unref(back);
  for (int i = 12; i < 30; i++)
    g_assert_true(txl_generator_next(g, &b[i], &err));
  g_assert_cmpmem(a, sizeof a, b, sizeof b);
  txl_generator_free(g);
  /* a scoring snapshot is not a generation */
  TxlScorer *sc = txl_scorer_new(m, NULL, 4, collect, NULL, &err);
  g_assert_true(txl_scorer_save(sc, snap, &err));
  txl_scorer_free(sc);
  GError *e = NULL;
  g_assert_null(txl_generator_load(m, snap, &so, NULL, &e));
  g_assert_error(e, TXL_ERROR, TXL_ERROR_FORMAT);
  g_clear_error(&e);
  g_remove(snap);
  tu_model_done(m, path);
}

TU_MAIN()
