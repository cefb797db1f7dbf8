/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Destructors in one call: an object that owns several buffers, or several
 * objects of one kind, frees them as txl_free_each(g_free, s->idx, s->p, s)
 * rather than with a line each.  Internal to txl (lib/formats/txl_formats.h). */
#ifndef TXL_FREEEACH_H
#define TXL_FREEEACH_H

#include <glib.h>

/* Calls @free_func on each of the @n pointers in @p that is not NULL, in
 * order. */
static inline void
txl_free_n(GDestroyNotify free_func, gpointer const *p, gsize n)
{
  for (gsize i = 0; i < n; i++)
    if (p[i])
      free_func(p[i]);
}

/* txl_free_each(free_func, a, b, ...) calls free_func on a, b, ... in that
 * order, skipping NULL ones as g_clear_pointer() would.  Every argument is
 * read before the first call, so the object that holds the others may come
 * last.  free_func is any one-pointer destructor (g_free, g_array_unref...). */
#define txl_free_each(free_func, ...)                                   \
  txl_free_n((GDestroyNotify)(free_func), (gpointer const[]){__VA_ARGS__}, \
             sizeof((gpointer const[]){__VA_ARGS__}) / sizeof(gpointer))

#endif
