/* Tokenizers stored in the model file, and a streaming encoder whose
 * output depends only on the concatenated input, never on how it was cut
 * into pieces. */
#include "model_internal.h"

#include <string.h>

typedef struct {
  const char *s;
  gsize len;
} Sym;

static guint
sym_hash(gconstpointer p)
{
  const Sym *k = p;
  guint h = 2166136261u;
  for (gsize i = 0; i < k->len; i++)
    h = (h ^ (guchar)k->s[i]) * 16777619u;
  return h;
}

static gboolean
sym_equal(gconstpointer a, gconstpointer b)
{
  const Sym *x = a, *y = b;
  return x->len == y->len && memcmp(x->s, y->s, x->len) == 0;
}

void
txl_tokenizer_clear(TxlTokenizer *t)
{
  if (t->lookup)
    g_hash_table_unref(t->lookup);
  g_free(t->sym);
  g_free(t->sym_len);
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
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "tokenizer.type 'byte' needs n_token >= 256, not %d",
                  n_token);
      return FALSE;
    }
    return TRUE;
  }
  if (strcmp(type, "word") != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "tokenizer.type '%s' is not one of byte, word, none", type);
    return FALSE;
  }
  t->type = TXL_TOKENIZER_WORD;
  gsize n;
  if (!gguf_get_string_array(f, "tokenizer.tokens", &t->sym, &t->sym_len, &n,
                             error))
    return FALSE;
  if (n != (gsize)n_token) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "tokenizer.tokens has %zu symbols, n_token is %d", n, n_token);
    return FALSE;
  }
  if (!optional_id(f, "tokenizer.unk_id", n_token, &t->unk_id, error) ||
      !optional_id(f, "tokenizer.eos_id", n_token, &t->eos_id, error))
    return FALSE;
  if (gguf_has_key(f, "tokenizer.lower_case") &&
      !gguf_get_bool(f, "tokenizer.lower_case", &t->lower_case, error))
    return FALSE;
  t->lookup = g_hash_table_new_full(sym_hash, sym_equal, g_free, NULL);
  for (int i = 0; i < n_token; i++) {
    Sym *k = g_new(Sym, 1);
    k->s = t->sym[i];
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
txl_tokenizer_n_tokens(const TxlTokenizer *t)
{
  return t->n_tokens;
}

const char *
txl_tokenizer_symbol(const TxlTokenizer *t, int id, gsize *len)
{
  *len = 0;
  if (id < 0 || id >= t->n_tokens)
    return NULL;
  if (t->type == TXL_TOKENIZER_WORD) {
    *len = t->sym_len[id];
    return t->sym[id];
  }
  if (t->type == TXL_TOKENIZER_BYTE && id < 256) {
    *len = 1;
    return t->byte_sym + id;
  }
  return "";
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
};

TxlEncoder *
txl_encoder_new(const TxlTokenizer *tok, TxlTokenFunc func, gpointer data)
{
  TxlEncoder *e = g_new0(TxlEncoder, 1);
  e->tok = tok;
  e->func = func;
  e->data = data;
  e->line = 1;
  e->word = g_string_new(NULL);
  return e;
}

void
txl_encoder_free(TxlEncoder *e)
{
  if (!e)
    return;
  g_string_free(e->word, TRUE);
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
  Sym k = { e->word->str, e->word->len };
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

void
txl_encoder_push(TxlEncoder *e, const char *data, gsize len)
{
  const TxlTokenizer *t = e->tok;
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

void
txl_encoder_finish(TxlEncoder *e)
{
  /* an unterminated last line still ends: it gets its <eos> */
  if (e->tok->type == TXL_TOKENIZER_WORD &&
      (e->line_has_text || e->word->len > 0)) {
    end_line(e, e->offset);
    e->line++;
    e->line_has_text = FALSE;
  }
}
