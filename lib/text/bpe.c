/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Byte-level BPE: vocabulary, model-file keys, pre-tokenizer and encoder
 * (the trainer is bpe_train.c).  See docs/tokenizers.md for the design and its reasons. */
#include "bpe.h"
#include "bpe_internal.h"
#include "bytes.h"
#include "filemap.h"
#include "freeeach.h"

#include <string.h>



/* ---- vocabulary ------------------------------------------------------ */

TxlBpe *
bpe_new(void)
{
  TxlBpe *b = g_new0(TxlBpe, 1);
  b->blob = g_byte_array_new();
  b->off = g_array_new(FALSE, FALSE, sizeof(guint32));
  b->len = g_array_new(FALSE, FALSE, sizeof(guint32));
  b->special = g_array_new(FALSE, FALSE, 1);
  b->merges = g_array_new(FALSE, FALSE, sizeof(guint32));
  b->by_bytes = g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
                                      (GDestroyNotify)g_bytes_unref, NULL);
  for (int i = 0; i < 256; i++)
    b->byte_id[i] = -1;
  for (int r = 0; r < TXL_NORM_N_RULES; r++)
    b->ph[r][0] = b->ph[r][1] = -1;
  return b;
}

void
txl_bpe_free(TxlBpe *b)
{
  if (!b)
    return;
  g_byte_array_unref(b->blob);
  g_hash_table_unref(b->by_bytes);
  txl_free_each(g_array_unref, b->off, b->len, b->special, b->merges);
  txl_free_each(g_free, b->pkey, b->pval, b);
}

int
txl_bpe_n_tokens(const TxlBpe *b)
{
  return b->n_tokens;
}

int
txl_bpe_n_merges(const TxlBpe *b)
{
  return (int)(b->merges->len / 3);
}

guint
txl_bpe_normalize(const TxlBpe *b)
{
  return b->rules;
}

const char *
txl_bpe_token(const TxlBpe *b, int id, gsize *len)
{
  if (id < 0 || id >= b->n_tokens) {
    *len = 0;
    return NULL;
  }
  *len = g_array_index(b->len, guint32, id);
  return (const char *)b->blob->data + g_array_index(b->off, guint32, id);
}

gboolean
txl_bpe_is_special(const TxlBpe *b, int id)
{
  return id >= 0 && id < b->n_tokens && g_array_index(b->special, guint8, id);
}

int
txl_bpe_merge(const TxlBpe *b, int k, int *left, int *right)
{
  if (k < 0 || k >= txl_bpe_n_merges(b))
    return -1;
  const guint32 *m = (const guint32 *)b->merges->data + 3 * k;
  *left = (int)m[0];
  *right = (int)m[1];
  return (int)m[2];
}

int
txl_bpe_byte_id(const TxlBpe *b, guchar c)
{
  return b->byte_id[c];
}

int
txl_bpe_placeholder_id(const TxlBpe *b, TxlNormRule r, gboolean spaced)
{
  return (unsigned)r < TXL_NORM_N_RULES ? b->ph[r][spaced ? 1 : 0] : -1;
}

int
bpe_add_token(TxlBpe *b, const void *s, gsize len, gboolean special, int *dup)
{
  if (!special) {
    GBytes *k = g_bytes_new(s, len);
    gpointer v = g_hash_table_lookup(b->by_bytes, k);
    if (v) {
      g_bytes_unref(k);
      *dup = GPOINTER_TO_INT(v) - 1;
      return -1;
    }
    g_hash_table_insert(b->by_bytes, k, GINT_TO_POINTER(b->n_tokens + 1));
    if (len == 1)
      b->byte_id[*(const guchar *)s] = b->n_tokens;
  }
  guint32 off = b->blob->len, l = (guint32)len;
  guint8 sp = special ? 1 : 0;
  g_byte_array_append(b->blob, s, (guint)len);
  g_array_append_val(b->off, off);
  g_array_append_val(b->len, l);
  g_array_append_val(b->special, sp);
  return b->n_tokens++;
}

static int
bpe_find(const TxlBpe *b, const void *s, gsize len)
{
  GBytes *k = g_bytes_new_static(s, len);
  int id = GPOINTER_TO_INT(g_hash_table_lookup(b->by_bytes, k)) - 1;
  g_bytes_unref(k);
  return id;
}

/* Rank of merging a and b, or -1. */
static inline int
bpe_rank(const TxlBpe *b, guint32 l, guint32 r)
{
  guint64 key = pair_key(l, r);
  for (guint32 i = pair_slot(key, b->pmask);; i = (i + 1) & b->pmask) {
    if (!b->pval[i])
      return -1;
    if (b->pkey[i] == key)
      return (int)b->pval[i] - 1;
  }
}

void
bpe_finalize(TxlBpe *b)
{
  guint32 nm = b->merges->len / 3, size = 16;
  while (size < 2 * nm + 16)
    size *= 2;
  g_free(b->pkey);
  g_free(b->pval);
  b->pkey = g_new0(guint64, size);
  b->pval = g_new0(guint32, size);
  b->pmask = size - 1;
  const guint32 *m = (const guint32 *)b->merges->data;
  for (guint32 k = 0; k < nm; k++) {
    guint64 key = pair_key(m[3 * k], m[3 * k + 1]);
    guint32 i = pair_slot(key, b->pmask);
    while (b->pval[i] && b->pkey[i] != key)
      i = (i + 1) & b->pmask;
    if (!b->pval[i]) { /* the first rank of a pair wins */
      b->pkey[i] = key;
      b->pval[i] = k + 1;
    }
  }
  for (int r = 0; r < TXL_NORM_N_RULES; r++)
    b->ph[r][0] = b->ph[r][1] = -1;
  for (int id = 0; id < b->n_tokens; id++) {
    if (!txl_bpe_is_special(b, id))
      continue;
    gsize len;
    const char *s = txl_bpe_token(b, id, &len);
    gboolean spaced = len > 0 && s[0] == ' ';
    for (int r = 0; r < TXL_NORM_N_RULES; r++) {
      const char *ph = txl_norm_placeholder(r);
      if ((b->rules & (1u << r)) && len == strlen(ph) + spaced &&
          memcmp(s + spaced, ph, len - spaced) == 0 && b->ph[r][spaced] < 0)
        b->ph[r][spaced] = id;
    }
  }
}

guint
txl_bytes_key_hash(gconstpointer key)
{
  const TxlBytesKey *k = key;
  return txl_fnv1a(k->s, k->len);
}

gboolean
txl_bytes_key_equal(gconstpointer a, gconstpointer b)
{
  const TxlBytesKey *x = a, *y = b;
  return x->len == y->len && memcmp(x->s, y->s, x->len) == 0;
}

/* ---- model file ------------------------------------------------------ */

static gboolean
load_rules(TxlBpe *b, const GgufFile *f, GError **error)
{
  if (!gguf_has_key(f, "tokenizer.normalize"))
    return TRUE;
  gint64 ver;
  if (!gguf_get_int(f, "tokenizer.normalize_version", 0, G_MAXINT32, &ver,
                    error))
    return FALSE;
  if (ver != TXL_NORM_VERSION)
    return txl_fail(error, TXL_ERROR_UNSUPPORTED,
                    "tokenizer.normalize_version %" G_GINT64_FORMAT
                    " is not supported (this library applies version %d)",
                    ver, TXL_NORM_VERSION);
  const char **names;
  gsize *lens, n;
  if (!gguf_get_string_array(f, "tokenizer.normalize", &names, &lens, &n,
                             error))
    return FALSE;
  gboolean ok = TRUE;
  for (gsize i = 0; i < n && ok; i++) {
    int r = txl_norm_rule_from_name(names[i], lens[i]);
    if (r < 0) {
      g_autofree char *raw = g_strndup(names[i], MIN(lens[i], 64));
      g_autofree char *esc = g_strescape(raw, NULL);
      ok =
          txl_fail(error, TXL_ERROR_UNSUPPORTED,
                   "tokenizer.normalize[%zu] '%s' is not a known rule", i, esc);
    } else if (b->rules & (1u << r)) {
      ok = txl_fail(error, TXL_ERROR_FORMAT,
                    "tokenizer.normalize[%zu]: rule '%s' listed twice", i,
                    txl_norm_rule_name(r));
    } else {
      b->rules |= 1u << r;
    }
  }
  g_free(names);
  g_free(lens);
  return ok;
}

/* tokenizer.merges (nm ids, in pairs) into b->merges, each checked: ids
 * in range, not special, created by the bytes or an earlier merge, and
 * concatenating to a listed token.  made[id] is set for every result. */
static gboolean
load_merges(TxlBpe *b, const char **toks, const gsize *tlen, gsize n,
            const gint64 *merges, gsize nm, const guint8 *is_sp, guint8 *made,
            int n_token, GError **error)
{
  /* A merge may only use tokens that exist by then: bytes, or results of
   * earlier merges.  This orders the merges and so rules out cycles. */
  guint8 *avail = g_new0(guint8, n);
  for (int c = 0; c < 256; c++)
    avail[b->byte_id[c]] = 1;
  GByteArray *cat = g_byte_array_new();
  for (gsize k = 0; k < nm / 2; k++) {
    gint64 l = merges[2 * k], r = merges[2 * k + 1];
    for (int side = 0; side < 2; side++) {
      gint64 id = side ? r : l;
      if (id < 0 || id >= n_token) {
        txl_fail(error, TXL_ERROR_FORMAT,
                 "tokenizer.merges[%zu] = %" G_GINT64_FORMAT
                 " is not a token id (n_token %d)", 2 * k + side, id, n_token);
        g_byte_array_unref(cat);
        g_free(avail);
        return FALSE;
      }
      if (is_sp[id] || !avail[id]) {
        txl_fail(error, TXL_ERROR_FORMAT,
                 "tokenizer.merges[%zu] uses id %" G_GINT64_FORMAT
                 ", which is %s", 2 * k + side, id,
                 is_sp[id] ? "a special token"
                           : "not created by any earlier merge (merges must "
                             "be in rank order, without cycles)");
        g_byte_array_unref(cat);
        g_free(avail);
        return FALSE;
      }
    }
    g_byte_array_set_size(cat, 0);
    g_byte_array_append(cat, (const guint8 *)toks[l], (guint)tlen[l]);
    g_byte_array_append(cat, (const guint8 *)toks[r], (guint)tlen[r]);
    int res = cat->len <= TXL_BPE_MAX_TOKEN ? bpe_find(b, cat->data, cat->len)
                                            : -1;
    if (res < 0) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tokenizer.merges pair %zu (%" G_GINT64_FORMAT
               ", %" G_GINT64_FORMAT
               "): their concatenation is not in tokenizer.tokens",
               k, l, r);
      g_byte_array_unref(cat);
      g_free(avail);
      return FALSE;
    }
    avail[res] = made[res] = 1;
    guint32 tri[3] = { (guint32)l, (guint32)r, (guint32)res };
    g_array_append_vals(b->merges, tri, 3);
  }
  g_byte_array_unref(cat);
  g_free(avail);
  return TRUE;
}

TxlBpe *
txl_bpe_load_gguf(const GgufFile *f, int n_token, GError **error)
{
  TxlBpe *b = bpe_new();
  const char **toks = NULL;
  gsize *tlen = NULL, n = 0, nm = 0, ns = 0;
  gint64 *merges = NULL, *specials = NULL;
  guint8 *made = NULL, *is_sp = NULL;
  gboolean ok = FALSE;
  g_autofree char *pre = gguf_get_string(f, "tokenizer.pre", error);
  if (!pre)
    goto out;
  if (strcmp(pre, TXL_BPE_PRE) != 0) {
    g_autofree char *esc = g_strescape(pre, NULL);
    txl_fail(error, TXL_ERROR_UNSUPPORTED,
             "tokenizer.pre '%s' is not supported (this library has '%s')", esc,
             TXL_BPE_PRE);
    goto out;
  }
  if (!gguf_get_string_array(f, "tokenizer.tokens", &toks, &tlen, &n, error))
    goto out;
  if (n != (gsize)n_token) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "tokenizer.tokens has %zu symbols, n_token is %d", n, n_token);
    goto out;
  }
  if (gguf_has_key(f, "tokenizer.specials") &&
      !gguf_get_int_array(f, "tokenizer.specials", &specials, &ns, error))
    goto out;
  is_sp = g_new0(guint8, n + 1);
  for (gsize i = 0; i < ns; i++) {
    if (specials[i] < 0 || specials[i] >= n_token) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tokenizer.specials[%zu] = %" G_GINT64_FORMAT
               " is not a token id (n_token %d)", i, specials[i], n_token);
      goto out;
    }
    if (is_sp[specials[i]]++) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tokenizer.specials[%zu]: id %" G_GINT64_FORMAT " listed twice",
               i, specials[i]);
      goto out;
    }
  }
  for (gsize i = 0; i < n; i++) {
    if (tlen[i] == 0 || tlen[i] > TXL_BPE_MAX_TOKEN) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tokenizer.tokens[%zu] has %zu bytes (1..%d allowed)", i,
               tlen[i], TXL_BPE_MAX_TOKEN);
      goto out;
    }
    int dup;
    if (bpe_add_token(b, toks[i], tlen[i], is_sp[i], &dup) < 0) {
      txl_fail(
          error, TXL_ERROR_FORMAT,
          "tokenizer.tokens[%zu] repeats the bytes of tokenizer.tokens[%d]", i,
          dup);
      goto out;
    }
  }
  for (int c = 0; c < 256; c++)
    if (b->byte_id[c] < 0) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tokenizer.tokens lacks a token for the byte 0x%02x", c);
      goto out;
    }
  if (!gguf_get_int_array(f, "tokenizer.merges", &merges, &nm, error))
    goto out;
  if (nm % 2) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "tokenizer.merges has %zu ids, not a whole number of pairs", nm);
    goto out;
  }
  made = g_new0(guint8, n);
  if (!load_merges(b, toks, tlen, n, merges, nm, is_sp, made, n_token, error))
    goto out;
  for (gsize i = 0; i < n; i++)
    if (!is_sp[i] && tlen[i] > 1 && !made[i]) {
      txl_fail(
          error, TXL_ERROR_FORMAT,
          "tokenizer.tokens[%zu] is not created by any of tokenizer.merges", i);
      goto out;
    }
  if (!load_rules(b, f, error))
    goto out;
  bpe_finalize(b);
  /* every merge pair must be listed once: a second rank would be dead */
  const guint32 *m = (const guint32 *)b->merges->data;
  for (gsize k = 0; k < nm / 2; k++)
    if (bpe_rank(b, m[3 * k], m[3 * k + 1]) != (int)k) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "tokenizer.merges pair %zu (%u, %u) repeats an earlier pair", k,
               m[3 * k], m[3 * k + 1]);
      goto out;
    }
  for (int r = 0; r < TXL_NORM_N_RULES; r++)
    for (int sp = 0; sp < 2 && (b->rules & (1u << r)); sp++)
      if (b->ph[r][sp] < 0) {
        txl_fail(error, TXL_ERROR_FORMAT,
                 "tokenizer.normalize has '%s' but tokenizer.specials has no "
                 "'%s%s' token", txl_norm_rule_name(r), sp ? " " : "",
                 txl_norm_placeholder(r));
        goto out;
      }
  ok = TRUE;

out:
  g_free(toks);
  g_free(tlen);
  g_free(merges);
  g_free(specials);
  g_free(made);
  g_free(is_sp);
  if (!ok) {
    txl_bpe_free(b);
    return NULL;
  }
  return b;
}

void
txl_bpe_write_gguf(const TxlBpe *b, GgufWriter *w)
{
  gguf_writer_add_string(w, "tokenizer.type", "bpe");
  gguf_writer_add_string(w, "tokenizer.pre", TXL_BPE_PRE);
  const char **s = g_new(const char *, b->n_tokens + 1);
  gsize *l = g_new(gsize, b->n_tokens + 1);
  GArray *sp = g_array_new(FALSE, FALSE, sizeof(guint32));
  for (int i = 0; i < b->n_tokens; i++) {
    s[i] = txl_bpe_token(b, i, &l[i]);
    if (txl_bpe_is_special(b, i)) {
      guint32 id = (guint32)i;
      g_array_append_val(sp, id);
    }
  }
  gguf_writer_add_string_array(w, "tokenizer.tokens", s, l, b->n_tokens);
  gguf_writer_add_u32_array(w, "tokenizer.specials", (const uint32_t *)sp->data,
                            sp->len);
  guint nm = b->merges->len / 3;
  uint32_t *pairs = g_new(uint32_t, 2 * nm + 1);
  const guint32 *m = (const guint32 *)b->merges->data;
  for (guint k = 0; k < nm; k++) {
    pairs[2 * k] = m[3 * k];
    pairs[2 * k + 1] = m[3 * k + 1];
  }
  gguf_writer_add_u32_array(w, "tokenizer.merges", pairs, 2 * nm);
  if (b->rules) {
    const char *names[TXL_NORM_N_RULES];
    gsize lens[TXL_NORM_N_RULES], k = 0;
    for (int r = 0; r < TXL_NORM_N_RULES; r++)
      if (b->rules & (1u << r)) {
        names[k] = txl_norm_rule_name(r);
        lens[k] = strlen(names[k]);
        k++;
      }
    gguf_writer_add_string_array(w, "tokenizer.normalize", names, lens, k);
    gguf_writer_add_u32(w, "tokenizer.normalize_version", TXL_NORM_VERSION);
  }
  g_free(pairs);
  g_array_unref(sp);
  g_free(s);
  g_free(l);
}

void
txl_bpe_checksum(const TxlBpe *b, GChecksum *cs)
{
  guint32 hdr[5] = { (guint32)b->n_tokens, b->merges->len / 3, b->rules,
                     TXL_NORM_VERSION, TXL_BPE_MAX_CHUNK };
  g_checksum_update(cs, (const guchar *)TXL_BPE_PRE, strlen(TXL_BPE_PRE));
  g_checksum_update(cs, (const guchar *)hdr, sizeof hdr);
  g_checksum_update(cs, (const guchar *)b->special->data, b->special->len);
  g_checksum_update(cs, (const guchar *)b->len->data, b->len->len * 4);
  g_checksum_update(cs, b->blob->data, b->blob->len);
  g_checksum_update(cs, (const guchar *)b->merges->data, b->merges->len * 4);
}

/* ---- pre-tokenizer ---------------------------------------------------- */

/* Byte classes.  Bytes >= 0x80 count as letters so that UTF-8 sequences
 * (and any other 8-bit text) stay inside words; '_' too, since
 * snake_case identifiers are words in logs. */
enum { K_NONE, K_SPACE, K_LETTER, K_DIGIT, K_PUNCT, K_NL };

static inline int
byte_kind(guchar c)
{
  if (c == '\n')
    return K_NL;
  if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f')
    return K_SPACE;
  if (c >= '0' && c <= '9')
    return K_DIGIT;
  if (c >= 0x80 || c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
    return K_LETTER;
  return K_PUNCT;
}

struct _TxlPretok {
  const TxlBpe *bpe;
  guint rules;
  TxlPieceFunc func;
  gpointer data;
  gsize offset; /* absolute offset of the next input byte */
  guchar chunk[TXL_BPE_MAX_CHUNK];
  gsize clen, cstart;
  int ckind;
  GByteArray *line; /* normalisation: the line (segment) so far */
  gsize line_start;
};

TxlPretok *
txl_pretok_new(const TxlBpe *bpe, TxlPieceFunc func, gpointer data)
{
  TxlPretok *p = g_new0(TxlPretok, 1);
  p->bpe = bpe;
  p->rules = bpe->rules;
  p->func = func;
  p->data = data;
  p->line = g_byte_array_new();
  return p;
}

void
txl_pretok_free(TxlPretok *p)
{
  if (!p)
    return;
  g_byte_array_unref(p->line);
  g_free(p);
}

static void
chunk_flush(TxlPretok *p)
{
  if (p->clen)
    p->func(p->chunk, p->clen, p->cstart, -1, p->data);
  p->clen = 0;
  p->ckind = K_NONE;
}

/* The chunk rules (GPT-2-like, written for bytes): a run of one class
 * (letters, digits, punctuation, spaces) is a chunk; the last ' ' of a
 * space run joins the word after it, so " the" is one chunk; '\n' is
 * always a chunk of its own; a chunk ends after TXL_BPE_MAX_CHUNK bytes.
 * Each decision needs only the bytes already seen, except the space run,
 * which is held until the next byte: so the chunks never depend on how
 * the input was cut. */
static inline void
chunk_byte(TxlPretok *p, guchar c, gsize off)
{
  int k = byte_kind(c);
  if (k == K_NL) {
    chunk_flush(p);
    p->func(&c, 1, off, -1, p->data);
    return;
  }
  if (p->clen == TXL_BPE_MAX_CHUNK)
    chunk_flush(p);
  if (k != p->ckind) {
    if (k != K_SPACE && p->ckind == K_SPACE && p->chunk[p->clen - 1] == ' ') {
      if (p->clen > 1)
        p->func(p->chunk, p->clen - 1, p->cstart, -1, p->data);
      p->cstart += p->clen - 1;
      p->chunk[0] = ' ';
      p->clen = 1;
    } else {
      chunk_flush(p);
      p->cstart = off;
    }
    p->ckind = k;
  }
  p->chunk[p->clen++] = c;
}

/* A normalised field at line[i..j) becomes one special token; like a word
 * it takes the ' ' before it, as the spaced placeholder. */
static void
chunk_field(TxlPretok *p, TxlNormRule r, gsize i, gsize j)
{
  const guchar *s = p->line->data;
  int spaced = p->bpe->ph[r][1];
  if (p->ckind == K_SPACE && p->chunk[p->clen - 1] == ' ' && spaced >= 0 &&
      i > 0) {
    if (p->clen > 1)
      p->func(p->chunk, p->clen - 1, p->cstart, -1, p->data);
    p->clen = 0;
    p->ckind = K_NONE;
    p->func(s + i - 1, j - i + 1, p->line_start + i - 1, spaced, p->data);
  } else {
    chunk_flush(p);
    p->func(s + i, j - i, p->line_start + i, p->bpe->ph[r][0], p->data);
  }
}

typedef struct {
  TxlPretok *p;
  gsize done;
} LineScan;

static void
on_field(TxlNormRule r, gsize i, gsize j, gpointer data)
{
  LineScan *ls = data;
  TxlPretok *p = ls->p;
  for (gsize k = ls->done; k < i; k++)
    chunk_byte(p, p->line->data[k], p->line_start + k);
  chunk_field(p, r, i, j);
  ls->done = j;
}

static void
process_line(TxlPretok *p)
{
  LineScan ls = { p, 0 };
  txl_norm_scan(p->rules, p->line->data, p->line->len, on_field, &ls);
  for (gsize k = ls.done; k < p->line->len; k++)
    chunk_byte(p, p->line->data[k], p->line_start + k);
  g_byte_array_set_size(p->line, 0);
}

void
txl_pretok_push(TxlPretok *p, const guchar *data, gsize len)
{
  if (!p->rules) {
    for (gsize i = 0; i < len; i++)
      chunk_byte(p, data[i], p->offset + i);
    p->offset += len;
    return;
  }
  /* Fields may span spaces (timestamps), so normalisation works on whole
   * lines, cut every TXL_NORM_SEGMENT bytes. */
  gsize i = 0;
  while (i < len) {
    if (p->line->len == 0)
      p->line_start = p->offset;
    gsize room = TXL_NORM_SEGMENT - p->line->len;
    const guchar *nl = memchr(data + i, '\n', MIN(len - i, room));
    gsize take = nl ? (gsize)(nl - (data + i)) : MIN(len - i, room);
    g_byte_array_append(p->line, data + i, (guint)take);
    p->offset += take;
    i += take;
    if (nl) {
      process_line(p);
      chunk_byte(p, '\n', p->offset);
      p->offset++;
      i++;
    } else if (p->line->len == TXL_NORM_SEGMENT) {
      process_line(p);
      chunk_flush(p);
    }
  }
}

/* Called at a line's start, where nothing is held back: the bytes (a
 * record header, record.h) move the offsets and make no piece. */
void
txl_pretok_skip(TxlPretok *p, gsize n)
{
  chunk_flush(p);
  p->offset += n;
}

void
txl_pretok_finish(TxlPretok *p)
{
  if (p->line->len)
    process_line(p);
  chunk_flush(p);
}

gsize
txl_pretok_state_size(const TxlPretok *p)
{
  return 8 + 8 + 4 + 4 + p->clen + 8 + 4 + p->line->len;
}

void
txl_pretok_save(const TxlPretok *p, GByteArray *out)
{
  txl_put_u64(out, p->offset);
  txl_put_u64(out, p->cstart);
  txl_put_u32(out, (guint32)p->clen);
  txl_put_u32(out, (guint32)p->ckind);
  g_byte_array_append(out, p->chunk, (guint)p->clen);
  txl_put_u64(out, p->line_start);
  txl_put_u32(out, p->line->len);
  g_byte_array_append(out, p->line->data, p->line->len);
}

gboolean
txl_pretok_restore(TxlPretok *p, TxlReader *r)
{
  guint64 offset = txl_get_u64(r), cstart = txl_get_u64(r);
  guint32 clen = txl_get_u32(r), ckind = txl_get_u32(r);
  if (!r->ok)
    return FALSE;
  /* chunk_byte reads chunk[clen - 1] of a space run: a held chunk is
   * never empty, and an empty one has no kind */
  if (clen > TXL_BPE_MAX_CHUNK || ckind >= K_NL || (clen == 0) != (ckind == K_NONE))
    return FALSE;
  const guint8 *chunk = txl_get_raw(r, clen);
  guint64 line_start = txl_get_u64(r);
  guint32 llen = txl_get_u32(r);
  if (!r->ok || llen >= TXL_NORM_SEGMENT || (llen && !p->rules) ||
      cstart > offset || line_start > offset)
    return FALSE;
  const guint8 *line = txl_get_raw(r, llen);
  if (!line)
    return FALSE;
  memcpy(p->chunk, chunk, clen);
  p->clen = clen;
  p->ckind = (int)ckind;
  p->cstart = cstart;
  p->offset = offset;
  p->line_start = line_start;
  g_byte_array_set_size(p->line, 0);
  g_byte_array_append(p->line, line, llen);
  return TRUE;
}

/* ---- chunk encoder ----------------------------------------------------- */

/* Direct-mapped cache of short chunks and their tokens.  A log repeats
 * the same words and punctuation on every line, so most chunks are found
 * here and skip the merge loop. */
#define CACHE_SLOTS 4096
#define CACHE_BYTES 24
#define CACHE_TOKENS 12

typedef struct {
  guint8 len, n; /* len 0: empty */
  guint8 bytes[CACHE_BYTES];
  guint8 end[CACHE_TOKENS];
  int32_t id[CACHE_TOKENS];
} CacheSlot;

struct _TxlBpeCache {
  const TxlBpe *bpe; /* the entries are valid for this vocabulary only */
  CacheSlot slot[CACHE_SLOTS];
};

static inline guint32
cache_hash(const guchar *s, gsize n)
{
  guint32 h = txl_fnv1a(s, n);
  return (h ^ (h >> 15)) & (CACHE_SLOTS - 1);
}

void
txl_bpe_out_clear(TxlBpeOut *o)
{
  txl_free_each(g_free, o->cache, o->id, o->end, o->sym, o->next, o->prev,
                o->heap);
  memset(o, 0, sizeof *o);
}

static void
out_reserve(TxlBpeOut *o, gsize n)
{
  if (n <= o->cap)
    return;
  gsize c = MAX(n, 2 * o->cap);
  o->id = g_renew(int32_t, o->id, c);
  o->end = g_renew(guint32, o->end, c);
  o->sym = g_renew(int32_t, o->sym, c);
  o->next = g_renew(guint32, o->next, c);
  o->prev = g_renew(guint32, o->prev, c);
  o->heap = g_renew(guint64, o->heap, 3 * c);
  o->cap = c;
}

/* Min-heap of (rank << 32 | position): the lowest rank merges first, and
 * among equal ranks the leftmost, as training applied it. */
static inline gboolean
key_before(const guint64 *a, const guint64 *b)
{
  return *a < *b;
}

TXL_DEFINE_HEAP(heap, guint64, key_before)

static void encode_merge(const TxlBpe *b, const guchar *s, gsize n,
                         TxlBpeOut *o);

void
txl_bpe_encode_chunk(const TxlBpe *b, const guchar *s, gsize n, TxlBpeOut *o)
{
  out_reserve(o, MAX(n, CACHE_TOKENS));
  o->n = 0;
  if (n == 0)
    return;
  if (n == 1) {
    o->id[0] = b->byte_id[s[0]];
    o->end[0] = 1;
    o->n = 1;
    return;
  }
  if (n > CACHE_BYTES) {
    encode_merge(b, s, n, o);
    return;
  }
  if (!o->cache || o->cache->bpe != b) {
    if (!o->cache)
      o->cache = g_new(struct _TxlBpeCache, 1);
    memset(o->cache, 0, sizeof *o->cache);
    o->cache->bpe = b;
  }
  CacheSlot *c = &o->cache->slot[cache_hash(s, n)];
  if (c->len == n && memcmp(c->bytes, s, n) == 0) {
    for (int i = 0; i < c->n; i++) {
      o->id[i] = c->id[i];
      o->end[i] = c->end[i];
    }
    o->n = c->n;
    return;
  }
  encode_merge(b, s, n, o);
  if (o->n <= CACHE_TOKENS) {
    c->len = (guint8)n;
    c->n = (guint8)o->n;
    memcpy(c->bytes, s, n);
    for (gsize i = 0; i < o->n; i++) {
      c->id[i] = o->id[i];
      c->end[i] = (guint8)o->end[i];
    }
  }
}

/* The merge loop proper: O(n log n) for any n. */
static void
encode_merge(const TxlBpe *b, const guchar *s, gsize n, TxlBpeOut *o)
{
  int32_t *sym = o->sym;
  guint32 *next = o->next, *prev = o->prev;
  guint64 *h = o->heap;
  gsize hn = 0;
  for (gsize i = 0; i < n; i++) {
    sym[i] = b->byte_id[s[i]];
    next[i] = i + 1 < n ? (guint32)(i + 1) : NONE32;
    prev[i] = i ? (guint32)(i - 1) : NONE32;
  }
  for (gsize i = 0; i + 1 < n; i++) {
    int r = bpe_rank(b, sym[i], sym[i + 1]);
    if (r >= 0)
      heap_push(h, &hn, ((guint64)r << 32) | i);
  }
  const guint32 *m = (const guint32 *)b->merges->data;
  while (hn) {
    guint64 top = heap_pop(h, &hn);
    guint32 i = (guint32)top, r = (guint32)(top >> 32), j = next[i];
    /* stale entries: the left symbol was absorbed, or either side has
     * changed since (a pair's rank identifies it, so equal rank means the
     * same pair) */
    if (sym[i] < 0 || j == NONE32 || bpe_rank(b, sym[i], sym[j]) != (int)r)
      continue;
    sym[i] = (int32_t)m[3 * r + 2];
    sym[j] = -1;
    next[i] = next[j];
    if (next[j] != NONE32)
      prev[next[j]] = i;
    int nr;
    if (prev[i] != NONE32 && (nr = bpe_rank(b, sym[prev[i]], sym[i])) >= 0)
      heap_push(h, &hn, ((guint64)nr << 32) | prev[i]);
    if (next[i] != NONE32 && (nr = bpe_rank(b, sym[i], sym[next[i]])) >= 0)
      heap_push(h, &hn, ((guint64)nr << 32) | i);
  }
  for (guint32 i = 0; i != NONE32; i = next[i]) {
    o->id[o->n] = sym[i];
    o->end[o->n++] = next[i] == NONE32 ? (guint32)n : next[i];
  }
}
