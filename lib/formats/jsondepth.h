/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A bound on JSON nesting, checked before a document reaches json-glib:
 * its parser recurses once per level, so a small file of brackets
 * (100,000 '[' take 100 KB) overflows the stack. */
#ifndef TXL_JSONDEPTH_H
#define TXL_JSONDEPTH_H

#include <glib.h>

/* Deepest nesting of objects and arrays that a JSON input read by libtxl
 * may have (config.json, tokenizer_config.json, safetensors headers). */
#define TXL_JSON_MAX_DEPTH 64

/* Most values a batch of records received over the network (txld's JSON
 * ingest, OTLP/JSON) may hold: json-glib's tree costs a few hundred bytes
 * a value (4 MB of "{}," took 530 MB and seconds to parse), so this keeps
 * one batch near 200 MB at most.  A 4 MiB batch of real records, at 20
 * bytes a value or more with keys and punctuation, holds fewer. */
#define TXL_JSON_MAX_BATCH_VALUES 500000

/* Scans text (len bytes) for '[' and '{' outside string literals and
 * refuses it when they nest deeper than max_depth; label names the input
 * in the message.  Does not validate the JSON otherwise (the parser does). */
gboolean txl_json_check_depth(const char *text, gsize len, int max_depth,
                              const char *label, GError **error);
/* The same, and a bound on the values (elements, members, containers)
 * the document holds, which is what json-glib's tree costs: a few hundred
 * bytes each, so 4 MB of "{}," would take over 500 MB.  More than
 * max_values: TXL_ERROR_INVALID (deeper than max_depth: TXL_ERROR_FORMAT). */
gboolean txl_json_check_bounds(const char *text, gsize len, int max_depth,
                               guint64 max_values, const char *label,
                               GError **error);

#endif
