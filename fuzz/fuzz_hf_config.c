/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the Hugging Face importer's JSON handling.
 *
 * The input is config.json, optionally followed by a NUL byte and
 * tokenizer_config.json; a NUL also puts a fixed 16-symbol vocab.txt next
 * to them.  The weights are fixed: the small valid model.safetensors of
 * the 'plain' seed config (fuzz/corpus-safetensors/hf_plain.safetensors,
 * path compiled in), copied once into a private temporary checkpoint
 * directory.  Each input is written there and txl_convert_hf() converts
 * the directory.  A conversion that succeeds must produce a file that
 * txl_model_load() accepts; the output is deleted after every run, and
 * the directory when the process exits. */
#include "convert_hf.h"
#include "fuzz_check.h"

#include <glib/gstdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_HF_WEIGHTS
#error "FUZZ_HF_WEIGHTS must name the fixed model.safetensors"
#endif

static char *root, *ckpt, *config_path, *tokcfg_path, *vocab_path, *out_path;

static void
cleanup(void)
{
  g_unlink(out_path);
  g_unlink(config_path);
  g_unlink(tokcfg_path);
  g_unlink(vocab_path);
  g_autofree char *w = g_build_filename(ckpt, "model.safetensors", NULL);
  g_unlink(w);
  g_rmdir(ckpt);
  g_rmdir(root);
}

static void
put(const char *path, const void *data, gsize len)
{
  CHECK(g_file_set_contents(path, data, (gssize)len, NULL));
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  setenv("TXL_NUM_THREADS", "1", 1);
  /* memory-backed when possible: every run writes and fsyncs a file */
  const char *base = g_file_test("/dev/shm", G_FILE_TEST_IS_DIR)
                         ? "/dev/shm" : g_get_tmp_dir();
  root = g_build_filename(base, "fuzz_hf_config.XXXXXX", NULL);
  CHECK(g_mkdtemp(root) != NULL);
  ckpt = g_build_filename(root, "ckpt", NULL);
  CHECK(g_mkdir(ckpt, 0700) == 0);
  config_path = g_build_filename(ckpt, "config.json", NULL);
  tokcfg_path = g_build_filename(ckpt, "tokenizer_config.json", NULL);
  vocab_path = g_build_filename(ckpt, "vocab.txt", NULL);
  out_path = g_build_filename(root, "out.gguf", NULL);

  g_autofree char *weights = NULL;
  gsize wlen;
  if (!g_file_get_contents(FUZZ_HF_WEIGHTS, &weights, &wlen, NULL)) {
    g_printerr("fuzz_hf_config: cannot read %s\n", FUZZ_HF_WEIGHTS);
    abort();
  }
  g_autofree char *w = g_build_filename(ckpt, "model.safetensors", NULL);
  put(w, weights, wlen);
  atexit(cleanup);
  return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const uint8_t *nul = memchr(data, 0, size);
  size_t clen = nul ? (size_t)(nul - data) : size;
  put(config_path, data, clen);
  if (nul) {
    GString *v = g_string_new("<eos>\n<unk>\n");
    for (int i = 2; i < 16; i++)
      g_string_append_printf(v, "w%d\n", i);
    put(vocab_path, v->str, v->len);
    g_string_free(v, TRUE);
    put(tokcfg_path, nul + 1, size - clen - 1);
  } else {
    g_unlink(vocab_path);
    g_unlink(tokcfg_path);
  }

  GError *err = NULL;
  if (txl_convert_hf(ckpt, out_path, &err)) {
    CHECK(err == NULL);
    TxlModel *m = txl_model_load(out_path, &err);
    CHECK(m && !err);
    CHECK(txl_tokenizer_type(txl_model_tokenizer(m)) ==
          (nul ? TXL_TOKENIZER_WORD : TXL_TOKENIZER_NONE));
    txl_model_unref(m);
    CHECK(g_unlink(out_path) == 0);
  } else {
    check_txl_refusal(err, -1, -1);
    CHECK(!g_file_test(out_path, G_FILE_TEST_EXISTS));
  }
  /* nothing left behind: the converter checks its output under a
   * temporary name before putting it in place */
  GDir *dir = g_dir_open(root, 0, NULL);
  CHECK(dir);
  const char *name;
  while ((name = g_dir_read_name(dir)))
    CHECK(strcmp(name, "ckpt") == 0);
  g_dir_close(dir);
  return 0;
}
