/* A persistent thread pool for data-parallel loops. Threads are created once
 * (no thread creation per op); `nc_pool_for` splits tasks 0..n-1 among the
 * workers and the calling thread, and returns when all are done. */
#ifndef NC_BASE_POOL_H
#define NC_BASE_POOL_H

#include "base/error.h"

typedef struct nc_pool nc_pool;

/* task: index in [0, n_tasks); thread: index in [0, nc_pool_threads()). */
typedef void (*nc_pool_fn)(void *ctx, int task, int thread);

/* n_threads <= 0 picks the number of online CPUs. */
nc_status nc_pool_new(int n_threads, nc_pool **out, nc_error *err);
void nc_pool_free(nc_pool *pool);
int nc_pool_threads(const nc_pool *pool);

/* Runs fn(ctx, t, thread) for every t; a NULL pool runs serially. Not
 * re-entrant: fn must not call nc_pool_for on the same pool. */
void nc_pool_for(nc_pool *pool, int n_tasks, nc_pool_fn fn, void *ctx);

/* The number of CPUs online (>= 1). */
int nc_cpu_count(void);

#endif
