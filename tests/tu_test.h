/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tests registered where they are written.  TU_TEST("/suite/name", fn)
 * stands in place of a test function's "static void fn(void)" line and
 * adds fn under that path before main runs, so no list in main has to be
 * kept in step with the file: a test written is a test run.  They run in
 * the order they stand in the file.
 *
 *   TU_TEST("/gemm/direct-b", test_direct_b)
 *   { ... }
 *   TU_MAIN()
 *
 * A main with set-up of its own calls g_test_init, tu_add_tests and
 * g_test_run itself.  Only glib, so that any test program can use it. */
#ifndef TXL_TU_TEST_H
#define TXL_TU_TEST_H

#include <glib.h>
#include <stdlib.h>

typedef struct {
  const char *path;
  GTestFunc func;
  int line;
} TuTest;

/* one test program's tests; more than this is a mistake worth a crash */
static TuTest tu_tests[64];
static guint tu_n_tests;

G_GNUC_UNUSED static void
tu_register(const char *path, GTestFunc func, int line)
{
  if (tu_n_tests == G_N_ELEMENTS(tu_tests))
    g_error("tu_test.h: more than %u tests in one program",
            (guint)G_N_ELEMENTS(tu_tests));
  tu_tests[tu_n_tests++] = (TuTest){ path, func, line };
}

/* Constructors may run in any order: the line puts them back in the
 * file's. */
#define TU_TEST(path, fn)                                                      \
  static void fn(void);                                                        \
  __attribute__((constructor)) static void fn##_tu_register(void)              \
  {                                                                            \
    tu_register(path, fn, __LINE__);                                           \
  }                                                                            \
  static void fn(void)

static int
tu_by_line(const void *a, const void *b)
{
  return ((const TuTest *)a)->line - ((const TuTest *)b)->line;
}

/* Adds every TU_TEST of the program, in file order (after g_test_init). */
G_GNUC_UNUSED static void
tu_add_tests(void)
{
  qsort(tu_tests, tu_n_tests, sizeof *tu_tests, tu_by_line);
  for (guint i = 0; i < tu_n_tests; i++)
    g_test_add_func(tu_tests[i].path, tu_tests[i].func);
}

/* The whole main of a test program with no set-up of its own. */
#define TU_MAIN()                                                              \
  int main(int argc, char **argv)                                              \
  {                                                                            \
    g_test_init(&argc, &argv, NULL);                                           \
    tu_add_tests();                                                            \
    return g_test_run();                                                       \
  }

#endif
