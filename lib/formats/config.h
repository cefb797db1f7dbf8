/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* TxlConfig <-> GGUF metadata (see docs/model-format.md). */
#ifndef TXL_CONFIG_H
#define TXL_CONFIG_H

#include "gguf.h"
#include "txl.h"

#define TXL_FORMAT_VERSION 1
#define TXL_ARCH "transfo-xl"

/* Fills cfg with what Hugging Face's TransfoXLConfig defaults to. */
void txl_config_init_default(TxlConfig *cfg);
gboolean txl_config_read_gguf(const GgufFile *f, TxlConfig *cfg, GError **error);
void txl_config_write_gguf(const TxlConfig *cfg, GgufWriter *w);

/* Cluster bookkeeping: ends[] has n_cutoffs + 2 entries [0, cutoffs..., n_token]. */
void txl_config_cluster_ends(const TxlConfig *cfg, int *ends);
int txl_config_cluster_dim(const TxlConfig *cfg, int k);

#endif
