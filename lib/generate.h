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

#endif
