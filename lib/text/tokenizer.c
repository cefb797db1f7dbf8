/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tokenizers stored in the model file, and a streaming encoder whose
 * output depends only on the concatenated input, never on how it was cut
 * into pieces. */
#include "bpe.h"
#include "filemap.h"
#include "freeeach.h"
#include "record.h"
#include "model_internal.h"

#include <string.h>

void
txl_tokenizer_clear(TxlTokenizer *t)
{
  g_clear_pointer(&t->lookup, g_hash_table_unref);
  txl_bpe_free(t->bpe);
  txl_free_each(g_free, t->sym, t->sym_len);
  memset(t, 0, sizeof *t);
}

static gboolean
optional_id(const GgufFile *f, const char *key, int n_token, int *out,
            GError **error)
{
  *out = -1;
  if (!gguf_has_key(f, key))
    return TRUE;
  gint64 v;
  if (!gguf_get_int(f, key, 0, n_token - 1, &v, error))
    return FALSE;
  *out = (int)v;
  return TRUE;
}

/* sym/sym_len of a bpe tokenizer point at its token bytes, so symbol()
 * and the vocabulary id treat it like a word list. */
static void
bpe_symbols(TxlTokenizer *t)
{
  t->n_tokens = txl_bpe_n_tokens(t->bpe);
  t->sym = g_new(const char *, t->n_tokens + 1);
  t->sym_len = g_new(gsize, t->n_tokens + 1);
  for (int i = 0; i < t->n_tokens; i++)
    t->sym[i] = txl_bpe_token(t->bpe, i, &t->sym_len[i]);
}

TxlTokenizer *
txl_tokenizer_new_bpe(TxlBpe *bpe)
{
  TxlTokenizer *t = g_new0(TxlTokenizer, 1);
  t->type = TXL_TOKENIZER_BPE;
  t->unk_id = t->eos_id = -1;
  t->bpe = bpe;
  bpe_symbols(t);
  return t;
}

void
txl_tokenizer_free(TxlTokenizer *t)
{
  if (!t)
    return;
  txl_tokenizer_clear(t);
  g_free(t);
}

const TxlBpe *
txl_tokenizer_get_bpe(const TxlTokenizer *t)
{
  return t->type == TXL_TOKENIZER_BPE ? t->bpe : NULL;
}

/* Everything that decides which ids a text becomes: two models with the
 * same digest tokenise every input alike. */
void
txl_tokenizer_checksum(const TxlTokenizer *t, GChecksum *cs)
{
  guint32 hdr[4] = { t->type, (guint32)t->n_tokens, (guint32)t->unk_id,
                     (guint32)t->eos_id };
  g_checksum_update(cs, (const guchar *)hdr, sizeof hdr);
  guchar lc = t->lower_case ? 1 : 0;
  g_checksum_update(cs, &lc, 1);
  for (int i = 0; t->sym && i < t->n_tokens; i++) {
    guint64 len = t->sym_len[i];
    g_checksum_update(cs, (const guchar *)&len, sizeof len);
    g_checksum_update(cs, (const guchar *)t->sym[i], t->sym_len[i]);
  }
  if (t->bpe)
    txl_bpe_checksum(t->bpe, cs);
}

gboolean
txl_tokenizer_load(TxlTokenizer *t, const GgufFile *f, int n_token,
                   GError **error)
{
  memset(t, 0, sizeof *t);
  t->unk_id = t->eos_id = -1;
  t->n_tokens = n_token;
  g_autofree char *type = gguf_get_string(f, "tokenizer.type", error);
  if (!type)
    return FALSE;
  if (strcmp(type, "none") == 0) {
    t->type = TXL_TOKENIZER_NONE;
    return TRUE;
  }
  if (strcmp(type, "byte") == 0) {
    t->type = TXL_TOKENIZER_BYTE;
    for (int i = 0; i < 256; i++)
      t->byte_sym[i] = (char)i;
    if (n_token < 256) {
      return txl_fail(error, TXL_ERROR_FORMAT,
                      "tokenizer.type 'byte' needs n_token >= 256, not %d",
                      n_token);
    }
    return TRUE;
  }
  if (strcmp(type, "bpe") == 0) {
    t->type = TXL_TOKENIZER_BPE;
    t->bpe = txl_bpe_load_gguf(f, n_token, error);
    if (!t->bpe)
      return FALSE;
    bpe_symbols(t);
    return TRUE;
  }
  if (strcmp(type, "word") != 0) {
    g_autofree char *esc = g_strescape(type, NULL);
    return txl_fail(error, TXL_ERROR_UNSUPPORTED,
                    "tokenizer.type '%s' is not one of byte, word, bpe, none",
                    esc);
  }
  t->type = TXL_TOKENIZER_WORD;
  gsize n;
  if (!gguf_get_string_array(f, "tokenizer.tokens", &t->sym, &t->sym_len, &n,
                             error))
    return FALSE;
  if (n != (gsize)n_token) {
    return txl_fail(error, TXL_ERROR_FORMAT,
                    "tokenizer.tokens has %zu symbols, n_token is %d", n,
                    n_token);
  }
  if (!optional_id(f, "tokenizer.unk_id", n_token, &t->unk_id, error) ||
      !optional_id(f, "tokenizer.eos_id", n_token, &t->eos_id, error))
    return FALSE;
  if (gguf_has_key(f, "tokenizer.lower_case") &&
      !gguf_get_bool(f, "tokenizer.lower_case", &t->lower_case, error))
    return FALSE;
  t->lookup = g_hash_table_new_full(txl_bytes_key_hash, txl_bytes_key_equal,
                                    g_free, NULL);
  for (int i = 0; i < n_token; i++) {
    TxlBytesKey *k = g_new(TxlBytesKey, 1);
    k->s = (const guchar *)t->sym[i];
    k->len = t->sym_len[i];
    /* the first of duplicate symbols wins, as a list lookup would */
    if (g_hash_table_contains(t->lookup, k))
      g_free(k);
    else
      g_hash_table_insert(t->lookup, k, GINT_TO_POINTER(i + 1));
  }
  return TRUE;
}

TxlTokenizerType
txl_tokenizer_type(const TxlTokenizer *t)
{
  return t->type;
}

int
txl_tokenizer_eos_id(const TxlTokenizer *t)
{
  return t->type == TXL_TOKENIZER_WORD ? t->eos_id : -1;
}

int
txl_tokenizer_n_tokens(const TxlTokenizer *t)
{
  return t->n_tokens;
}

const char *
txl_tokenizer_type_name(TxlTokenizerType type)
{
  static const char *const names[] = { "byte", "word", "none", "bpe" };
  return (unsigned)type < G_N_ELEMENTS(names) ? names[type] : "unknown";
}

const char *
txl_tokenizer_symbol(const TxlTokenizer *t, int id, gsize *len)
{
  *len = 0;
  if (id < 0 || id >= t->n_tokens)
    return NULL;
  if (t->type == TXL_TOKENIZER_WORD || t->type == TXL_TOKENIZER_BPE) {
    *len = t->sym_len[id];
    return t->sym[id];
  }
  if (t->type == TXL_TOKENIZER_BYTE && id < 256) {
    *len = 1;
    return t->byte_sym + id;
  }
  return "";
}

gboolean
txl_tokenizer_decode(const TxlTokenizer *t, const int32_t *ids, gsize n,
                     GByteArray *out, GError **error)
{
  for (gsize i = 0; i < n; i++) {
    int id = ids[i];
    gsize len;
    const char *s = txl_tokenizer_symbol(t, id, &len);
    if (!s || (t->type == TXL_TOKENIZER_BYTE && id >= 256) ||
        t->type == TXL_TOKENIZER_NONE) {
      return txl_fail(error, TXL_ERROR_INVALID,
                      "token %d (at %zu) has no text in this %s tokenizer of "
                      "%d ids", id, i, txl_tokenizer_type_name(t->type),
                      t->n_tokens);
    }
    if (t->type == TXL_TOKENIZER_WORD) {
      if (id == t->eos_id) {
        g_byte_array_append(out, (const guint8 *)"\n", 1);
        continue;
      }
      if (out->len && out->data[out->len - 1] != '\n')
        g_byte_array_append(out, (const guint8 *)" ", 1);
    }
    g_byte_array_append(out, (const guint8 *)s, (guint)len);
  }
  return TRUE;
}

/* ---- streaming encoder ----------------------------------------------- */

struct _TxlEncoder {
  const TxlTokenizer *tok;
  TxlTokenFunc func;
  gpointer data;
  gint64 line;    /* 1-based line of the next byte */
  gsize offset;   /* absolute offset of the next byte */
  GString *word;  /* word tokenizer: bytes of the word being read */
  gsize word_start;
  gboolean line_has_text;
  TxlPretok *pretok; /* bpe: chunks and fields, held back until certain */
  TxlBpeOut out;
  /* record headers (record.h): where the next byte stands, and the bytes of
   * a header not yet closed (text again if it never closes) */
  int hdr;
  GByteArray *held;
};

enum { HDR_BODY = 0, HDR_LINE_START = 1, HDR_OPEN = 2 };

/* bpe: a pre-token is final, encode it.  Line numbers advance here, as
 * the '\n' piece is emitted, since pieces lag behind the input. */
static void
bpe_piece(const guchar *s, gsize len, gsize start, int special, gpointer data)
{
  TxlEncoder *e = data;
  const TxlBpe *b = e->tok->bpe;
  if (special >= 0) {
    e->func(special, e->line, start, start + len, e->data);
    return;
  }
  if (len == 1) {
    e->func(txl_bpe_byte_id(b, s[0]), e->line, start, start + 1, e->data);
    if (s[0] == '\n')
      e->line++;
    return;
  }
  txl_bpe_encode_chunk(b, s, len, &e->out);
  gsize prev = 0;
  for (gsize i = 0; i < e->out.n; i++) {
    e->func(e->out.id[i], e->line, start + prev, start + e->out.end[i],
            e->data);
    prev = e->out.end[i];
  }
}

TxlEncoder *
txl_encoder_new(const TxlTokenizer *tok, TxlTokenFunc func, gpointer data)
{
  TxlEncoder *e = g_new0(TxlEncoder, 1);
  e->tok = tok;
  e->func = func;
  e->data = data;
  e->line = 1;
  e->hdr = HDR_LINE_START;
  e->held = g_byte_array_new();
  e->word = g_string_new(NULL);
  if (tok->type == TXL_TOKENIZER_BPE)
    e->pretok = txl_pretok_new(tok->bpe, bpe_piece, e);
  return e;
}

void
txl_encoder_free(TxlEncoder *e)
{
  if (!e)
    return;
  g_string_free(e->word, TRUE);
  g_byte_array_unref(e->held);
  txl_pretok_free(e->pretok);
  txl_bpe_out_clear(&e->out);
  g_free(e);
}

static void
emit_word(TxlEncoder *e)
{
  const TxlTokenizer *t = e->tok;
  if (e->word->len == 0)
    return;
  if (t->lower_case)
    for (gsize i = 0; i < e->word->len; i++)
      e->word->str[i] = g_ascii_tolower(e->word->str[i]);
  TxlBytesKey k = { (const guchar *)e->word->str, e->word->len };
  int id = GPOINTER_TO_INT(g_hash_table_lookup(t->lookup, &k)) - 1;
  if (id < 0)
    id = t->unk_id;
  /* without an <unk> symbol an unknown word has no id: it is skipped */
  if (id >= 0)
    e->func(id, e->line, e->word_start, e->word_start + e->word->len, e->data);
  g_string_truncate(e->word, 0);
}

static void
end_line(TxlEncoder *e, gsize at)
{
  emit_word(e);
  if (e->tok->eos_id >= 0)
    e->func(e->tok->eos_id, e->line, at, at + 1, e->data);
}

/* Text to tokenize (a record header never reaches here). */
static void
feed(TxlEncoder *e, const char *data, gsize len)
{
  const TxlTokenizer *t = e->tok;
  if (e->pretok) {
    txl_pretok_push(e->pretok, (const guchar *)data, len);
    e->offset += len;
    return;
  }
  for (gsize i = 0; i < len; i++, e->offset++) {
    guchar b = (guchar)data[i];
    if (t->type == TXL_TOKENIZER_BYTE) {
      e->func(b, e->line, e->offset, e->offset + 1, e->data);
    } else if (t->type == TXL_TOKENIZER_WORD) {
      if (b == '\n') {
        end_line(e, e->offset);
      } else if (b == ' ' || b == '\t' || b == '\r' || b == '\v' ||
                 b == '\f') {
        emit_word(e);
        e->line_has_text = TRUE;
      } else {
        if (e->word->len == 0)
          e->word_start = e->offset;
        g_string_append_c(e->word, (char)b);
        e->line_has_text = TRUE;
      }
    }
    if (b == '\n') {
      e->line++;
      e->line_has_text = FALSE;
    }
  }
}

/* A closed header: its bytes advance the offsets and make no token. */
static void
skip_header(TxlEncoder *e)
{
  if (e->pretok)
    txl_pretok_skip(e->pretok, e->held->len);
  e->offset += e->held->len;
  g_byte_array_set_size(e->held, 0);
}

/* A header that did not close (a line end, or too long): it was text. */
static void
replay_header(TxlEncoder *e)
{
  GByteArray *h = e->held;
  e->held = g_byte_array_new();
  feed(e, (const char *)h->data, h->len);
  g_byte_array_unref(h);
  e->hdr = HDR_BODY;
}

/* Splits the input at record headers (record.h): what a header holds is
 * skipped, the rest is fed to the tokenizer.  The same bytes give the same
 * ids however they are cut into pieces. */
void
txl_encoder_push(TxlEncoder *e, const char *data, gsize len)
{
  gsize i = 0;
  while (i < len) {
    guchar b = (guchar)data[i];
    if (e->hdr == HDR_LINE_START) {
      if (b == TXL_RECORD_RS) {
        g_byte_array_append(e->held, &b, 1);
        e->hdr = HDR_OPEN;
        i++;
      } else {
        e->hdr = HDR_BODY;
      }
    } else if (e->hdr == HDR_OPEN) {
      if (e->held->len >= TXL_RECORD_MAX_HEADER || b == '\n') {
        replay_header(e);
      } else {
        g_byte_array_append(e->held, &b, 1);
        i++;
        if (b == TXL_RECORD_RS) {
          skip_header(e);
          e->hdr = HDR_BODY;
        }
      }
    } else {
      const char *nl = memchr(data + i, '\n', len - i);
      gsize n = nl ? (gsize)(nl - (data + i)) + 1 : len - i;
      feed(e, data + i, n);
      i += n;
      if (nl)
        e->hdr = HDR_LINE_START;
    }
  }
}

void
txl_encoder_finish(TxlEncoder *e)
{
  if (e->hdr == HDR_OPEN)
    replay_header(e); /* a header cut off by the end of input was text */
  if (e->pretok) {
    txl_pretok_finish(e->pretok);
    return;
  }
  /* an unterminated last line still ends: it gets its <eos> */
  if (e->tok->type == TXL_TOKENIZER_WORD &&
      (e->line_has_text || e->word->len > 0)) {
    end_line(e, e->offset);
    e->line++;
    e->line_has_text = FALSE;
  }
}

/* ---- encoder state ---------------------------------------------------- */

/* Version 2 added the record header's place and held bytes; a version 1
 * state reads as being inside a line's text. */
#define ENC_STATE_VERSION 2u
#define ENC_STATE_FIXED (4 + 4 + 8 + 8 + 4 + 8 + 8 + 4 + 8)

/* Layout (little endian): u32 version, u32 tokenizer type, i64 line,
 * u64 offset, u32 line has text, u64 word start, u64 word length and its
 * bytes, u32 header place, u64 held header length and its bytes, then the
 * BPE pre-tokenizer's part (bpe.h) when there is one. */
gsize
txl_encoder_state_get_size(const TxlEncoder *e)
{
  return ENC_STATE_FIXED + e->word->len + e->held->len +
         (e->pretok ? txl_pretok_state_size(e->pretok) : 0);
}

static GByteArray *
encoder_bytes(const TxlEncoder *e)
{
  GByteArray *out = g_byte_array_sized_new(txl_encoder_state_get_size(e));
  txl_put_u32(out, ENC_STATE_VERSION);
  txl_put_u32(out, (guint32)e->tok->type);
  txl_put_u64(out, (guint64)e->line);
  txl_put_u64(out, e->offset);
  txl_put_u32(out, e->line_has_text ? 1 : 0);
  txl_put_u64(out, e->word_start);
  txl_put_u64(out, e->word->len);
  g_byte_array_append(out, (const guint8 *)e->word->str, (guint)e->word->len);
  txl_put_u32(out, (guint32)e->hdr);
  txl_put_u64(out, e->held->len);
  g_byte_array_append(out, e->held->data, e->held->len);
  if (e->pretok)
    txl_pretok_save(e->pretok, out);
  return out;
}

gsize
txl_encoder_state_get_data(const TxlEncoder *e, guint8 *dst, gsize size)
{
  gsize len = txl_encoder_state_get_size(e);
  if (!dst || size < len)
    return 0;
  GByteArray *b = encoder_bytes(e);
  memcpy(dst, b->data, len);
  g_byte_array_unref(b);
  return len;
}

GBytes *
txl_encoder_save(const TxlEncoder *e)
{
  return g_byte_array_free_to_bytes(encoder_bytes(e));
}

gboolean
txl_encoder_state_set_data(TxlEncoder *e, const guint8 *src, gsize size,
                           GError **error)
{
  TxlReader r;
  txl_reader_init_data(&r, src, size);
  guint32 version = txl_get_u32(&r), type = txl_get_u32(&r);
  guint64 line = txl_get_u64(&r), offset = txl_get_u64(&r);
  guint32 has_text = txl_get_u32(&r);
  guint64 wstart = txl_get_u64(&r), wlen = txl_get_u64(&r);
  if (!r.ok || version < 1 || version > ENC_STATE_VERSION)
    goto bad;
  if (type != (guint32)e->tok->type) {
    return txl_fail(error, TXL_ERROR_FORMAT,
                    "tokenizer state: saved by a %s tokenizer, this one is %s",
                    type <= TXL_TOKENIZER_BPE ? txl_tokenizer_type_name(type)
                                              : "unknown",
                    txl_tokenizer_type_name(e->tok->type));
  }
  if (line < 1 || line > G_MAXINT64 || has_text > 1 ||
      wlen > txl_reader_left(&r) ||
      (wlen && e->tok->type != TXL_TOKENIZER_WORD) || wstart > offset)
    goto bad;
  const guint8 *word = txl_get_raw(&r, (gsize)wlen);
  guint32 hdr = HDR_BODY;
  guint64 hlen = 0;
  const guint8 *held = NULL;
  if (version >= 2) {
    hdr = txl_get_u32(&r);
    hlen = txl_get_u64(&r);
    if (!r.ok || hdr > HDR_OPEN || hlen > txl_reader_left(&r) ||
        hlen >= TXL_RECORD_MAX_HEADER || (hlen > 0) != (hdr == HDR_OPEN))
      goto bad;
    held = txl_get_raw(&r, (gsize)hlen);
    if (hlen && held[0] != TXL_RECORD_RS)
      goto bad;
  }
  if (e->pretok) {
    /* a trial copy, so that nothing changes unless all of it is good */
    TxlPretok *trial = txl_pretok_new(e->tok->bpe, bpe_piece, e);
    if (!txl_pretok_restore(trial, &r) || !txl_reader_done(&r)) {
      txl_pretok_free(trial);
      goto bad;
    }
    txl_pretok_free(e->pretok);
    e->pretok = trial;
  } else if (!txl_reader_done(&r)) {
    goto bad;
  }
  e->line = (gint64)line;
  e->offset = offset;
  e->line_has_text = has_text != 0;
  e->word_start = wstart;
  g_string_truncate(e->word, 0);
  g_string_append_len(e->word, (const char *)word, (gssize)wlen);
  e->hdr = (int)hdr;
  g_byte_array_set_size(e->held, 0);
  if (hlen)
    g_byte_array_append(e->held, held, (guint)hlen);
  return TRUE;
bad:
  return txl_fail(error, TXL_ERROR_FORMAT,
                  "tokenizer state: malformed or from another version");
}

gboolean
txl_encoder_restore(TxlEncoder *e, GBytes *state, GError **error)
{
  gsize n;
  const guint8 *p = txl_bytes_data(state, &n);
  return txl_encoder_state_set_data(e, p, n, error);
}

gboolean
txl_encoder_at_line_start(const TxlEncoder *e)
{
  return e->hdr == HDR_LINE_START;
}

gint64
txl_encoder_line(const TxlEncoder *e)
{
  return e->line;
}

guint64
txl_encoder_offset(const TxlEncoder *e)
{
  return e->offset;
}
