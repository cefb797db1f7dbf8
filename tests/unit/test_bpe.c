/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Byte-level BPE: training, round trips, split invariance, speed bounds,
 * the model file keys and their validation. */
#include "bpe.h"
#include "model_internal.h"
#include "testutil.h"
#include "tu_test.h"

/* Tokens tile the input exactly, '\n' is a token of its own, and each
 * token's line is 1 + the line ends before it. */
static void
assert_tiles(const Toks *t, const char *text, gsize len)
{
  gsize at = 0;
  gint64 line = 1;
  for (guint i = 0; i < t->ids->len; i++) {
    gsize s = g_array_index(t->starts, gsize, i),
          e = g_array_index(t->ends, gsize, i);
    g_assert_cmpuint(s, ==, at);
    g_assert_cmpuint(e, >, s);
    g_assert_cmpint(g_array_index(t->lines, gint64, i), ==, line);
    const char *nl = memchr(text + s, '\n', e - s);
    if (nl) {
      g_assert_cmpuint(e - s, ==, 1);
      line++;
    }
    at = e;
  }
  g_assert_cmpuint(at, ==, len);
}

static GByteArray *
decode(const TxlTokenizer *tok, const Toks *t)
{
  GByteArray *out = g_byte_array_new();
  g_autoptr(GError) err = NULL;
  g_assert_true(txl_tokenizer_decode(tok, (const int32_t *)t->ids->data,
                                     t->ids->len, out, &err));
  g_assert_no_error(err);
  return out;
}

/* Synthetic logs in the shape of common formats (no real data). */
static char *
make_logs(gsize want, guint32 seed, gsize *len)
{
  static const char *const lvl[] = { "INFO", "WARN", "ERROR", "DEBUG" };
  static const char *const comp[] = { "dfs.DataNode", "sshd", "kernel",
                                      "nova.compute.manager", "worker" };
  static const char *const msg[] = {
    "Received block %s of size %d from /10.%d.%d.%d:50010",
    "Accepted password for user%d from 192.168.%d.%d port %d ssh2",
    "request req-%08x-1234-4abc-8def-%012x took %d.%03d ms",
    "Deleting block blk_-%d file /data/dfs/blk_%d/current",
    "session opened for user root by (uid=%d) pid=0x%x",
    "connection reset by peer; retrying in %d seconds (attempt %d)",
  };
  GRand *r = g_rand_new_with_seed(seed);
  GString *s = g_string_new(NULL);
  while (s->len < want) {
    g_string_append_printf(s, "2024-03-%02d %02d:%02d:%02d,%03d %s %s[%d]: ",
                           g_rand_int_range(r, 1, 29),
                           g_rand_int_range(r, 0, 24),
                           g_rand_int_range(r, 0, 60),
                           g_rand_int_range(r, 0, 60),
                           g_rand_int_range(r, 0, 1000),
                           lvl[g_rand_int_range(r, 0, 4)],
                           comp[g_rand_int_range(r, 0, 5)],
                           g_rand_int_range(r, 100, 40000));
    int m = g_rand_int_range(r, 0, 6), a = g_rand_int_range(r, 0, 99999),
        b = g_rand_int_range(r, 0, 255), c = g_rand_int_range(r, 0, 255),
        d = g_rand_int_range(r, 0, 255);
    switch (m) {
    case 0: {
      char blk[32];
      g_snprintf(blk, sizeof blk, "blk_%d", a * 7919);
      g_string_append_printf(s, msg[m], blk, a, b, c, d);
      break;
    }
    case 1: g_string_append_printf(s, msg[m], a % 50, b, c, a); break;
    case 2: g_string_append_printf(s, msg[m], (unsigned)a * 40503u,
                                   (unsigned)b * 1000003u, a % 900, b); break;
    case 3: g_string_append_printf(s, msg[m], a * 31, a * 31); break;
    case 4: g_string_append_printf(s, msg[m], b, (unsigned)a * 2654435u); break;
    default: g_string_append_printf(s, msg[m], b % 60, c % 5); break;
    }
    g_string_append_c(s, '\n');
  }
  g_rand_free(r);
  *len = s->len;
  return g_string_free(s, FALSE);
}

static TxlTokenizer *
train(const char *text, gsize len, int vocab, guint rules)
{
  TxlBpeTrainOptions o = TXL_BPE_TRAIN_OPTIONS_DEFAULT;
  o.vocab_size = vocab;
  o.normalize = rules;
  g_autoptr(GError) err = NULL;
  TxlBpe *b = txl_bpe_train(&text, &len, 1, &o, &err);
  g_assert_no_error(err);
  g_assert_nonnull(b);
  return txl_tokenizer_new_bpe(b);
}

/* Runs check on the text make_logs(want, seed) and a 700-token BPE trained
 * on it, once without normalization and once with every rule. */
static void
each_normalization(gsize want, guint32 seed,
                   void (*check)(const char *logs, gsize len,
                                 const TxlTokenizer *tok))
{
  gsize len;
  char *logs = make_logs(want, seed, &len);
  for (int norm = 0; norm < 2; norm++) {
    TxlTokenizer *tok = train(logs, len, 700, norm ? TXL_NORM_ALL : 0);
    check(logs, len, tok);
    txl_tokenizer_free(tok);
  }
  g_free(logs);
}

TU_TEST("/bpe/round-trip", test_round_trip)
{
  gsize len;
  char *logs = make_logs(200000, 1, &len);
  TxlTokenizer *tok = train(logs, len, 1000, 0);
  g_assert_cmpint(txl_tokenizer_type(tok), ==, TXL_TOKENIZER_BPE);
  g_assert_cmpint(txl_tokenizer_n_tokens(tok), ==, 1000);
  g_assert_cmpstr(txl_tokenizer_type_name(TXL_TOKENIZER_BPE), ==, "bpe");

  /* text, then random bytes (NUL, invalid UTF-8, lone '\r') */
  gsize other_len;
  char *other = make_logs(30000, 99, &other_len);
  char junk[20000];
  GRand *r = g_rand_new_with_seed(5);
  for (gsize i = 0; i < sizeof junk; i++)
    junk[i] = (char)g_rand_int_range(r, 0, 256);
  junk[0] = '\0';
  const char *texts[] = { other, junk, "", "\n\n  \t x", "a", " " };
  gsize lens[] = { other_len, sizeof junk, 0, 7, 1, 1 };
  for (guint k = 0; k < G_N_ELEMENTS(texts); k++) {
    Toks whole =
        tu_encode(tok, texts[k], lens[k], lens[k] ? lens[k] : 1, NULL);
    assert_tiles(&whole, texts[k], lens[k]);
    GByteArray *back = decode(tok, &whole);
    g_assert_cmpmem(back->data, back->len, texts[k], lens[k]);
    g_byte_array_unref(back);
    toks_free(&whole);
  }
  g_rand_free(r);
  g_free(other);
  g_free(logs);
  txl_tokenizer_free(tok);
}

static void
check_split_invariance(const TxlTokenizer *tok, const char *text, gsize len)
{
  GRand *r = g_rand_new_with_seed(11);
  Toks whole = tu_encode(tok, text, len, len, NULL);
  assert_tiles(&whole, text, len);
  gsize pieces[] = { 1, 2, 3, 7, 64, 4097, 0, 0, 0 };
  for (guint k = 0; k < G_N_ELEMENTS(pieces); k++) {
    Toks t = tu_encode(tok, text, len, pieces[k], r);
    toks_assert_same(&whole, &t);
    toks_free(&t);
  }
  toks_free(&whole);
  g_rand_free(r);
}

TU_TEST("/bpe/split-invariance", test_split_invariance)
{
  gsize len;
  char *logs = make_logs(100000, 2, &len);
  TxlTokenizer *plain = train(logs, len, 600, 0);
  TxlTokenizer *norm = train(logs, len, 600, TXL_NORM_ALL);
  gsize tlen;
  char *text = make_logs(20000, 3, &tlen);
  /* and a tail that stresses the held-back states: space runs, a field
   * at the very end, a chunk longer than the cap, no final newline */
  GString *s = g_string_new_len(text, (gssize)tlen);
  g_string_append(s, "x    \t  y\r\n   \n");
  for (int i = 0; i < 700; i++)
    g_string_append_c(s, "abcdefgh"[i % 8]);
  g_string_append(s, " 12345 0xff 2024-01-01 10:00:00 10.0.0.1:80");
  check_split_invariance(plain, s->str, s->len);
  check_split_invariance(norm, s->str, s->len);

  /* normalised: every field is one placeholder covering the original
   * bytes, the spaced variant when a ' ' precedes it */
  Toks t = tu_encode(norm, "ts 2024-01-01 10:00:00 at 10.0.0.1:80\n", 38, 38,
                     NULL);
  const TxlBpe *b = txl_tokenizer_get_bpe(norm);
  int ts = txl_bpe_placeholder_id(b, TXL_NORM_TS, TRUE),
      ip = txl_bpe_placeholder_id(b, TXL_NORM_IP, TRUE);
  gboolean seen_ts = FALSE, seen_ip = FALSE;
  for (guint i = 0; i < t.ids->len; i++) {
    int id = g_array_index(t.ids, int32_t, i);
    gsize st = g_array_index(t.starts, gsize, i),
          en = g_array_index(t.ends, gsize, i);
    if (id == ts) {
      g_assert_cmpuint(st, ==, 2);
      g_assert_cmpuint(en, ==, 22);
      seen_ts = TRUE;
    }
    if (id == ip) {
      g_assert_cmpuint(st, ==, 25);
      g_assert_cmpuint(en, ==, 37);
      seen_ip = TRUE;
    }
  }
  g_assert_true(seen_ts && seen_ip);
  toks_free(&t);
  /* placeholders decode to their names */
  int32_t ids[2] = { ts, txl_bpe_placeholder_id(b, TXL_NORM_NUM, FALSE) };
  GByteArray *out = g_byte_array_new();
  g_assert_true(txl_tokenizer_decode(norm, ids, 2, out, NULL));
  g_assert_cmpmem(out->data, out->len, " <TS><NUM>", 10);
  g_byte_array_unref(out);

  g_string_free(s, TRUE);
  g_free(text);
  g_free(logs);
  txl_tokenizer_free(plain);
  txl_tokenizer_free(norm);
}

TU_TEST("/bpe/compresses", test_compresses)
{
  gsize len, tlen;
  char *logs = make_logs(300000, 4, &len);
  char *test = make_logs(50000, 5, &tlen);
  TxlTokenizer *plain = train(logs, len, 2000, 0);
  TxlTokenizer *norm = train(logs, len, 2000, TXL_NORM_ALL);
  Toks a = tu_encode(plain, test, tlen, tlen, NULL);
  Toks b = tu_encode(norm, test, tlen, tlen, NULL);
  double ra = (double)a.ids->len / tlen, rb = (double)b.ids->len / tlen;
  g_test_message("tokens/byte on held-out logs: plain %.3f, normalised %.3f",
                 ra, rb);
  g_assert_cmpfloat(ra, <, 0.45);
  g_assert_cmpfloat(rb, <, 0.6 * ra);
  toks_free(&a);
  toks_free(&b);

  /* fixed lines repeated: whole words and phrases become tokens */
  GString *rep = g_string_new(NULL);
  for (int i = 0; i < 3000; i++)
    g_string_append(rep, i % 3 ? "session opened for user root by cron\n"
                               : "connection closed by remote host\n");
  TxlTokenizer *rt = train(rep->str, rep->len, 600, 0);
  Toks c = tu_encode(rt, rep->str, rep->len, rep->len, NULL);
  double rc = (double)c.ids->len / rep->len;
  g_test_message("tokens/byte on repeated lines: %.3f", rc);
  /* each chunk ("session", " opened", ..., "\n") is one token: the best
   * a vocabulary can do under chunking that never crosses a word */
  g_assert_cmpuint(c.ids->len, ==, 2000 * 8 + 1000 * 6);
  g_assert_cmpfloat(rc, <, 0.25);
  toks_free(&c);
  txl_tokenizer_free(rt);
  g_string_free(rep, TRUE);

  /* training is deterministic */
  TxlTokenizer *again = train(logs, len, 2000, 0);
  for (int i = 0; i < 2000; i++) {
    gsize l1, l2;
    const char *s1 = txl_tokenizer_symbol(plain, i, &l1),
               *s2 = txl_tokenizer_symbol(again, i, &l2);
    g_assert_cmpmem(s1, l1, s2, l2);
  }
  txl_tokenizer_free(again);
  g_free(logs);
  g_free(test);
  txl_tokenizer_free(plain);
  txl_tokenizer_free(norm);
}

static void
count_token(int32_t id, gint64 line, gsize s, gsize e, gpointer data)
{
  (*(gsize *)data)++;
}

/* A 1 MB line without spaces: chunks are capped, and even one uncapped
 * chunk costs O(n log n) in the heap encoder.  The bounds only guard
 * against quadratic behaviour; real timings are in docs/tokenizers.md. */
TU_TEST("/bpe/long-line", test_long_line)
{
  gsize len;
  char *logs = make_logs(100000, 6, &len);
  TxlTokenizer *tok = train(logs, len, 1000, TXL_NORM_ALL);
  /* the letters of the logs, run together: a line that merges a lot */
  const gsize n = 1 << 20;
  char *line = g_malloc(n);
  for (gsize i = 0, j = 0; i < n; j = (j + 1) % len)
    if (g_ascii_isalpha(logs[j]))
      line[i++] = logs[j];
  gsize count = 0;
  gint64 t0 = g_get_monotonic_time();
  TxlEncoder *e = txl_encoder_new(tok, count_token, &count);
  txl_encoder_push(e, line, n);
  txl_encoder_finish(e);
  txl_encoder_free(e);
  double s = (g_get_monotonic_time() - t0) / 1e6;
  g_test_message("1 MiB line, normalised encoder: %.3f s, %zu tokens", s,
                 count);
  g_assert_cmpfloat(s, <, 5.0);

  const TxlBpe *b = txl_tokenizer_get_bpe(tok);
  TxlBpeOut out = { 0 };
  for (int k = 0; k < 3; k++) {
    if (k == 1) {
      GRand *r = g_rand_new_with_seed(7);
      for (gsize i = 0; i < n; i++)
        line[i] = (char)g_rand_int_range(r, 'a', 'z' + 1);
      g_rand_free(r);
    } else if (k == 2) {
      memset(line, 'a', n);
    }
    t0 = g_get_monotonic_time();
    txl_bpe_encode_chunk(b, (const guchar *)line, n, &out);
    s = (g_get_monotonic_time() - t0) / 1e6;
    g_test_message("one 1 MiB chunk (%s): %.3f s, %zu tokens",
                   k == 0 ? "log letters" : k == 1 ? "random letters"
                                                   : "'a' x n", s, out.n);
    g_assert_cmpfloat(s, <, 5.0);
    g_assert_cmpuint(out.end[out.n - 1], ==, n);
  }
  txl_bpe_out_clear(&out);
  g_free(line);
  g_free(logs);
  txl_tokenizer_free(tok);
}

/* ---- model file --------------------------------------------------------- */

static void
small_config(TxlConfig *c, int n_token)
{
  tu_small_config(c);
  c->n_token = n_token;
  c->div_val = 1;
  c->n_cutoffs = 0;
}

/* tok written to a model file: it loads with the same merges, rules and
 * checksum, encodes as tok does, and its ids run through the model. */
static void
model_file_case(const char *logs, gsize len, const TxlTokenizer *tok)
{
  const TxlBpe *b = txl_tokenizer_get_bpe(tok);
  TxlConfig c;
  small_config(&c, txl_bpe_n_tokens(b));
  char *path = tu_tmp_model_path();
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&c, w);
  txl_bpe_write_gguf(b, w);
  tu_add_weights(w, &c, 1, NULL);
  g_autoptr(GError) err = NULL;
  g_assert_true(gguf_writer_write(w, path, &err));
  gguf_writer_free(w);
  TxlModel *m = tu_load(path);
  const TxlTokenizer *lt = txl_model_tokenizer(m);
  g_assert_cmpint(txl_tokenizer_type(lt), ==, TXL_TOKENIZER_BPE);
  const TxlBpe *lb = txl_tokenizer_get_bpe(lt);
  g_assert_cmpint(txl_bpe_n_merges(lb), ==, txl_bpe_n_merges(b));
  g_assert_cmpuint(txl_bpe_normalize(lb), ==, txl_bpe_normalize(b));
  GChecksum *c1 = g_checksum_new(G_CHECKSUM_SHA256),
            *c2 = g_checksum_new(G_CHECKSUM_SHA256);
  txl_tokenizer_checksum(tok, c1);
  txl_tokenizer_checksum(lt, c2);
  g_assert_cmpstr(g_checksum_get_string(c1), ==, g_checksum_get_string(c2));
  g_checksum_free(c1);
  g_checksum_free(c2);
  Toks x = tu_encode(tok, logs, 20000, 20000, NULL);
  Toks y = tu_encode(lt, logs, 20000, 999, NULL);
  toks_assert_same(&x, &y);
  /* and the ids run through the model */
  TxlStream *st = txl_stream_new(m, NULL, &err);
  g_assert_no_error(err);
  float lp[5];
  g_assert_true(txl_stream_forward(st, (const int32_t *)y.ids->data, 5,
                                   (const int32_t *)y.ids->data + 1, lp,
                                   &err));
  g_assert_no_error(err);
  g_assert_true(isfinite(lp[0]) && lp[0] < 0);
  txl_stream_free(st);
  toks_free(&x);
  toks_free(&y);
  tu_model_done(m, path);
}

TU_TEST("/bpe/model-file", test_model_file)
{
  each_normalization(100000, 8, model_file_case);
}

/* A tiny valid vocabulary: 256 bytes, "ab", "abc", specials "<NUM>",
 * " <NUM>"; merges (a,b), (ab,c).  Each hostile case edits one thing. */
typedef struct {
  const char *pre;
  int n_tok;            /* tokens to write (<= 260) */
  const char *tok[260];
  gsize len[260];
  uint32_t merges[8];
  int n_merges;         /* u32 count */
  uint32_t specials[4];
  int n_specials;
  const char *norm[3];
  int n_norm;
  int norm_version;
  int n_token;          /* the config's */
} Vocab;

static char byte_store[256];

static void
vocab_init(Vocab *v)
{
  memset(v, 0, sizeof *v);
  v->pre = TXL_BPE_PRE;
  for (int i = 0; i < 256; i++) {
    byte_store[i] = (char)i;
    v->tok[i] = byte_store + i;
    v->len[i] = 1;
  }
  v->tok[256] = "ab";
  v->tok[257] = "abc";
  v->tok[258] = "<NUM>";
  v->tok[259] = " <NUM>";
  for (int i = 256; i < 260; i++)
    v->len[i] = strlen(v->tok[i]);
  v->n_tok = v->n_token = 260;
  uint32_t m[4] = { 'a', 'b', 256, 'c' };
  memcpy(v->merges, m, sizeof m);
  v->n_merges = 4;
  v->specials[0] = 258;
  v->specials[1] = 259;
  v->n_specials = 2;
  v->norm[0] = "num";
  v->n_norm = 1;
  v->norm_version = TXL_NORM_VERSION;
}

static TxlModel *
load_vocab(const Vocab *v, GError **err)
{
  TxlConfig c;
  small_config(&c, v->n_token);
  char *path = tu_tmp_model_path();
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&c, w);
  gguf_writer_add_string(w, "tokenizer.type", "bpe");
  if (v->pre)
    gguf_writer_add_string(w, "tokenizer.pre", v->pre);
  gguf_writer_add_string_array(w, "tokenizer.tokens", v->tok, v->len,
                               v->n_tok);
  if (v->n_merges >= 0)
    gguf_writer_add_u32_array(w, "tokenizer.merges", v->merges, v->n_merges);
  gguf_writer_add_u32_array(w, "tokenizer.specials", v->specials,
                            v->n_specials);
  if (v->n_norm) {
    gsize nl[3];
    for (int i = 0; i < v->n_norm; i++)
      nl[i] = strlen(v->norm[i]);
    gguf_writer_add_string_array(w, "tokenizer.normalize", v->norm, nl,
                                 v->n_norm);
    if (v->norm_version >= 0)
      gguf_writer_add_u32(w, "tokenizer.normalize_version", v->norm_version);
  }
  tu_add_weights(w, &c, 2, NULL);
  g_assert_true(gguf_writer_write(w, path, NULL));
  gguf_writer_free(w);
  TxlModel *m = txl_model_load(path, err);
  tu_remove(path);
  g_free(path);
  return m;
}

/* The first four merge entries (the two merges) set to a, b, c, d. */
static void
set_merges(Vocab *v, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
  const uint32_t m[4] = { a, b, c, d };
  memcpy(v->merges, m, sizeof m);
}

static void
expect_refused(const Vocab *v, const char *what, const char *needle)
{
  GError *err = NULL;
  TxlModel *m = load_vocab(v, &err);
  if (m)
    g_error("%s: loaded", what);
  g_assert_nonnull(err);
  g_test_message("%s: %s", what, err->message);
  if (!strstr(err->message, needle))
    g_error("%s: '%s' does not mention '%s'", what, err->message, needle);
  g_error_free(err);
}

TU_TEST("/bpe/hostile-keys", test_hostile_keys)
{
  Vocab v;
  vocab_init(&v);
  g_autoptr(GError) err = NULL;
  TxlModel *m = load_vocab(&v, &err);
  g_assert_no_error(err);
  /* the valid one encodes with its merges and placeholders */
  Toks t = tu_encode(txl_model_tokenizer(m), "abc abcab 42 7", 14, 1, NULL);
  static const int32_t want[] = { 257, ' ', 257, 256, 259, ' ', '7' };
  g_assert_cmpmem(t.ids->data, t.ids->len * 4, want, sizeof want);
  toks_free(&t);
  txl_model_unref(m);

  /* each case: the valid vocabulary with one thing spoiled (the
   * statements after the needle), refused with a message naming it */
#define REFUSED(what, needle, ...)                                             \
  do {                                                                         \
    vocab_init(&v);                                                            \
    __VA_ARGS__;                                                               \
    expect_refused(&v, what, needle);                                          \
  } while (0)
  REFUSED("pre-tokenizer", "tokenizer.pre", v.pre = "txl9");
  REFUSED("no pre-tokenizer", "tokenizer.pre", v.pre = NULL);
  REFUSED("count", "tokenizer.tokens", v.n_token = 261);
  REFUSED("duplicate token", "tokenizer.tokens", v.tok['q'] = "a");
  REFUSED("merge result missing", "tokenizer.merges", v.tok[257] = "abd");
  REFUSED("odd merges", "tokenizer.merges", v.n_merges = 3);
  REFUSED("no merges", "tokenizer.merges", v.n_merges = -1);
  REFUSED("merge id out of range", "tokenizer.merges", v.merges[3] = 5000);
  /* (ab,c) before (a,b): uses a token no earlier merge made */
  REFUSED("merge order / cycle", "tokenizer.merges",
          set_merges(&v, 256, 'c', 'a', 'b'));
  /* a self-referencing merge: ab = ab + ... */
  REFUSED("cycle", "tokenizer.merges", set_merges(&v, 256, 256, 'a', 'b'));
  REFUSED("repeated pair", "repeats an earlier pair",
          v.merges[4] = 'a', v.merges[5] = 'b', v.n_merges = 6);
  REFUSED("unreachable token", "tokenizer.tokens[257]", v.n_merges = 2);
  REFUSED("merge of a special", "special", v.merges[0] = 258);
  REFUSED("special out of range", "tokenizer.specials", v.specials[1] = 999);
  REFUSED("special twice", "tokenizer.specials", v.specials[1] = 258);
  REFUSED("placeholder missing", "tokenizer.specials",
          v.tok[259] = "<FOO>", v.len[259] = 5);
  REFUSED("unknown rule", "tokenizer.normalize", v.norm[0] = "zip");
  REFUSED("rule twice", "tokenizer.normalize",
          v.norm[1] = "num", v.n_norm = 2);
  REFUSED("rule version", "tokenizer.normalize_version", v.norm_version = 2);
  REFUSED("rule version missing", "tokenizer.normalize_version",
          v.norm_version = -1);
  REFUSED("empty token", "tokenizer.tokens", v.tok['z'] = "", v.len['z'] = 0);
  REFUSED("byte missing", "0x7a", v.tok['z'] = "zz", v.len['z'] = 2);
  char big[300];
  memset(big, 'x', sizeof big);
  REFUSED("token too long", "tokenizer.tokens[259]",
          v.tok[259] = big, v.len[259] = sizeof big);
#undef REFUSED
}

/* Counts the pre-tokenizer's pieces, but the special ones, in the table
 * data: piece bytes (GBytes) -> count. */
static void
collect_piece(const guchar *s, gsize len, gsize start, int special,
              gpointer data)
{
  if (special >= 0)
    return;
  GBytes *k = g_bytes_new(s, len);
  gsize c = GPOINTER_TO_SIZE(g_hash_table_lookup(data, k));
  g_hash_table_replace(data, k, GSIZE_TO_POINTER(c + 1));
}

/* Replays the learned merges naively, recounting every pair before each:
 * the incremental counts and the lazy heap must pick a most frequent pair
 * every time (ties may go either way). */
static void
naive_case(const char *logs, gsize len, const TxlTokenizer *tok)
{
  const TxlBpe *b = txl_tokenizer_get_bpe(tok);
  GHashTable *pieces = g_hash_table_new_full(
      g_bytes_hash, g_bytes_equal, (GDestroyNotify)g_bytes_unref, NULL);
  TxlPretok *p = txl_pretok_new(b, collect_piece, pieces);
  txl_pretok_push(p, (const guchar *)logs, len);
  txl_pretok_finish(p);
  txl_pretok_free(p);
  GPtrArray *words = g_ptr_array_new_with_free_func(
      (GDestroyNotify)g_array_unref);
  GArray *counts = g_array_new(FALSE, FALSE, sizeof(gsize));
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, pieces);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    gsize n;
    const guchar *s = g_bytes_get_data(k, &n);
    GArray *w = g_array_new(FALSE, FALSE, 4);
    for (gsize i = 0; i < n; i++) {
      int id = txl_bpe_byte_id(b, s[i]);
      g_array_append_val(w, id);
    }
    g_ptr_array_add(words, w);
    gsize c = GPOINTER_TO_SIZE(v);
    g_array_append_val(counts, c);
  }
  GHashTable *merged = g_hash_table_new(g_int64_hash, g_int64_equal);
  gint64 *keys = g_new(gint64, txl_bpe_n_merges(b) + 1);
  for (int m = 0; m < txl_bpe_n_merges(b); m++) {
    int l, r, res = txl_bpe_merge(b, m, &l, &r);
    GHashTable *pairs = g_hash_table_new_full(g_int64_hash, g_int64_equal,
                                              g_free, NULL);
    gsize best = 0;
    for (guint w = 0; w < words->len; w++) {
      GArray *a = words->pdata[w];
      for (guint i = 0; i + 1 < a->len; i++) {
        gint64 key = ((gint64)g_array_index(a, int, i) << 32) |
                     g_array_index(a, int, i + 1);
        if (g_hash_table_contains(merged, &key))
          continue;
        gsize c = GPOINTER_TO_SIZE(g_hash_table_lookup(pairs, &key)) +
                  g_array_index(counts, gsize, w);
        g_hash_table_replace(pairs, g_memdup2(&key, 8),
                             GSIZE_TO_POINTER(c));
        best = MAX(best, c);
      }
    }
    gint64 key = ((gint64)l << 32) | r;
    gsize got = GPOINTER_TO_SIZE(g_hash_table_lookup(pairs, &key));
    if (got != best)
      g_error("merge %d (%d, %d): count %zu, best %zu", m, l, r, got, best);
    keys[m] = key;
    g_hash_table_add(merged, &keys[m]);
    g_hash_table_unref(pairs);
    for (guint w = 0; w < words->len; w++) {
      GArray *a = words->pdata[w];
      guint j = 0;
      for (guint i = 0; i < a->len; j++) {
        int x = g_array_index(a, int, i);
        if (i + 1 < a->len && x == l && g_array_index(a, int, i + 1) == r) {
          g_array_index(a, int, j) = res;
          i += 2;
        } else {
          g_array_index(a, int, j) = x;
          i++;
        }
      }
      g_array_set_size(a, j);
    }
  }
  g_hash_table_unref(merged);
  g_free(keys);
  g_array_unref(counts);
  g_ptr_array_unref(words);
  g_hash_table_unref(pieces);
}

TU_TEST("/bpe/trainer-vs-naive", test_trainer_vs_naive)
{
  each_normalization(30000, 12, naive_case);
}

TU_TEST("/bpe/train-options", test_train_options)
{
  TxlBpeTrainOptions o = TXL_BPE_TRAIN_OPTIONS_DEFAULT;
  o.vocab_size = 200;
  g_autoptr(GError) err = NULL;
  g_assert_null(txl_bpe_trainer_new(&o, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  /* too little text: training stops when no pair repeats */
  o.vocab_size = 5000;
  const char *text = "abcabc xyz";
  gsize len = strlen(text);
  g_clear_error(&err);
  TxlBpe *b = txl_bpe_train(&text, &len, 1, &o, &err);
  g_assert_no_error(err);
  g_assert_cmpint(txl_bpe_n_tokens(b), <, 300);
  g_assert_cmpint(txl_bpe_n_merges(b), >=, 2);
  txl_bpe_free(b);
}

/* Measurements for docs/tokenizers.md, run by hand:
 *   TXL_BPE_BENCH="a.log b.log" build/tests/test_bpe -p /bpe/bench
 * trains on the first TXL_BPE_BENCH_BYTES (default 1 MB) of the files
 * together, then encodes each file whole. */
TU_TEST("/bpe/bench", test_bench)
{
  const char *files = g_getenv("TXL_BPE_BENCH");
  if (!files) {
    g_test_skip("set TXL_BPE_BENCH to a list of log files");
    return;
  }
  const char *nb = g_getenv("TXL_BPE_BENCH_BYTES");
  const char *vs = g_getenv("TXL_BPE_BENCH_VOCAB");
  gsize want = nb ? g_ascii_strtoull(nb, NULL, 10) : 1000000;
  g_auto(GStrv) names = g_strsplit(files, " ", -1);
  GString *corpus = g_string_new(NULL);
  for (int i = 0; names[i] && corpus->len < want; i++) {
    char *data;
    gsize len;
    g_assert_true(g_file_get_contents(names[i], &data, &len, NULL));
    g_string_append_len(corpus, data, (gssize)MIN(len, want - corpus->len));
    g_free(data);
  }
  for (int norm = 0; norm < 2; norm++) {
    TxlBpeTrainOptions o = TXL_BPE_TRAIN_OPTIONS_DEFAULT;
    o.vocab_size = vs ? atoi(vs) : 4096;
    o.normalize = norm ? TXL_NORM_ALL : 0;
    const char *text = corpus->str;
    gsize len = corpus->len;
    gint64 t0 = g_get_monotonic_time();
    TxlBpe *b = txl_bpe_train(&text, &len, 1, &o, NULL);
    double ts = (g_get_monotonic_time() - t0) / 1e6;
    printf("train %s: %zu bytes -> %d tokens (%d merges) in %.2f s\n",
           norm ? "normalised" : "plain", len, txl_bpe_n_tokens(b),
           txl_bpe_n_merges(b), ts);
    TxlTokenizer *tok = txl_tokenizer_new_bpe(b);
    for (int i = 0; names[i]; i++) {
      char *data;
      gsize dl;
      g_assert_true(g_file_get_contents(names[i], &data, &dl, NULL));
      gsize count = 0;
      double best = 1e9;
      for (int rep = 0; rep < 3; rep++) {
        count = 0;
        t0 = g_get_monotonic_time();
        TxlEncoder *e = txl_encoder_new(tok, count_token, &count);
        txl_encoder_push(e, data, dl);
        txl_encoder_finish(e);
        txl_encoder_free(e);
        best = MIN(best, (g_get_monotonic_time() - t0) / 1e6);
      }
      g_autofree char *base = g_path_get_basename(names[i]);
      printf("  encode %-20s %7zu bytes %7zu tokens (%.3f/byte) %6.1f MB/s\n",
             base, dl, count, (double)count / dl, dl / best / 1e6);
      g_free(data);
    }
    txl_tokenizer_free(tok);
  }
  g_string_free(corpus, TRUE);
}

TU_MAIN()
