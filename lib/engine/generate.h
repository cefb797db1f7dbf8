/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Generation: a stream and a sampler together.  Context (a prompt, or a
 * live stream's text) is fed in; each sampled token is fed back into the
 * memory, so generation continues coherently from all that came before. */
#ifndef TXL_GENERATE_H
#define TXL_GENERATE_H

#include "sampler.h"
#include "txl.h"

typedef struct _TxlGenerator TxlGenerator;

TxlGenerator *txl_generator_new(TxlModel *m, const TxlStreamOptions *so,
                                const TxlSamplerOptions *sampler,
                                GError **error);
void txl_generator_free(TxlGenerator *g);
/* Context tokens, any number, in segments of the stream's length. */
gboolean txl_generator_feed(TxlGenerator *g, const int32_t *ids, gsize n,
                            GError **error);
/* Draws the next token and feeds it back.  Needs some context first. */
gboolean txl_generator_next(TxlGenerator *g, int32_t *id, GError **error);

typedef struct {
  int max_tokens;      /* at most this many tokens */
  const char *stop;    /* stop once the text ends with this (NULL: never) */
  gboolean stop_at_eos; /* stop at the vocabulary's end-of-sequence id,
                         * which is not written */
} TxlGenerateLimits;

typedef void (*TxlTextFunc)(const guint8 *text, gsize len, gpointer data);

/* One continuation: samples tokens until a limit, appending their text to
 * out and, when func is given, handing each token's text to it as it
 * comes.  Shared by `txl generate` and the txlsampler element, so both
 * stop alike. */
gboolean txl_generator_continue(TxlGenerator *g, const TxlTokenizer *tok,
                                const TxlGenerateLimits *limits,
                                GByteArray *out, TxlTextFunc func,
                                gpointer data, GError **error);

/* Snapshots of a generation (docs/snapshots.md): the stream's memory and
 * the sampler's generator state (section "sampler") beside the caller's
 * sections; a loaded generator draws the same tokens the saved one would
 * have.  The sampler options are the caller's (a seed no longer matters:
 * the saved generator state replaces it). */
gboolean txl_generator_save(TxlGenerator *g, const char *path,
                            const TxlSnapshotOptions *opts,
                            GHashTable *sections, gsize *file_bytes,
                            GError **error);
TxlGenerator *txl_generator_load(TxlModel *m, const char *path,
                                 const TxlSamplerOptions *sampler,
                                 GHashTable **sections, GError **error);

#endif
