/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* For the fuzz harnesses: an invariant that must hold on any input.  A
 * trap, not an assert, so that it fires whatever NDEBUG says and libFuzzer
 * reports it as a crash with the input that caused it. */
#ifndef TXL_FUZZ_CHECK_H
#define TXL_FUZZ_CHECK_H

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

#endif
