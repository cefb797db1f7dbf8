/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef TXL_TOOLS_CMD_H
#define TXL_TOOLS_CMD_H

#include "txl.h"

int txl_cmd_score(int argc, char **argv);
int txl_cmd_convert(int argc, char **argv);
int txl_cmd_bench(int argc, char **argv);
int txl_cmd_info(int argc, char **argv);
int txl_cmd_train(int argc, char **argv);
int txl_cmd_generate(int argc, char **argv);
int txl_cmd_snapshot(int argc, char **argv);
int txl_cmd_eval(int argc, char **argv);
int txl_cmd_calibrate(int argc, char **argv);

/* Shared by the commands (txl.c): the model file at path, loaded; NULL
 * once "who: why" is on standard error (the command then exits with 1). */
TxlModel *txl_cmd_load_model(const char *who, const char *path);

/* Encodes the whole of text[0..len) with tok at once: each token to func. */
void txl_cmd_encode(const TxlTokenizer *tok, const char *text, gsize len,
                    TxlTokenFunc func, gpointer data);

#endif
