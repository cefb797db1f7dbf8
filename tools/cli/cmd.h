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

/* A command's option context: params and summary (NULL: none) are what
 * --help shows, entries (NULL: none) its options. */
GOptionContext *txl_cmd_options(const char *params, const char *summary,
                                const GOptionEntry *entries);

/* Parses a command's options.  model: where -m lands (a g_free'd string),
 * NULL where the command has no -m that it must have; without -m it gets
 * the bundled model (txl_default_model_path).  FALSE once "who: why" is
 * on standard error (the command then exits with 2). */
gboolean txl_cmd_parse(const char *who, GOptionContext *ctx, char **model,
                       int *argc, char ***argv);

/* A finite number >= 0 that is the whole of s (options read as strings
 * where NaN cannot mark "not given"); FALSE for anything else. */
gboolean txl_cmd_number(const char *s, double *v);

/* Encodes the whole of text[0..len) with tok at once: each token to func. */
void txl_cmd_encode(const TxlTokenizer *tok, const char *text, gsize len,
                    TxlTokenFunc func, gpointer data);

#endif
