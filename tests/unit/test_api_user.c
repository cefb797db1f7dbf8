/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libtxl as an outside program sees it: only include/txl.h, linked against
 * the shared library, which exports the TXL_API functions and nothing
 * else.  Scores text with the bundled model through the encoder and the
 * scorer, checks that a snapshot continues bit for bit, and that an
 * internal function is not exported. */
#include <dlfcn.h>
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "txl.h"

typedef struct {
  GArray *ids;
} Ids;

static void on_token(int32_t id, gint64 line, gsize byte_start, gsize byte_end,
                     gpointer user_data) {
  g_array_append_val(((Ids *)user_data)->ids, id);
}

static void on_score(gint64 pos, int32_t token, float logprob,
                     gpointer user_data) {
  g_array_append_val((GArray *)user_data, logprob);
}

static const char text[] =
    "Nov 23 10:00:01 host sshd[101]: Accepted publickey for alice\n"
    "Nov 23 10:00:02 host sshd[101]: session opened for user alice\n"
    "Nov 23 10:00:05 host CRON[202]: (root) CMD (run-parts /etc/cron.hourly)\n"
    "Nov 23 10:00:09 host sshd[101]: session closed for user alice\n";

static GArray *encode(const TxlModel *model) {
  Ids ids = {g_array_new(FALSE, FALSE, sizeof(int32_t))};
  TxlEncoder *enc = txl_encoder_new(txl_model_tokenizer(model), on_token, &ids);
  txl_encoder_push(enc, text, strlen(text));
  txl_encoder_finish(enc);
  txl_encoder_free(enc);
  return ids.ids;
}

static GArray *score(TxlModel *model, GArray *ids, gsize cut) {
  GArray *lp = g_array_new(FALSE, FALSE, sizeof(float));
  TxlStreamOptions opts = TXL_STREAM_OPTIONS_DEFAULT;
  GError *error = NULL;
  TxlScorer *sc = txl_scorer_new(model, &opts, 0, on_score, lp, &error);
  g_assert_no_error(error);
  g_assert_true(txl_scorer_push(sc, (int32_t *)ids->data, cut, &error));
  if (cut < ids->len) {
    /* through a snapshot file, as another process would continue */
    char *path = g_build_filename(g_get_tmp_dir(), "txl-public-api.snap", NULL);
    g_assert_true(txl_scorer_save(sc, path, &error));
    txl_scorer_free(sc);
    sc = txl_scorer_load(model, path, on_score, lp, &error);
    g_assert_no_error(error);
    g_assert_nonnull(sc);
    g_unlink(path);
    g_free(path);
    g_assert_true(txl_scorer_push(sc, (int32_t *)ids->data + cut, ids->len - cut,
                                  &error));
  }
  g_assert_true(txl_scorer_finish(sc, &error));
  txl_scorer_free(sc);
  return lp;
}

static void test_score_and_resume(void) {
  GError *error = NULL;
  TxlModel *model = txl_model_load(TXL_MODEL_SOURCE, &error);
  g_assert_no_error(error);
  GArray *ids = encode(model);
  g_assert_cmpuint(ids->len, >, 20);
  GArray *whole = score(model, ids, ids->len);
  GArray *resumed = score(model, ids, ids->len / 3);
  g_assert_cmpuint(whole->len, ==, ids->len - 1);
  g_assert_cmpuint(resumed->len, ==, whole->len);
  double total = 0;
  for (guint i = 0; i < whole->len; i++) {
    float a = g_array_index(whole, float, i);
    g_assert_true(isfinite(a) && a <= 0);
    total += a;
  }
  g_assert_cmpint(memcmp(whole->data, resumed->data, whole->len * sizeof(float)),
                  ==, 0);
  /* the bundled model predicts syslog lines better than a uniform guess
   * over its vocabulary */
  int n = txl_tokenizer_n_tokens(txl_model_tokenizer(model));
  g_assert_cmpfloat(-total / whole->len, <, log(n));
  g_array_unref(whole);
  g_array_unref(resumed);
  g_array_unref(ids);
  txl_model_unref(model);
}

/* txl_default_model_path: TXL_MODEL when set (even to a missing file, so
 * that a mistake is an error and not another model); unset, the bundled
 * model, which loads. */
static void test_default_model_path(void) {
  g_setenv("TXL_MODEL", "/nonexistent/m.gguf", TRUE);
  g_assert_cmpstr(txl_default_model_path(), ==, "/nonexistent/m.gguf");
  g_unsetenv("TXL_MODEL");
  const char *path = txl_default_model_path();
  g_assert_nonnull(path);
  GError *error = NULL;
  TxlModel *model = txl_model_load(path, &error);
  g_assert_no_error(error);
  txl_model_unref(model);
}

static void test_hidden_symbols(void) {
  /* public: found; internal (the OpenBLAS entry point, the GGUF reader):
   * not exported by the shared library */
  g_assert_nonnull(dlsym(RTLD_DEFAULT, "txl_model_load"));
  g_assert_null(dlsym(RTLD_DEFAULT, "txl_gemm"));
  g_assert_null(dlsym(RTLD_DEFAULT, "gguf_open"));
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/api-user/score-and-resume", test_score_and_resume);
  g_test_add_func("/api-user/default-model-path", test_default_model_path);
  g_test_add_func("/api-user/hidden-symbols", test_hidden_symbols);
  return g_test_run();
}
