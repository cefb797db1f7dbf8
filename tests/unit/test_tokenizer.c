/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tokenizers: ids, lines and offsets depend only on the concatenated
 * input, never on how it was split; byte tokens cover any bytes. */
#include "testutil.h"
#include "tu_test.h"

TU_TEST("/tokenizer/word", test_word)
{
  char *path;
  TxlModel *m = tu_word_model(&path, FALSE);
  const TxlTokenizer *tok = txl_model_tokenizer(m);
  g_assert_cmpint(txl_tokenizer_type(tok), ==, TXL_TOKENIZER_WORD);
  const char *text = "the cat  sat\tMat\nzebra the\n\ncat";
  gsize len = strlen(text);
  Toks whole = tu_encode(tok, text, len, len, NULL);
  static const int32_t want[] = { 2, 3, 4, 5, 0, 1, 2, 0, 0, 3, 0 };
  static const gint64 want_line[] = { 1, 1, 1, 1, 1, 2, 2, 2, 3, 4, 4 };
  g_assert_cmpmem(whole.ids->data, whole.ids->len * 4, want, sizeof want);
  g_assert_cmpmem(whole.lines->data, whole.lines->len * 8, want_line,
                  sizeof want_line);
  g_assert_cmpuint(g_array_index(whole.starts, gsize, 1), ==, 4); /* "cat" */
  g_assert_cmpuint(g_array_index(whole.ends, gsize, 5), ==, 22);  /* "zebra" */
  for (gsize piece = 1; piece < 9; piece++) {
    Toks t = tu_encode(tok, text, len, piece, NULL);
    toks_assert_same(&whole, &t);
    toks_free(&t);
  }
  gsize sl;
  const char *sym = txl_tokenizer_symbol(tok, 3, &sl);
  g_assert_cmpmem(sym, sl, "cat", 3);
  g_assert_null(txl_tokenizer_symbol(tok, 300, &sl));
  toks_free(&whole);
  tu_model_done(m, path);

  /* lower_case folds before lookup: "Mat" is then unknown, "MAT" too */
  m = tu_word_model(&path, TRUE);
  Toks t = tu_encode(txl_model_tokenizer(m), "THE Cat MAT", 11, 3, NULL);
  static const int32_t want_lc[] = { 2, 3, 1, 0 };
  g_assert_cmpmem(t.ids->data, t.ids->len * 4, want_lc, sizeof want_lc);
  toks_free(&t);
  tu_model_done(m, path);
}

TU_TEST("/tokenizer/bytes", test_bytes)
{
  char *path;
  TxlModel *m = tu_small_model(1, &path);
  const TxlTokenizer *tok = txl_model_tokenizer(m);
  char junk[4096];
  GRand *r = g_rand_new_with_seed(3);
  for (gsize i = 0; i < sizeof junk; i++)
    junk[i] = (char)g_rand_int_range(r, 0, 256);
  g_rand_free(r);
  junk[10] = '\0';
  junk[11] = '\n';
  Toks whole = tu_encode(tok, junk, sizeof junk, sizeof junk, NULL);
  g_assert_cmpuint(whole.ids->len, ==, sizeof junk);
  for (gsize i = 0; i < sizeof junk; i++)
    g_assert_cmpint(g_array_index(whole.ids, int32_t, i), ==, (guchar)junk[i]);
  g_assert_cmpint(g_array_index(whole.lines, gint64, 11), ==, 1);
  g_assert_cmpint(g_array_index(whole.lines, gint64, 12), ==, 2);
  Toks ones = tu_encode(tok, junk, sizeof junk, 1, NULL);
  toks_assert_same(&whole, &ones);
  toks_free(&whole);
  toks_free(&ones);
  tu_model_done(m, path);
}

TU_MAIN()
