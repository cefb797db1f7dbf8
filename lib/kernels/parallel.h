/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A small process-wide thread pool.  libtxl does its own threading and runs
 * OpenBLAS single-threaded: the products of one segment are too small for
 * OpenBLAS's own threads to pay off (attention is 3 small products per
 * head), while splitting heads, and the columns of the large products,
 * over our threads does.  Tasks of one call run concurrently; calls from
 * several threads (several streams) share the pool safely. */
#ifndef TXL_PARALLEL_H
#define TXL_PARALLEL_H

#include <glib.h>

typedef void (*TxlTaskFunc)(int task, int n_tasks, gpointer ctx);

/* Threads in use (the caller's included); at least 1. */
int txl_parallel_threads(void);
/* Runs fn(0..n_tasks-1, ...) on the pool and the calling thread, returning
 * when all have finished. */
void txl_parallel_run(int n_tasks, TxlTaskFunc fn, gpointer ctx);

/* Runs fn over [0, n) cut into ranges of at least `grain` items, each
 * starting at a multiple of `align`, on the pool; on the calling thread
 * alone when n < 2 * grain or when called from a task.  For loops whose
 * items do not depend on each other (elementwise, or row by row), so the
 * result is the same however the range is cut: `align` keeps each range's
 * start where the whole loop's vector lanes would be. */
typedef void (*TxlRangeFunc)(gsize lo, gsize hi, gpointer ctx);
void txl_parallel_range(gsize n, gsize grain, gsize align, TxlRangeFunc fn,
                        gpointer ctx);

/* Whether the calling thread is running a task of txl_parallel_run()
 * (the same whatever the thread count: one thread runs its tasks inline
 * with this set too). */
gboolean txl_parallel_in_task(void);

#endif
