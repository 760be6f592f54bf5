/* Thread pool: workers sleep on a condition variable between loops and take
 * tasks from a shared atomic counter during one, so uneven tasks balance
 * themselves. The caller works too, so a 1-thread pool has no workers. */
#include "base/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct nc_pool {
    int n_threads;
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    unsigned long generation; /* bumped for each loop; guarded by mu */
    int quitting;             /* guarded by mu */
    int busy_workers;         /* guarded by mu */
    nc_pool_fn fn;
    void *ctx;
    int n_tasks;
    atomic_int next_task;
};

struct worker_arg {
    nc_pool *pool;
    int thread;
};

static void run_tasks(nc_pool *p, int thread) {
    for (;;) {
        int t = atomic_fetch_add_explicit(&p->next_task, 1, memory_order_relaxed);
        if (t >= p->n_tasks) break;
        p->fn(p->ctx, t, thread);
    }
}

static void *worker_main(void *arg) {
    struct worker_arg a = *(struct worker_arg *)arg;
    free(arg);
    nc_pool *p = a.pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quitting && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->quitting) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        run_tasks(p, a.thread);
        pthread_mutex_lock(&p->mu);
        if (--p->busy_workers == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int nc_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

nc_status nc_pool_new(int n_threads, nc_pool **out, nc_error *err) {
    *out = NULL;
    if (n_threads <= 0) n_threads = nc_cpu_count();
    nc_pool *p = calloc(1, sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "thread pool: out of memory");
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (!p->workers) {
            nc_pool_free(p);
            return nc_fail(err, NC_ERR_NOMEM, "thread pool: out of memory");
        }
    }
    for (int i = 1; i < n_threads; i++) {
        struct worker_arg *a = malloc(sizeof *a);
        if (a) {
            a->pool = p; /* filled before the thread starts: it reads them at once */
            a->thread = i;
        }
        if (!a || pthread_create(&p->workers[i - 1], NULL, worker_main, a) != 0) {
            free(a);
            p->n_threads = i; /* only join the ones that started */
            nc_pool_free(p);
            return nc_fail(err, NC_ERR_INTERNAL, "thread pool: cannot start thread %d", i);
        }
    }
    *out = p;
    return NC_OK;
}

void nc_pool_free(nc_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quitting = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n_threads; i++) pthread_join(p->workers[i - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->workers);
    free(p);
}

int nc_pool_threads(const nc_pool *p) { return p ? p->n_threads : 1; }

void nc_pool_for(nc_pool *p, int n_tasks, nc_pool_fn fn, void *ctx) {
    if (n_tasks <= 0) return;
    if (!p || p->n_threads == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(ctx, t, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    atomic_store(&p->next_task, 0);
    p->busy_workers = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_tasks(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy_workers > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
