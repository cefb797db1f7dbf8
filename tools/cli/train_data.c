/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "train_data.h"
#include "cmd.h"

#include "txl_text.h"
#include "txl_formats.h"

#include <string.h>

static gboolean
read_file(const char *path, GString *out, GChecksum *cs, GError **error)
{
  g_autofree char *buf = NULL;
  gsize len = 0;
  GError *e = NULL;
  if (!g_file_get_contents(path, &buf, &len, &e)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s", e->message);
    g_error_free(e);
    return FALSE;
  }
  g_string_append_len(out, buf, len);
  /* files are joined as lines: a file without a final newline gets one */
  if (len > 0 && buf[len - 1] != '\n')
    g_string_append_c(out, '\n');
  guint64 l = len;
  g_checksum_update(cs, (const guchar *)&l, sizeof l);
  g_checksum_update(cs, (const guchar *)buf, len);
  return TRUE;
}

/* The split point: the first line start at or after the wanted fraction,
 * so validation starts on a whole line. */
static gsize
split_at(const GString *s, double val_fraction)
{
  if (val_fraction <= 0)
    return s->len;
  gsize at = (gsize)((1.0 - val_fraction) * s->len);
  while (at < s->len && at > 0 && s->str[at - 1] != '\n')
    at++;
  return at;
}

typedef struct {
  GArray *ids, *bytes;
} Encoded;

static void
on_token(int32_t id, gint64 line, gsize start, gsize end, gpointer p)
{
  Encoded *e = p;
  guint32 nb = (guint32)(end - start);
  g_array_append_val(e->ids, id);
  g_array_append_val(e->bytes, nb);
}

/* The BPE vocabulary: learned on the training text, or with --init the
 * init model's (whose token ids the weights were trained on). */
static TxlTokenizer *
bpe_vocabulary(const TrainDataOptions *o, const GString *train,
               TrainData *d, GError **error)
{
  if (o->init) {
    d->tok_owner = txl_model_load(o->init, error);
    if (!d->tok_owner)
      return NULL;
    const TxlTokenizer *t = txl_model_tokenizer(d->tok_owner);
    if (txl_tokenizer_type(t) != TXL_TOKENIZER_BPE) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "--init %s has no BPE vocabulary to fine-tune with",
                  o->init);
      return NULL;
    }
    return (TxlTokenizer *)t;
  }
  TxlBpeTrainOptions bo = TXL_BPE_TRAIN_OPTIONS_DEFAULT;
  bo.vocab_size = o->vocab;
  bo.normalize = o->normalize ? TXL_NORM_ALL : 0;
  const char *texts[1] = { train->str };
  gsize lens[1] = { train->len };
  TxlBpe *bpe = txl_bpe_train(texts, lens, 1, &bo, error);
  return bpe ? txl_tokenizer_new_bpe(bpe) : NULL;
}

/* Encodes both parts with the BPE vocabulary. */
static gboolean
bpe_tokens(const TrainDataOptions *o, const GString *train,
           const GString *val, TrainData *d, GError **error)
{
  TxlTokenizer *tok = bpe_vocabulary(o, train, d, error);
  if (!tok)
    return FALSE;
  Encoded tr = { g_array_new(FALSE, FALSE, 4), g_array_new(FALSE, FALSE, 4) };
  Encoded va = { g_array_new(FALSE, FALSE, 4), g_array_new(FALSE, FALSE, 4) };
  txl_cmd_encode(tok, train->str, train->len, on_token, &tr);
  txl_cmd_encode(tok, val->str, val->len, on_token, &va);
  d->n_token = txl_bpe_n_tokens(txl_tokenizer_get_bpe(tok));
  d->n_train = tr.ids->len;
  d->n_val = va.ids->len;
  d->ids = g_new(int32_t, d->n_train + d->n_val);
  d->token_bytes = g_new(guint32, d->n_train + d->n_val);
  memcpy(d->ids, tr.ids->data, 4 * d->n_train);
  memcpy(d->ids + d->n_train, va.ids->data, 4 * d->n_val);
  memcpy(d->token_bytes, tr.bytes->data, 4 * d->n_train);
  memcpy(d->token_bytes + d->n_train, va.bytes->data, 4 * d->n_val);
  d->tokenizer = tok;
  for (int i = 0; i < 2; i++) {
    Encoded *e = i ? &va : &tr;
    g_array_free(e->ids, TRUE);
    g_array_free(e->bytes, TRUE);
  }
  return TRUE;
}

TrainData *
train_data_load(const TrainDataOptions *o, GError **error)
{
  const char *tok = o->tokenizer ? o->tokenizer : "byte";
  gboolean bpe = strcmp(tok, "bpe") == 0;
  if (!bpe && strcmp(tok, "byte") != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "--tokenizer takes byte or bpe, not '%s'", tok);
    return NULL;
  }
  if (o->normalize && !bpe) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "--normalize needs --tokenizer bpe (placeholders are "
                        "tokens of the learned vocabulary)");
    return NULL;
  }
  GChecksum *cs = g_checksum_new(G_CHECKSUM_SHA256);
  GString *train = g_string_new(NULL), *val = g_string_new(NULL);
  TrainData *d = NULL;
  char *settings = NULL;
  for (int i = 0; i < o->n_files; i++)
    if (!read_file(o->files[i], train, cs, error))
      goto out;
  if (o->val_path) {
    g_checksum_update(cs, (const guchar *)"val", 3);
    if (!read_file(o->val_path, val, cs, error))
      goto out;
  } else {
    gsize at = split_at(train, o->val_fraction);
    g_string_append_len(val, train->str + at, train->len - at);
    g_string_truncate(train, at);
  }
  settings = g_strdup_printf(
    "tokenizer=%s vocab=%d normalize=%d fraction=%.9g%s%s", tok,
    bpe ? o->vocab : 256, o->normalize, o->val_fraction,
    bpe && o->init ? " init=" : "", bpe && o->init ? o->init : "");
  g_checksum_update(cs, (const guchar *)settings, strlen(settings));
  if (train->len == 0) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "the training data are empty");
    goto out;
  }
  if (val->len < 2) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "the validation data are too small (%zu bytes): give --val "
                "FILE or more data", val->len);
    goto out;
  }
  d = g_new0(TrainData, 1);
  if (bpe) {
    if (!bpe_tokens(o, train, val, d, error)) {
      train_data_free(d);
      d = NULL;
      goto out;
    }
  } else {
    d->n_token = 256;
    d->n_train = train->len;
    d->n_val = val->len;
    d->ids = g_new(int32_t, d->n_train + d->n_val);
    for (gsize i = 0; i < train->len; i++)
      d->ids[i] = (guchar)train->str[i];
    for (gsize i = 0; i < val->len; i++)
      d->ids[d->n_train + i] = (guchar)val->str[i];
  }
  d->data_id = g_strdup(g_checksum_get_string(cs));
out:
  g_free(settings);
  g_checksum_free(cs);
  g_string_free(train, TRUE);
  g_string_free(val, TRUE);
  return d;
}

void
train_data_free(TrainData *d)
{
  if (!d)
    return;
  if (d->tok_owner)
    txl_model_unref(d->tok_owner);
  else if (d->tokenizer)
    txl_tokenizer_free(d->tokenizer);
  txl_free_each(g_free, d->ids, d->token_bytes, d->data_id, d->options_id, d);
}

void
train_data_set_options_id(TrainData *d, const char *description)
{
  g_free(d->options_id);
  d->options_id = g_compute_checksum_for_string(G_CHECKSUM_SHA256,
                                                description, -1);
}

static void
add_tokenizer(GgufWriter *w, gpointer data)
{
  const TrainData *d = data;
  if (d->tokenizer)
    txl_bpe_write_gguf(txl_tokenizer_get_bpe(d->tokenizer), w);
  else
    gguf_writer_add_string(w, "tokenizer.type", "byte");
}

gboolean
train_data_save_model(TrainCore *core, const TrainData *d, const char *path,
                      GError **error)
{
  return train_core_save(core, path, add_tokenizer, (gpointer)d, error);
}
