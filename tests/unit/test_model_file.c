/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A model file that is truncated, corrupt, inconsistent or hostile is
 * refused with a message naming what is wrong, and never crashes.  (The
 * container parser itself is covered by test_gguf and the fuzzer.) */
#include "testutil.h"
#include "model_check.h"

#include <float.h>
#include "tu_test.h"

static char *
write_cfg(const TxlConfig *c, const char *skip)
{
  return tu_write_model(c, 7, skip);
}

static void
expect_refused(const char *path, const char *needle)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = txl_model_load(path, &err);
  g_assert_null(m);
  g_assert_nonnull(err);
  g_assert_true(err->domain == TXL_ERROR);
  if (needle && !strstr(err->message, needle))
    g_error("message '%s' does not mention '%s'", err->message, needle);
}

TU_TEST("/model-file/valid", test_valid_loads)
{
  TxlConfig c;
  tu_small_config(&c);
  g_autofree char *p = write_cfg(&c, NULL);
  TxlModel *m = tu_load(p);
  g_assert_cmpint(txl_model_config(m)->n_token, ==, 300);
  g_assert_cmpint(strlen(txl_model_id(m)), ==, 64);
  txl_model_unref(m);
  tu_remove(p);
}

TU_TEST("/model-file/missing-tensor", test_missing_tensor_named)
{
  TxlConfig c;
  tu_small_config(&c);
  g_autofree char *p = write_cfg(&c, "blk.1.ffn_up.bias");
  expect_refused(p, "blk.1.ffn_up.bias");
  tu_remove(p);
  g_autofree char *q = write_cfg(&c, "out_proj.2");
  expect_refused(q, "out_proj.2");
  tu_remove(q);
}

TU_TEST("/model-file/shape-mismatch", test_shape_mismatch_named)
{
  /* weights written for one config, header claiming another */
  TxlConfig c, lie;
  tu_small_config(&c);
  lie = c;
  lie.d_inner = 65;
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&lie, w);
  gguf_writer_add_string(w, "tokenizer.type", "byte");
  tu_add_weights(w, &c, 1, NULL);
  g_autofree char *p = tu_write_gguf(w);
  expect_refused(p, "blk.0.ffn_up.weight");
  expect_refused(p, "expected (65, 32)");
  tu_remove(p);
}

TU_TEST("/model-file/extra-tensor", test_extra_tensor_refused)
{
  TxlConfig c;
  tu_small_config(&c);
  c.tie_weight = TRUE;
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&c, w);
  gguf_writer_add_string(w, "tokenizer.type", "byte");
  tu_add_weights(w, &c, 1, NULL);
  float v[4] = { 0 };
  uint64_t ne[1] = { 4 };
  /* a tied copy stored anyway */
  gguf_writer_add_tensor(w, "out.0.weight", GGUF_TENSOR_F32, 1, ne, v, sizeof v);
  g_autofree char *p = tu_write_gguf(w);
  expect_refused(p, "out.0.weight");
  tu_remove(p);
}

/* Out-of-range and inconsistent config values, directly and from a file. */
TU_TEST("/model-file/bad-config", test_bad_config_values)
{
  TxlConfig c;
  tu_small_config(&c);
  TxlConfig bad = c;
  g_autoptr(GError) err = NULL;
  bad.cutoffs[1] = 50; /* not increasing */
  g_assert_false(txl_config_validate(&bad, &err));
  g_assert_nonnull(strstr(err->message, "cutoffs[1]"));
  g_clear_error(&err);
  bad = c;
  bad.n_head = 0;
  g_assert_false(txl_config_validate(&bad, &err));
  g_assert_nonnull(strstr(err->message, "n_head"));
  g_clear_error(&err);
  bad = c;
  bad.d_model = 31;
  g_assert_false(txl_config_validate(&bad, &err));
  g_assert_nonnull(strstr(err->message, "d_model"));
  g_clear_error(&err);
  bad = c;
  bad.tgt_len = 4096; /* a hostile default: 32 GiB of scores per stream */
  bad.mem_len = 1 << 20;
  g_assert_false(txl_config_validate(&bad, &err));
  g_assert_nonnull(strstr(err->message, "tgt_len"));
  g_clear_error(&err);
  bad = c;
  bad.div_val = 64; /* 32 / 64^1 rounds to zero */
  g_assert_false(txl_config_validate(&bad, &err));
  g_clear_error(&err);

  /* the same checks run when a file is loaded */
  GgufWriter *w = gguf_writer_new();
  bad = c;
  bad.cutoffs[1] = 50;
  txl_config_write_gguf(&bad, w);
  gguf_writer_add_string(w, "tokenizer.type", "byte");
  g_autofree char *p = tu_write_gguf(w);
  expect_refused(p, "cutoffs");
  tu_remove(p);
}

TU_TEST("/model-file/arch-version-tokenizer", test_wrong_arch_and_version)
{
  TxlConfig c;
  tu_small_config(&c);
  g_autoptr(GError) err = NULL;
  GgufWriter *w = gguf_writer_new();
  gguf_writer_add_string(w, "general.architecture", "llama");
  g_autofree char *p = tu_write_gguf(w);
  expect_refused(p, "llama");
  w = gguf_writer_new();
  gguf_writer_add_string(w, "general.architecture", "transfo-xl");
  gguf_writer_add_u32(w, "txl.format_version", 99);
  g_assert_true(gguf_writer_write(w, p, &err));
  gguf_writer_free(w);
  expect_refused(p, "format_version");
  w = gguf_writer_new();
  txl_config_write_gguf(&c, w);
  gguf_writer_add_string(w, "tokenizer.type", "sentencepiece");
  g_assert_true(gguf_writer_write(w, p, &err));
  gguf_writer_free(w);
  expect_refused(p, "sentencepiece");
  tu_remove(p);
}

TU_TEST("/model-file/truncated-flipped", test_truncated_and_flipped)
{
  TxlConfig c;
  tu_small_config(&c);
  g_autofree char *p = write_cfg(&c, NULL);
  g_autofree char *data = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(p, &data, &len, NULL));
  g_autofree char *q = g_strconcat(p, ".cut", NULL);
  /* every prefix up to the end of the header, then a stride through data */
  for (gsize cut = 0; cut < len; cut += cut < 4096 ? 1 : 997) {
    g_assert_true(g_file_set_contents(q, data, cut, NULL));
    expect_refused(q, NULL);
  }
  /* random byte flips: refused or loaded, never a crash; a loaded model
   * still scores */
  GRand *r = g_rand_new_with_seed(11);
  for (int it = 0; it < 300; it++) {
    g_autofree char *mut = g_memdup2(data, len);
    int flips = g_rand_int_range(r, 1, 4);
    for (int f = 0; f < flips; f++) {
      gsize at = g_rand_int_range(r, 0, MIN(len, 6000));
      mut[at] ^= (char)(1u << g_rand_int_range(r, 0, 8));
    }
    g_assert_true(g_file_set_contents(q, mut, len, NULL));
    g_autoptr(GError) err = NULL;
    TxlModel *m = txl_model_load(q, &err);
    if (m) {
      TxlStream *s = txl_stream_new(m, NULL, &err);
      if (s) {
        int32_t in[3] = { 1, 2, 3 };
        float lp[3];
        txl_stream_forward(s, in, 3, in, lp, NULL);
        txl_stream_free(s);
      }
      g_clear_error(&err);
      txl_model_unref(m);
    } else {
      g_assert_nonnull(err);
    }
  }
  g_rand_free(r);
  g_remove(q);
  tu_remove(p);
}

TU_TEST("/model-file/missing-empty", test_missing_and_empty_file)
{
  expect_refused("/nonexistent/dir/model.gguf", "model.gguf");
  g_autoptr(GError) err = NULL;
  g_autofree char *dir = g_dir_make_tmp("txl-test-XXXXXX", &err);
  g_autofree char *p = g_build_filename(dir, "empty.gguf", NULL);
  g_assert_true(g_file_set_contents(p, "", 0, NULL));
  expect_refused(p, "empty.gguf");
  tu_remove(p);
}

static gboolean
other_key(const char *k, gconstpointer key)
{
  return strcmp(k, key) != 0;
}

/* The file q with one txl.anomaly.* key replaced through add(). */
typedef void (*AddKey)(GgufWriter *w, const char *key);
static char *
with_key(const char *q, const char *key, AddKey add)
{
  g_autoptr(GError) err = NULL;
  GgufFile *f = gguf_open(q, &err);
  g_assert_no_error(err);
  GgufWriter *w = gguf_writer_new();
  gguf_writer_copy_keys(w, f, other_key, key);
  add(w, key);
  gguf_writer_copy_tensors(w, f);
  char *out = g_strconcat(q, ".bad", NULL);
  g_assert_true(gguf_writer_write(w, out, &err));
  gguf_writer_free(w);
  gguf_close(f);
  return out;
}

static void add_neg(GgufWriter *w, const char *k) { gguf_writer_add_f64(w, k, -1.0); }
static void add_nan(GgufWriter *w, const char *k) { gguf_writer_add_f64(w, k, NAN); }
static void add_bogus(GgufWriter *w, const char *k) { gguf_writer_add_string(w, k, "bogus"); }
static void add_paren(GgufWriter *w, const char *k) { gguf_writer_add_string(w, k, "blk_(["); }
static void add_group(GgufWriter *w, const char *k) { gguf_writer_add_u32(w, k, 3); }
static void add_u32(GgufWriter *w, const char *k) { gguf_writer_add_u32(w, k, 1); }

TU_TEST("/model-file/calibration", test_calibration)
{
  TxlConfig c;
  tu_small_config(&c);
  g_autofree char *p = write_cfg(&c, NULL);
  g_autofree char *q = g_strconcat(p, ".cal", NULL);
  g_autoptr(GError) err = NULL;
  TxlCalibration cal = { .sessions = TRUE, .session_key = "blk_(-?[0-9]+)",
                         .session_key_group = 1, .session_score = 3,
                         .session_threshold = 0.29201234567890123,
                         .line_threshold_bpb = 1.25, .rule = "by hand" };
  g_assert_true(txl_model_file_set_calibration(p, q, &cal, &err));
  g_assert_no_error(err);
  TxlModel *m0 = tu_load(p), *m1 = tu_load(q);
  g_assert_null(txl_model_calibration(m0));
  const TxlCalibration *r = txl_model_calibration(m1);
  g_assert_nonnull(r);
  g_assert_true(r->sessions);
  g_assert_cmpstr(r->session_key, ==, cal.session_key);
  g_assert_cmpint(r->session_key_group, ==, 1);
  g_assert_cmpint(r->session_score, ==, 3);
  g_assert_false(r->session_end_marker);
  g_assert_true(r->session_threshold == cal.session_threshold); /* f64 */
  g_assert_true(r->line_threshold_bpb == 1.25);
  g_assert_cmpstr(r->rule, ==, "by hand");
  g_assert_cmpstr(txl_model_vocab_id(m0), ==, txl_model_vocab_id(m1));
  /* everything else is copied as it was: keys and tensors */
  GgufFile *f0 = gguf_open(p, &err), *f1 = gguf_open(q, &err);
  g_assert_no_error(err);
  gsize n_cal = 0;
  for (gsize i = 0; i < gguf_n_keys(f1); i++)
    n_cal += g_str_has_prefix(gguf_key_at(f1, i, NULL, NULL, NULL),
                              "txl.anomaly.");
  g_assert_cmpuint(gguf_n_keys(f1), ==, gguf_n_keys(f0) + n_cal);
  for (gsize i = 0; i < gguf_n_keys(f0); i++) {
    uint32_t t0, t1;
    const void *r0, *r1;
    gsize l0, l1;
    const char *k = gguf_key_at(f0, i, &t0, &r0, &l0);
    const char *k1 = gguf_key_at(f1, i, &t1, &r1, &l1);
    g_assert_cmpstr(k, ==, k1);
    g_assert_true(t0 == t1 && l0 == l1 && memcmp(r0, r1, l0) == 0);
  }
  g_assert_cmpuint(gguf_n_tensors(f0), ==, gguf_n_tensors(f1));
  for (gsize i = 0; i < gguf_n_tensors(f0); i++) {
    const GgufTensor *a = gguf_tensor_at(f0, i), *b = gguf_tensor_at(f1, i);
    g_assert_cmpstr(a->name, ==, b->name);
    g_assert_true(a->nbytes == b->nbytes &&
                  memcmp(a->data, b->data, a->nbytes) == 0);
  }
  gguf_close(f0);
  gguf_close(f1);
  txl_model_unref(m0);
  txl_model_unref(m1);

  /* replaced in place: the old keys go */
  TxlCalibration one = { .sessions = FALSE, .session_score = 0,
                         .line_threshold_bpb = 2.5 };
  g_assert_true(txl_model_file_set_calibration(q, q, &one, &err));
  g_assert_no_error(err);
  TxlModel *m2 = tu_load(q);
  r = txl_model_calibration(m2);
  g_assert_true(r && !r->sessions && !r->session_key && !r->rule &&
                r->session_score == 0 && r->line_threshold_bpb == 2.5 &&
                r->session_threshold == 0);
  txl_model_unref(m2);
  /* values that cannot be written */
  TxlCalibration bad = one;
  bad.line_threshold_bpb = -1;
  g_assert_false(txl_model_file_set_calibration(q, q, &bad, &err));
  g_clear_error(&err);
  bad = one;
  bad.sessions = TRUE; /* without a key */
  g_assert_false(txl_model_file_set_calibration(q, q, &bad, &err));
  g_clear_error(&err);

  /* hostile calibrations: the model does not load, with a clear message */
  g_assert_true(txl_model_file_set_calibration(p, q, &cal, &err));
  struct { const char *key; AddKey add; const char *needle; } cases[] = {
    { "txl.anomaly.session_threshold", add_neg, "threshold" },
    { "txl.anomaly.line_threshold_bpb", add_nan, "threshold" },
    { "txl.anomaly.mode", add_bogus, "mode" },
    { "txl.anomaly.mode", add_u32, "txl.anomaly.mode" },
    { "txl.anomaly.session_key", add_paren, "regex" },
    { "txl.anomaly.session_key_group", add_group, "group" },
    { "txl.anomaly.session_score", add_bogus, "score" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *b = with_key(q, cases[i].key, cases[i].add);
    expect_refused(b, cases[i].needle);
    tu_remove(b);
  }
  tu_remove(q);
  tu_remove(p);
}

/* Lengths a file may declare "in range" that would make a stream need
 * gigabytes: refused at load, before anything of that size is allocated,
 * with a message naming the keys and the knob; the knob lets them in, and
 * a stream asking for more than it allows is refused the same way. */
TU_TEST("/model-file/memory-budget", test_memory_budget)
{
  g_unsetenv("TXL_MEMORY_LIMIT");
  TxlConfig c;
  tu_small_config(&c);
  struct { int mem_len, tgt_len; } big[] = {
    { 1 << 20, 1 },   /* the memory itself */
    { 1 << 20, 200 }, /* attention scratch */
    { 200, 16000 },   /* long segments: scores grow with their square */
    { 600000, 400 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(big); i++) {
    c.mem_len = big[i].mem_len;
    c.tgt_len = big[i].tgt_len;
    g_autofree char *p = write_cfg(&c, NULL);
    expect_refused(p, "TXL_MEMORY_LIMIT");
    expect_refused(p, "txl.mem_len");
    tu_remove(p);
  }
  /* the limit is settable: 8G admits mem_len 2^20 with a short segment
   * (loading allocates nothing of it), and a stream within it works */
  c.mem_len = 1 << 20;
  c.tgt_len = 1;
  g_autofree char *p = write_cfg(&c, NULL);
  g_setenv("TXL_MEMORY_LIMIT", "8G", TRUE);
  g_autoptr(GError) err = NULL;
  TxlModel *m = tu_load(p);
  g_setenv("TXL_MEMORY_LIMIT", "64M", TRUE);
  TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
  o.mem_len = 16;
  o.max_segment = 4;
  TxlStream *s = txl_stream_new(m, &o, &err);
  g_assert_no_error(err);
  txl_stream_free(s);
  o.mem_len = 1 << 20; /* what a snapshot or an option could ask for */
  g_assert_null(txl_stream_new(m, &o, &err));
  g_assert_nonnull(strstr(err->message, "over the limit of 64.0 MiB"));
  g_clear_error(&err);
  /* a malformed limit is an error, not a default */
  const char *bad[] = { "abc", "0", "12X", "-5", "99999999999T" };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_setenv("TXL_MEMORY_LIMIT", bad[i], TRUE);
    g_assert_null(txl_stream_new(m, &o, &err));
    g_assert_nonnull(strstr(err->message, "is not a size"));
    g_clear_error(&err);
    expect_refused(p, bad[i]);
  }
  g_unsetenv("TXL_MEMORY_LIMIT");
  txl_model_unref(m);
  tu_remove(p);
}

/* One flipped exponent bit (inf) or a NaN anywhere in the weights: the
 * model is refused, naming the tensor and the index. */
TU_TEST("/model-file/non-finite", test_non_finite_weights)
{
  TxlConfig c;
  tu_small_config(&c);
  struct { const char *tensor; gsize index; float v; const char *what; } t[] = {
    { "blk.1.ffn_up.weight", 77, INFINITY, "holds inf at index 77" },
    { "emb.2.weight", 3, -INFINITY, "holds -inf at index 3" },
    { "blk.0.attn_norm.bias", 31, NAN, "holds NaN at index 31" },
    { "cluster.bias", 0, NAN, "'cluster.bias' holds NaN" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(t); i++) {
    g_autofree char *p = write_cfg(&c, NULL);
    tu_poison_weight(p, t[i].tensor, t[i].index, t[i].v);
    expect_refused(p, t[i].what);
    expect_refused(p, t[i].tensor);
    tu_remove(p);
  }
  /* the largest finite floats are weights like any other */
  g_autofree char *p = write_cfg(&c, NULL);
  tu_poison_weight(p, "blk.0.ffn_down.weight", 5, FLT_MAX);
  tu_poison_weight(p, "blk.0.ffn_down.weight", 6, -FLT_MAX);
  TxlModel *m = tu_load(p);
  txl_model_unref(m);
  tu_remove(p);
  /* the scan itself, at every position of a block and across blocks */
  float v[9000];
  for (gsize i = 0; i < G_N_ELEMENTS(v); i++)
    v[i] = (float)i - 4500.0f;
  g_assert_cmpint(txl_first_nonfinite(v, G_N_ELEMENTS(v)), ==, -1);
  for (gsize at = 0; at < G_N_ELEMENTS(v); at += 997) {
    float keep = v[at];
    v[at] = NAN;
    g_assert_cmpint(txl_first_nonfinite(v, G_N_ELEMENTS(v)), ==, (gint64)at);
    v[at] = keep;
  }
}

TU_MAIN()
