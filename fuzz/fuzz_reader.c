/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the record reader (lib/ingest/reader.h), what
 * txltokenizer's format=auto does to its input.  The first byte picks the
 * format, whether a continuation rule is set, the piece size and the
 * record bound; the rest is the input, fed in pieces with the state saved
 * and restored into a new reader after each.  The output must be record
 * lines whose headers read back, the same as one reader fed whole. */
#include "reader.h"
#include "record.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static TxlRecordReader *
make(uint8_t cfg)
{
  TxlRecordReaderOptions o = TXL_RECORD_READER_OPTIONS_DEFAULT;
  o.format = (TxlFormat)(1 + cfg % 3);
  o.continuation = cfg & 4 ? "^[ \t]" : NULL;
  o.session_field = cfg & 8 ? "a.b" : NULL;
  o.max_record = cfg & 16 ? 64 : 4096;
  return txl_record_reader_new(&o, NULL);
}

static void
check_lines(const GString *out)
{
  const char *p = out->str, *end = out->str + out->len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (gsize)(end - p));
    gsize n = nl ? (gsize)(nl - p) : (gsize)(end - p);
    gsize h = txl_record_header_len(p, n);
    gsize pos = 0, kl, vl;
    const char *k, *v;
    while (txl_record_next_field(p, h, &pos, &k, &kl, &v, &vl))
      if (k < p || v + vl > p + h)
        abort();
    p += n + (nl != NULL);
  }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  uint8_t cfg = data[0];
  const char *in = (const char *)data + 1;
  gsize len = size - 1, piece = 1 + (cfg >> 5) * 7;
  GString *whole = g_string_new(NULL), *cut = g_string_new(NULL);
  TxlRecordReader *r = make(cfg);
  txl_record_reader_push(r, in, len, whole);
  txl_record_reader_finish(r, whole);
  txl_record_reader_free(r);
  r = make(cfg);
  for (gsize at = 0; at < len; at += piece) {
    txl_record_reader_push(r, in + at, MIN(piece, len - at), cut);
    GBytes *st = txl_record_reader_save(r);
    txl_record_reader_free(r);
    r = make(cfg);
    if (!txl_record_reader_restore(r, st, NULL))
      abort();
    g_bytes_unref(st);
  }
  txl_record_reader_finish(r, cut);
  txl_record_reader_free(r);
  if (!g_string_equal(whole, cut))
    abort();
  check_lines(whole);
  g_string_free(whole, TRUE);
  g_string_free(cut, TRUE);
  return 0;
}
