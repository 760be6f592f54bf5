/* The thread pool runs every task exactly once, across repeated loops and
 * thread counts (the counts are the independent reference). */
#include <stdatomic.h>

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

int main(void) {
    RUN(test_pool_runs_each_task_once);
    return nc_test_exit_code();
}
