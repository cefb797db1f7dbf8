/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* For the fuzz harnesses: an invariant that must hold on any input.  A
 * trap, not an assert, so that it fires whatever NDEBUG says and libFuzzer
 * reports it as a crash with the input that caused it. */
#ifndef TXL_FUZZ_CHECK_H
#define TXL_FUZZ_CHECK_H

#include "txl.h"

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry points, declared once (-Wmissing-prototypes). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      __builtin_trap();                                                        \
  } while (0)

/* After a call that refused its input (a GError *err): the refusal must
 * come with a reason, then cleared. */
#define CHECK_REFUSED(err)                                                     \
  do {                                                                         \
    CHECK((err) != NULL);                                                      \
    g_clear_error(&(err));                                                     \
  } while (0)

/* A refusal by the library: a TXL_ERROR with a message, of code `code`
 * or `code2` (-1: any code).  err is freed. */
static inline void
check_txl_refusal(GError *err, int code, int code2)
{
  CHECK(err && err->domain == TXL_ERROR && err->message && *err->message);
  CHECK(code < 0 || err->code == code || err->code == code2);
  g_error_free(err);
}

/* What a parser or loader answered: a result and no error (TRUE), or NULL
 * and a refusal as check_txl_refusal checks it (FALSE; err is freed). */
static inline gboolean
check_parsed(const void *result, GError *err, int code, int code2)
{
  if (!result) {
    check_txl_refusal(err, code, code2);
    return FALSE;
  }
  CHECK(err == NULL);
  return TRUE;
}

/* What parse(data, size, &err) answered, checked as check_parsed checks
 * it: the result, or NULL for a refusal (its error freed). */
#define PARSED(parse, data, size, code, code2)                                 \
  ({                                                                           \
    GError *parse_err_ = NULL;                                                 \
    __typeof__(parse(data, size, NULL)) parsed_ =                              \
        parse(data, size, &parse_err_);                                        \
    check_parsed(parsed_, parse_err_, code, code2);                            \
    parsed_;                                                                   \
  })

#ifdef TXL_RECORD_H
#include <stdlib.h>

/* A record line as txl_record_append writes it: LF-terminated, a header
 * (or none) whose fields lie inside it, then a message free of control
 * bytes.  For the harnesses of parsers that write record lines. */
G_GNUC_UNUSED static void
check_record(const char *line, gsize len)
{
  if (len == 0 || line[len - 1] != '\n')
    abort();
  gsize h = txl_record_header_len(line, len);
  for (gsize i = h; i + 1 < len; i++)
    if ((unsigned char)line[i] < 0x20 && line[i] != '\t')
      if (line[i] != ' ')
        abort();
  gsize pos = 0, kl, vl;
  const char *k, *v;
  while (txl_record_next_field(line, h, &pos, &k, &kl, &v, &vl))
    if (kl == 0 || k + kl > line + h || v + vl > line + h)
      abort();
}
#endif

#endif
