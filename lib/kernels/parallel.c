/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "parallel.h"
#include "txl.h"

#include <cblas.h>
#include <stdlib.h>

#define SPIN_ROUNDS 2000

typedef struct Job {
  TxlTaskFunc fn;
  gpointer ctx;
  int n_tasks;
  int next;     /* next task to hand out */
  int finished; /* tasks done */
  struct Job *link;
} Job;

static struct {
  GMutex lock;
  GCond work;  /* a job was queued */
  GCond done;  /* a job finished */
  Job *head, *tail;
  int threads;
  gint queued; /* atomic mirror of head != NULL, for spinning workers */
} pool;

static gpointer worker(gpointer data);

/* Set while this thread runs a task (of any job, its own included). */
static _Thread_local gboolean in_task;

static void
run_task(TxlTaskFunc fn, int task, int n_tasks, gpointer ctx)
{
  gboolean outer = in_task;
  in_task = TRUE;
  fn(task, n_tasks, ctx);
  in_task = outer;
}

gboolean
txl_parallel_in_task(void)
{
  return in_task;
}

static gpointer
pool_init(gpointer unused)
{
  const char *env = g_getenv("TXL_NUM_THREADS");
  int n = env ? atoi(env) : (int)g_get_num_processors();
  pool.threads = CLAMP(n, 1, 256);
  /* one segment's products are ours to split; OpenBLAS threads on top of
   * ours would only contend for the same cores */
  openblas_set_num_threads(1);
  for (int i = 1; i < pool.threads; i++)
    g_thread_unref(g_thread_new("txl-worker", worker, NULL));
  return NULL;
}

int
txl_parallel_threads(void)
{
  static GOnce once = G_ONCE_INIT;
  g_once(&once, pool_init, NULL);
  return pool.threads;
}

int
txl_num_threads(void)
{
  return txl_parallel_threads();
}

/* Takes the next task of the oldest job; called with the lock held. */
static Job *
take(int *task)
{
  while (pool.head) {
    Job *j = pool.head;
    if (j->next < j->n_tasks) {
      *task = j->next++;
      if (j->next == j->n_tasks) {
        pool.head = j->link;
        if (!pool.head)
          pool.tail = NULL;
        g_atomic_int_set(&pool.queued, pool.head != NULL);
      }
      return j;
    }
    pool.head = j->link;
  }
  pool.tail = NULL;
  g_atomic_int_set(&pool.queued, 0);
  return NULL;
}

static void
finish(Job *j)
{
  g_mutex_lock(&pool.lock);
  if (++j->finished == j->n_tasks)
    g_cond_broadcast(&pool.done);
  g_mutex_unlock(&pool.lock);
}

static gpointer
worker(gpointer data)
{
  for (;;) {
    /* jobs come in bursts (several per layer): spin a little before
     * sleeping, so the next one starts without a wake-up */
    for (int i = 0; i < SPIN_ROUNDS && !g_atomic_int_get(&pool.queued); i++)
      g_thread_yield();
    g_mutex_lock(&pool.lock);
    int task;
    Job *j;
    while (!(j = take(&task)))
      g_cond_wait(&pool.work, &pool.lock);
    g_mutex_unlock(&pool.lock);
    run_task(j->fn, task, j->n_tasks, j->ctx);
    finish(j);
  }
  return NULL;
}

void
txl_parallel_run(int n_tasks, TxlTaskFunc fn, gpointer ctx)
{
  if (n_tasks <= 1 || txl_parallel_threads() == 1) {
    for (int t = 0; t < n_tasks; t++)
      run_task(fn, t, n_tasks, ctx);
    return;
  }
  Job j = { fn, ctx, n_tasks, 0, 0, NULL };
  g_mutex_lock(&pool.lock);
  if (pool.tail)
    pool.tail->link = &j;
  else
    pool.head = &j;
  pool.tail = &j;
  g_atomic_int_set(&pool.queued, 1);
  g_cond_broadcast(&pool.work);
  /* the caller works on its own job (and never on another's, so it never
   * waits on a stranger's task) */
  while (j.next < j.n_tasks) {
    int task = j.next++;
    if (j.next == j.n_tasks) {
      /* unlink: it is the head or further down */
      Job **pp = &pool.head, *prev = NULL;
      while (*pp != &j) {
        prev = *pp;
        pp = &(*pp)->link;
      }
      *pp = j.link;
      if (pool.tail == &j)
        pool.tail = prev;
      g_atomic_int_set(&pool.queued, pool.head != NULL);
    }
    g_mutex_unlock(&pool.lock);
    run_task(fn, task, n_tasks, ctx);
    g_mutex_lock(&pool.lock);
    j.finished++;
  }
  while (j.finished < j.n_tasks)
    g_cond_wait(&pool.done, &pool.lock);
  g_mutex_unlock(&pool.lock);
}

typedef struct {
  gsize n, step;
  TxlRangeFunc fn;
  gpointer ctx;
} Range;

static void
range_task(int t, int n_tasks, gpointer p)
{
  const Range *r = p;
  gsize lo = (gsize)t * r->step;
  r->fn(lo, MIN(r->n, lo + r->step), r->ctx);
}

void
txl_parallel_range(gsize n, gsize grain, gsize align, TxlRangeFunc fn,
                   gpointer ctx)
{
  int threads = txl_parallel_threads();
  if (n < 2 * MAX(grain, 1) || threads <= 1 || in_task) {
    if (n)
      fn(0, n, ctx);
    return;
  }
  align = MAX(align, 1);
  gsize step = (n + threads - 1) / threads;
  step = MAX(step, grain);
  step = (step + align - 1) / align * align;
  Range r = { n, step, fn, ctx };
  txl_parallel_run((int)((n + step - 1) / step), range_task, &r);
}
