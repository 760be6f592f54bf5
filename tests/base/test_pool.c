/* The thread pool runs every task exactly once, across repeated loops and
 * thread counts (the counts are the independent reference). */
#include <stdatomic.h>
#include <unistd.h>

#include "../test.h"
#include "base/pool.h"

typedef struct {
    atomic_int hits[1000];
} hit_counts;

static void count_task(void *ctx, int task, int thread) {
    (void)thread;
    atomic_fetch_add(&((hit_counts *)ctx)->hits[task], 1);
}

static void test_pool_runs_each_task_once(void) {
    for (int threads = 1; threads <= 4; threads++) {
        nc_pool *p;
        nc_error err;
        CHECK_OK(nc_pool_new(threads, &p, &err), &err);
        static hit_counts c;
        for (int i = 0; i < 1000; i++) atomic_store(&c.hits[i], 0);
        for (int round = 0; round < 50; round++) nc_pool_for(p, 1000 - round * 7, count_task, &c);
        nc_pool_free(p);
        for (int i = 0; i < 1000; i++) {
            int expect = 0;
            for (int round = 0; round < 50; round++) expect += i < 1000 - round * 7;
            CHECKF(atomic_load(&c.hits[i]) == expect, "threads=%d task %d", threads, i);
        }
    }
}

typedef struct {
    atomic_int done;
} done_count;

static void slow_task(void *ctx, int task, int thread) {
    (void)thread;
    if (task % 3 == 0) usleep(200); /* uneven tasks: the caller must wait for them */
    atomic_fetch_add(&((done_count *)ctx)->done, 1);
}

/* Every loop is finished when nc_pool_for returns, whether the workers were
 * still spinning (loops back to back) or asleep (a pause longer than the
 * spin window before the loop). */
static void test_pool_waits_for_all_tasks_awake_and_asleep(void) {
    for (int threads = 2; threads <= 3; threads++) {
        nc_pool *p;
        nc_error err;
        CHECK_OK(nc_pool_new(threads, &p, &err), &err);
        for (int round = 0; round < 40; round++) {
            if (round % 4 == 3) usleep(3000);
            done_count c;
            atomic_store(&c.done, 0);
            int n = 2 + round % 5;
            nc_pool_for(p, n, slow_task, &c);
            CHECKF(atomic_load(&c.done) == n, "threads=%d round %d: %d of %d tasks done", threads,
                   round, atomic_load(&c.done), n);
        }
        nc_pool_free(p);
    }
}

int main(void) {
    RUN(test_pool_runs_each_task_once);
    RUN(test_pool_waits_for_all_tasks_awake_and_asleep);
    return nc_test_exit_code();
}
