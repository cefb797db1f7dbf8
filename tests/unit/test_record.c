/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Record lines (lib/text/record.h): fields written and read back, control
 * bytes that cannot forge a field, and the encoder skipping headers: a
 * record's tokens are its message's, at its message's offsets, however
 * the input is cut, and across a saved and restored encoder. */
#include "testutil.h"
#include "record.h"
#include "tu_test.h"

#define RS "\x1e"
#define US "\x1f"

TU_TEST("/record/write-read", test_write_read)
{
  TxlRecordField f[] = {
    { "host", "web\n1", -1 }, { "app", "sshd", -1 }, { "bad key", "x", -1 },
    { "empty", "", -1 }, { "pid", "12345", 3 }, { "sev", NULL, -1 },
  };
  GString *s = g_string_new(NULL);
  txl_record_append(s, f, G_N_ELEMENTS(f), "hi" RS "there\r", 9);
  g_assert_cmpstr(s->str, ==, RS "host=web 1" US "app=sshd" US "pid=123" RS
                  "hi there \n");
  gsize h = txl_record_header_len(s->str, s->len);
  g_assert_cmpuint(h, ==, strlen(RS "host=web 1" US "app=sshd" US "pid=123" RS));
  const char *v;
  gsize vl;
  tu_assert_field(s->str, h, "app", "sshd");
  tu_assert_field(s->str, h, "pid", "123");
  g_assert_false(txl_record_get(s->str, h, "sev", &v, &vl));
  g_assert_false(txl_record_get(s->str, h, "ap", &v, &vl));
  /* no fields: a plain line */
  g_string_truncate(s, 0);
  txl_record_append(s, NULL, 0, "plain", 5);
  g_assert_cmpstr(s->str, ==, "plain\n");
  g_assert_cmpuint(txl_record_header_len(s->str, s->len), ==, 0);
  /* not headers: unclosed before the line end, or too long */
  g_assert_cmpuint(txl_record_header_len(RS "a=b\n" RS, 6), ==, 0);
  char *big = g_malloc(TXL_RECORD_MAX_HEADER + 2);
  memset(big, 'x', TXL_RECORD_MAX_HEADER + 2);
  big[0] = TXL_RECORD_RS;
  big[TXL_RECORD_MAX_HEADER - 1] = TXL_RECORD_RS;
  g_assert_cmpuint(txl_record_header_len(big, TXL_RECORD_MAX_HEADER + 2), ==,
                   TXL_RECORD_MAX_HEADER);
  big[TXL_RECORD_MAX_HEADER - 1] = 'x';
  big[TXL_RECORD_MAX_HEADER] = TXL_RECORD_RS;
  g_assert_cmpuint(txl_record_header_len(big, TXL_RECORD_MAX_HEADER + 2), ==, 0);
  g_free(big);
  /* a value too long for a header is cut so that the header still is one;
   * fields after it are left out */
  gchar *huge = g_strnfill(3 * TXL_RECORD_MAX_HEADER, 'v');
  TxlRecordField hf[] = { { "a", "1", -1 }, { "sd", huge, -1 },
                          { "z", "2", -1 } };
  g_string_truncate(s, 0);
  txl_record_append(s, hf, 3, "m", 1);
  h = txl_record_header_len(s->str, s->len);
  g_assert_cmpuint(h, ==, TXL_RECORD_MAX_HEADER);
  g_assert_cmpstr(s->str + h, ==, "m\n");
  g_assert_true(txl_record_get(s->str, h, "a", &v, &vl));
  g_assert_false(txl_record_get(s->str, h, "z", &v, &vl));
  g_free(huge);
  g_string_free(s, TRUE);
}

/* Encodes text in pieces of `piece` bytes, saving the encoder's state and
 * going on in a new encoder after every push. */
static Toks
encode_resumed(const TxlTokenizer *tok, const char *text, gsize len,
               gsize piece)
{
  Toks t = toks_new();
  TxlEncoder *e = txl_encoder_new(tok, tu_on_token, &t);
  for (gsize at = 0; at < len; at += piece) {
    txl_encoder_push(e, text + at, MIN(piece, len - at));
    GBytes *st = txl_encoder_save(e);
    txl_encoder_free(e);
    e = txl_encoder_new(tok, tu_on_token, &t);
    GError *err = NULL;
    g_assert_true(txl_encoder_restore(e, st, &err));
    g_bytes_unref(st);
  }
  txl_encoder_finish(e);
  txl_encoder_free(e);
  return t;
}

/* The records' tokens against the plain text's: same ids and lines, each
 * offset moved by the headers before it. */
static void
check_skips(const TxlTokenizer *tok)
{
  const char *rec = RS "host=a" US "app=b" RS "user root logged in 10.0.0.1\n"
                    "plain line 42\n"
                    RS "x=1" RS "\n"
                    RS "not a header\n"
                    RS "app=c" RS "last";
  const char *plain = "user root logged in 10.0.0.1\n"
                      "plain line 42\n"
                      "\n"
                      RS "not a header\n"
                      "last";
  gsize rl = strlen(rec), pl = strlen(plain);
  Toks r = tu_encode(tok, rec, rl, rl, NULL);
  Toks p = tu_encode(tok, plain, pl, pl, NULL);
  g_assert_cmpuint(r.ids->len, ==, p.ids->len);
  g_assert_cmpmem(r.ids->data, r.ids->len * 4, p.ids->data, p.ids->len * 4);
  g_assert_cmpmem(r.lines->data, r.lines->len * 8, p.lines->data,
                  p.lines->len * 8);
  gsize h1 = strlen(RS "host=a" US "app=b" RS), h3 = strlen(RS "x=1" RS),
        h5 = strlen(RS "app=c" RS);
  for (guint i = 0; i < r.ids->len; i++) {
    gint64 line = g_array_index(p.lines, gint64, i);
    gsize shift = h1 + (line >= 3 ? h3 : 0) + (line >= 5 ? h5 : 0);
    g_assert_cmpuint(g_array_index(r.starts, gsize, i), ==,
                     g_array_index(p.starts, gsize, i) + shift);
    g_assert_cmpuint(g_array_index(r.ends, gsize, i), ==,
                     g_array_index(p.ends, gsize, i) + shift);
  }
  for (gsize piece = 1; piece < 12; piece++) {
    Toks t = tu_encode(tok, rec, rl, piece, NULL);
    toks_assert_same(&r, &t);
    toks_free(&t);
    t = encode_resumed(tok, rec, rl, piece);
    toks_assert_same(&r, &t);
    toks_free(&t);
  }
  /* a header the input ends inside is text */
  Toks a = tu_encode(tok, RS "k=v", 4, 4, NULL);
  Toks b = encode_resumed(tok, RS "k=v", 4, 1);
  toks_assert_same(&a, &b);
  g_assert_cmpuint(a.ids->len, >, 0);
  toks_free(&a);
  toks_free(&b);
  toks_free(&r);
  toks_free(&p);
}

/* The time field every source writes: RFC 3339 UTC at 0, 6 or 9 digits. */
TU_TEST("/record/time", test_time)
{
  char b[TXL_RECORD_TIME_MAX];
  txl_record_time(b, sizeof b, 1764090129, 0, 0);
  g_assert_cmpstr(b, ==, "2025-11-25T17:02:09Z");
  txl_record_time(b, sizeof b, 1764090129, 21898, 6);
  g_assert_cmpstr(b, ==, "2025-11-25T17:02:09.021898Z");
  txl_record_time(b, sizeof b, 0, 5, 9);
  g_assert_cmpstr(b, ==, "1970-01-01T00:00:00.000000005Z");
  txl_record_time(b, sizeof b, G_MAXINT64 / 2, 0, 0); /* past year 9999 */
  g_assert_cmpstr(b, ==, "");
}

TU_TEST("/record/encoder-bytes", test_encoder_bytes)
{
  char *path;
  TxlModel *m = tu_small_model(1, &path);
  check_skips(txl_model_tokenizer(m));
  tu_model_done(m, path);
}

TU_TEST("/record/encoder-bpe", test_encoder_bpe)
{
  /* the bundled model: BPE with log-field normalisation */
  GError *err = NULL;
  TxlModel *m = txl_model_load(TXL_MODEL_SOURCE, &err);
  g_assert_no_error(err);
  check_skips(txl_model_tokenizer(m));
  txl_model_unref(m);
}

/* A malformed saved header place is refused, not trusted. */
TU_TEST("/record/encoder-state-checked", test_encoder_state_checked)
{
  char *path;
  TxlModel *m = tu_small_model(1, &path);
  const TxlTokenizer *tok = txl_model_tokenizer(m);
  Toks t = toks_new();
  TxlEncoder *e = txl_encoder_new(tok, tu_on_token, &t);
  txl_encoder_push(e, RS "k=v", 4);
  GBytes *st = txl_encoder_save(e);
  gsize n;
  const guint8 *sd = g_bytes_get_data(st, &n);
  guint8 *d = g_memdup2(sd, n);
  d[n - 4] = 'x'; /* the held header no longer starts with RS */
  GError *err = NULL;
  g_assert_false(txl_encoder_state_set_data(e, d, n, &err));
  g_assert_nonnull(err);
  g_clear_error(&err);
  g_free(d);
  g_bytes_unref(st);
  txl_encoder_free(e);
  toks_free(&t);
  tu_model_done(m, path);
}

TU_MAIN()
