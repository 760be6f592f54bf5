/* Thread pool: workers take tasks from a shared atomic counter during a
 * loop, so uneven tasks balance themselves; the caller works too, so a
 * 1-thread pool has no workers. Between loops a worker first spins on the
 * loop counter for a short while, then sleeps on a condition variable:
 * decoding a token dispatches ~150 small loops a few hundred microseconds
 * apart, and a futex wake-up per loop left each thread idle ~13% of the
 * time (tg at 87% of the CPU). The caller waits for the last worker the
 * same way. Spinning is skipped when there are more threads than CPUs. */
#include "base/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/timer.h"

/* How long a thread spins before it sleeps: longer than the gaps between
 * the loops of one forward pass, short enough that an idle pool (a server
 * between requests) goes to sleep at once on a human time scale. */
#define SPIN_SECONDS 200e-6

struct nc_pool {
    int n_threads;
    int spin; /* 0: sleep at once (more threads than CPUs) */
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_ulong generation; /* bumped for each loop, under mu */
    atomic_int quitting;
    atomic_int busy_workers; /* workers still in the current loop */
    nc_pool_fn fn;
    void *ctx;
    int n_tasks;
    atomic_int next_task;
};

struct worker_arg {
    nc_pool *pool;
    int thread;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins until cond(p, arg) holds or SPIN_SECONDS pass; returns whether it
 * holds. The clock is read every 64 polls only. */
static int spin_until(const nc_pool *p, int (*cond)(const nc_pool *, unsigned long),
                      unsigned long arg) {
    if (!p->spin) return cond(p, arg);
    double deadline = nc_now_s() + SPIN_SECONDS;
    for (unsigned i = 1;; i++) {
        if (cond(p, arg)) return 1;
        cpu_relax();
        if ((i & 63) == 0 && nc_now_s() > deadline) return cond(p, arg);
    }
}

static int new_loop(const nc_pool *p, unsigned long seen) {
    return atomic_load(&p->generation) != seen || atomic_load(&p->quitting);
}

static int workers_done(const nc_pool *p, unsigned long unused) {
    (void)unused;
    return atomic_load(&p->busy_workers) == 0;
}

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
    for (;;) {
        if (!spin_until(p, new_loop, seen)) {
            pthread_mutex_lock(&p->mu);
            while (!new_loop(p, seen)) pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quitting)) break;
        seen = atomic_load(&p->generation);
        run_tasks(p, a.thread);
        /* under mu, so a caller between its check and its wait cannot miss it */
        pthread_mutex_lock(&p->mu);
        if (atomic_fetch_sub(&p->busy_workers, 1) == 1) pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
    }
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
    p->spin = n_threads <= nc_cpu_count();
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
    atomic_store(&p->quitting, 1);
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
    /* Workers are all between loops here (the last call waited for them),
     * so the loop's fields can be set before the generation publishes them. */
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    atomic_store(&p->next_task, 0);
    atomic_store(&p->busy_workers, p->n_threads - 1);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_tasks(p, 0);
    if (!spin_until(p, workers_done, 0)) {
        pthread_mutex_lock(&p->mu);
        while (!workers_done(p, 0)) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}
