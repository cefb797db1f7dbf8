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

#endif
