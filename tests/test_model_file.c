/* A model file that is truncated, corrupt, inconsistent or hostile is
 * refused with a message naming what is wrong, and never crashes.  (The
 * container parser itself is covered by test_gguf and the fuzzer.) */
#include "testutil.h"

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

static void
test_valid_loads(void)
{
  TxlConfig c;
  tu_small_config(&c);
  g_autofree char *p = write_cfg(&c, NULL);
  g_autoptr(GError) err = NULL;
  TxlModel *m = txl_model_load(p, &err);
  g_assert_no_error(err);
  g_assert_cmpint(txl_model_config(m)->n_token, ==, 300);
  g_assert_cmpint(strlen(txl_model_id(m)), ==, 64);
  txl_model_unref(m);
  tu_remove(p);
}

static void
test_missing_tensor_named(void)
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

static void
test_shape_mismatch_named(void)
{
  /* weights written for one config, header claiming another */
  TxlConfig c, lie;
  tu_small_config(&c);
  lie = c;
  lie.d_inner = 65;
  g_autoptr(GError) err = NULL;
  g_autofree char *dir = g_dir_make_tmp("txl-test-XXXXXX", &err);
  g_autofree char *p = g_build_filename(dir, "m.gguf", NULL);
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&lie, w);
  gguf_writer_add_string(w, "tokenizer.type", "byte");
  tu_add_weights(w, &c, 1, NULL);
  g_assert_true(gguf_writer_write(w, p, &err));
  gguf_writer_free(w);
  expect_refused(p, "blk.0.ffn_up.weight");
  expect_refused(p, "expected (65, 32)");
  tu_remove(p);
}

static void
test_extra_tensor_refused(void)
{
  TxlConfig c;
  tu_small_config(&c);
  c.tie_weight = TRUE;
  g_autoptr(GError) err = NULL;
  g_autofree char *dir = g_dir_make_tmp("txl-test-XXXXXX", &err);
  g_autofree char *p = g_build_filename(dir, "m.gguf", NULL);
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&c, w);
  gguf_writer_add_string(w, "tokenizer.type", "byte");
  tu_add_weights(w, &c, 1, NULL);
  float v[4] = { 0 };
  uint64_t ne[1] = { 4 };
  /* a tied copy stored anyway */
  gguf_writer_add_tensor(w, "out.0.weight", GGUF_TENSOR_F32, 1, ne, v, sizeof v);
  g_assert_true(gguf_writer_write(w, p, &err));
  gguf_writer_free(w);
  expect_refused(p, "out.0.weight");
  tu_remove(p);
}

/* Out-of-range and inconsistent config values, directly and from a file. */
static void
test_bad_config_values(void)
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
  g_autofree char *dir = g_dir_make_tmp("txl-test-XXXXXX", &err);
  g_autofree char *p = g_build_filename(dir, "m.gguf", NULL);
  g_assert_true(gguf_writer_write(w, p, &err));
  gguf_writer_free(w);
  expect_refused(p, "cutoffs");
  tu_remove(p);
}

static void
test_wrong_arch_and_version(void)
{
  TxlConfig c;
  tu_small_config(&c);
  g_autoptr(GError) err = NULL;
  g_autofree char *dir = g_dir_make_tmp("txl-test-XXXXXX", &err);
  g_autofree char *p = g_build_filename(dir, "m.gguf", NULL);
  GgufWriter *w = gguf_writer_new();
  gguf_writer_add_string(w, "general.architecture", "llama");
  g_assert_true(gguf_writer_write(w, p, &err));
  gguf_writer_free(w);
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

static void
test_truncated_and_flipped(void)
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

static void
test_missing_and_empty_file(void)
{
  expect_refused("/nonexistent/dir/model.gguf", "model.gguf");
  g_autoptr(GError) err = NULL;
  g_autofree char *dir = g_dir_make_tmp("txl-test-XXXXXX", &err);
  g_autofree char *p = g_build_filename(dir, "empty.gguf", NULL);
  g_assert_true(g_file_set_contents(p, "", 0, NULL));
  expect_refused(p, "empty.gguf");
  tu_remove(p);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/model-file/valid", test_valid_loads);
  g_test_add_func("/model-file/missing-tensor", test_missing_tensor_named);
  g_test_add_func("/model-file/shape-mismatch", test_shape_mismatch_named);
  g_test_add_func("/model-file/extra-tensor", test_extra_tensor_refused);
  g_test_add_func("/model-file/bad-config", test_bad_config_values);
  g_test_add_func("/model-file/arch-version-tokenizer", test_wrong_arch_and_version);
  g_test_add_func("/model-file/truncated-flipped", test_truncated_and_flipped);
  g_test_add_func("/model-file/missing-empty", test_missing_and_empty_file);
  return g_test_run();
}
