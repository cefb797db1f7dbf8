/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Byte-level BPE learned from data (docs/tokenizers.md): pre-tokenizer,
 * trainer, chunk encoder, and the tokenizer.* keys of the model file.
 * Internal API for libtxl and the txl tools; not installed. */
#ifndef TXL_BPE_H
#define TXL_BPE_H

#include "gguf.h"
#include "normalize.h"
#include "txl.h"
#include "bytes.h"

/* Pre-tokenizer version stored as tokenizer.pre; bumped whenever chunking
 * changes, since a model's merges are only valid for the chunks they were
 * learned on. */
#define TXL_BPE_PRE "txl1"
/* Longest pre-token (bytes): bounds encoder memory and work per chunk. */
#define TXL_BPE_MAX_CHUNK 256
/* Longest token a model file may hold (merged tokens never exceed
 * TXL_BPE_MAX_CHUNK; special tokens are names). */
#define TXL_BPE_MAX_TOKEN 256
/* Normalisation buffers a line; longer lines are cut every this many
 * bytes (counted from the line start, so the cut does not depend on how
 * the text arrived) and a field or chunk never spans a cut. */
#define TXL_NORM_SEGMENT 65536

typedef struct _TxlBpe TxlBpe;

/* FNV-1a over n bytes: the hash of every byte-string table in lib/text. */
static inline guint32
txl_fnv1a(const guchar *s, gsize n)
{
  guint32 h = 2166136261u;
  for (gsize i = 0; i < n; i++)
    h = (h ^ s[i]) * 16777619u;
  return h;
}

/* A byte string (not NUL-terminated) as a GHashTable key, hashed and
 * compared by its bytes: the trainer's words, the word tokenizer's
 * symbols. */
typedef struct {
  const guchar *s;
  gsize len;
} TxlBytesKey;

guint txl_bytes_key_hash(gconstpointer key);
gboolean txl_bytes_key_equal(gconstpointer a, gconstpointer b);

/* ---- vocabulary ------------------------------------------------------ */

void txl_bpe_free(TxlBpe *bpe);
int txl_bpe_n_tokens(const TxlBpe *bpe);
int txl_bpe_n_merges(const TxlBpe *bpe);
/* Mask of TxlNormRule bits applied before tokenisation (0: none). */
guint txl_bpe_normalize(const TxlBpe *bpe);
/* Bytes of a token (a special token's bytes are its name, e.g. "<NUM>"). */
const char *txl_bpe_token(const TxlBpe *bpe, int id, gsize *len);
gboolean txl_bpe_is_special(const TxlBpe *bpe, int id);
/* Merge of rank k: joins left and right, returns the id made (or -1). */
int txl_bpe_merge(const TxlBpe *bpe, int k, int *left, int *right);
/* Id of the token for byte b. */
int txl_bpe_byte_id(const TxlBpe *bpe, guchar b);
/* Placeholder id of a rule, spaced: the variant that also covers one ' '
 * before the field.  -1 when the rule is not enabled. */
int txl_bpe_placeholder_id(const TxlBpe *bpe, TxlNormRule rule,
                           gboolean spaced);

/* Reads and validates the tokenizer.* keys of a "bpe" tokenizer (the
 * caller has read tokenizer.type).  n_token: the model's vocabulary size. */
TxlBpe *txl_bpe_load_gguf(const GgufFile *f, int n_token, GError **error);
/* Writes tokenizer.type "bpe" and every key txl_bpe_load_gguf reads. */
void txl_bpe_write_gguf(const TxlBpe *bpe, GgufWriter *w);
/* Everything that determines the encoding, for txl_model_vocab_id(). */
void txl_bpe_checksum(const TxlBpe *bpe, GChecksum *cs);

/* ---- training -------------------------------------------------------- */

typedef struct {
  /* total ids: 256 bytes + placeholders + merges; training stops earlier
   * when no pair occurs min_frequency times */
  int vocab_size;
  guint normalize;   /* TxlNormRule bits */
  int min_frequency; /* <= 1 means 2 */
} TxlBpeTrainOptions;

#define TXL_BPE_TRAIN_OPTIONS_DEFAULT { 4096, 0, 2 }

/* Streaming trainer: only the distinct pre-tokens and their counts are
 * kept, so the text may be far larger than memory. */
typedef struct _TxlBpeTrainer TxlBpeTrainer;

TxlBpeTrainer *txl_bpe_trainer_new(const TxlBpeTrainOptions *opts,
                                   GError **error);
/* Text of one document, in any pieces. */
void txl_bpe_trainer_push(TxlBpeTrainer *t, const char *data, gsize len);
/* Ends the current document (a pending chunk never joins the next one). */
void txl_bpe_trainer_end_text(TxlBpeTrainer *t);
/* Learns the merges; consumes the trainer. */
TxlBpe *txl_bpe_trainer_finish(TxlBpeTrainer *t, GError **error);
void txl_bpe_trainer_free(TxlBpeTrainer *t);

/* One-shot: n documents. */
TxlBpe *txl_bpe_train(const char *const *texts, const gsize *lens, gsize n,
                      const TxlBpeTrainOptions *opts, GError **error);

/* ---- pre-tokenizer ---------------------------------------------------- */

/* A pre-token: bytes [start, start + len) of the input.  special >= 0: a
 * normalised field to emit as that one token; else bytes to BPE-encode
 * (never more than TXL_BPE_MAX_CHUNK, never containing '\n' unless it is
 * exactly "\n"). */
typedef void (*TxlPieceFunc)(const guchar *bytes, gsize len, gsize start,
                             int special, gpointer user_data);

typedef struct _TxlPretok TxlPretok;

TxlPretok *txl_pretok_new(const TxlBpe *bpe, TxlPieceFunc func,
                          gpointer user_data);
void txl_pretok_free(TxlPretok *p);
void txl_pretok_push(TxlPretok *p, const guchar *data, gsize len);
/* Input bytes that make no piece, at a line's start (record.h). */
void txl_pretok_skip(TxlPretok *p, gsize n);
/* End of input: flushes what is held back. */
void txl_pretok_finish(TxlPretok *p);
/* The bytes held back and the offsets (txl_pretok_state_size() bytes),
 * appended to out; restore reads them back from r, checking every field,
 * and changes nothing when they are malformed. */
gsize txl_pretok_state_size(const TxlPretok *p);
void txl_pretok_save(const TxlPretok *p, GByteArray *out);
gboolean txl_pretok_restore(TxlPretok *p, TxlReader *r);

/* ---- chunk encoder ----------------------------------------------------- */

typedef struct {
  int32_t *id;   /* the tokens */
  guint32 *end;  /* end of each token, relative to the chunk */
  gsize n;
  /* scratch */
  gsize cap;
  int32_t *sym;
  guint32 *next, *prev;
  guint64 *heap;
  struct _TxlBpeCache *cache; /* recent short chunks (logs repeat a lot) */
} TxlBpeOut;

void txl_bpe_out_clear(TxlBpeOut *out);
/* Encodes the bytes of one pre-token (any length: O(n log n)) into out. */
void txl_bpe_encode_chunk(const TxlBpe *bpe, const guchar *s, gsize n,
                          TxlBpeOut *out);

/* A tokenizer around a trained vocabulary (takes ownership of bpe), for
 * the trainer's own use before a model file exists. */
TxlTokenizer *txl_tokenizer_new_bpe(TxlBpe *bpe);
void txl_tokenizer_free(TxlTokenizer *tok);
/* The vocabulary of a "bpe" tokenizer, else NULL. */
const TxlBpe *txl_tokenizer_get_bpe(const TxlTokenizer *tok);

#endif
