/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Log normalisation: variable fields (numbers, ids, addresses, times,
 * paths of ids) are recognised in a line so that the tokenizer can replace
 * each by one placeholder token.  The rules are versioned and recorded in
 * the model file (docs/tokenizers.md), so scoring applies exactly the rules
 * that training applied. */
#ifndef TXL_NORMALIZE_H
#define TXL_NORMALIZE_H

#include <glib.h>

/* In priority order: at one position the first rule that matches wins. */
typedef enum {
  TXL_NORM_UUID = 0, /* 8-4-4-4-12 hex digits */
  TXL_NORM_TS,       /* ISO / syslog / common log dates and times */
  TXL_NORM_IP,       /* IPv4 with optional :port, IPv6 */
  TXL_NORM_PATH,     /* /a/b/... with a segment that is mostly digits */
  TXL_NORM_HEX,      /* 0x..., or >= 8 hex digits mixing digits and letters */
  TXL_NORM_NUM,      /* decimal numbers of >= 2 digits, signed, dotted */
  TXL_NORM_N_RULES
} TxlNormRule;

/* Bumped whenever any rule changes what it matches. */
#define TXL_NORM_VERSION 1
#define TXL_NORM_ALL ((1u << TXL_NORM_N_RULES) - 1)

/* "uuid", "ts", "ip", "path", "hex", "num" */
const char *txl_norm_rule_name(TxlNormRule rule);
/* "<UUID>", "<TS>", "<IP>", "<PATH>", "<HEX>", "<NUM>" */
const char *txl_norm_placeholder(TxlNormRule rule);
/* Rule by name (len bytes, not NUL-terminated); -1 when unknown. */
int txl_norm_rule_from_name(const char *name, gsize len);
/* Parses "all", "none" or a comma-separated list of rule names into a
 * mask of (1 << rule) bits. */
gboolean txl_norm_parse(const char *spec, guint *mask, GError **error);

typedef void (*TxlNormFieldFunc)(TxlNormRule rule, gsize start, gsize end,
                                 gpointer user_data);

/* Reports the fields of one line (no '\n' inside), leftmost first and
 * non-overlapping, as [start, end) byte ranges of s.  A field starts where
 * the byte before is not an ASCII letter or digit and ends where the next
 * one is not either.  Linear in len for every input. */
void txl_norm_scan(guint rules, const guchar *s, gsize len,
                   TxlNormFieldFunc func, gpointer user_data);

#endif
