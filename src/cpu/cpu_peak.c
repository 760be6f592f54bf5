/* Peak FMA rate (see cpu_peak.h): the scalar burner and the threaded,
 * timed driver shared by every table. */
#include "cpu/cpu_peak.h"

#include <time.h>

#include "base/timer.h"
#include "cpu/gemm_amx.h"

static double thread_cpu_s(void) {
    struct timespec t;
    return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0 ? (double)t.tv_sec + t.tv_nsec * 1e-9
                                                           : 0.0;
}

double cpu_fma_burn_scalar(long iters, float *sink) {
    float a[12], m = 0.999999f, c = 1e-7f;
    for (int j = 0; j < 12; j++)
        a[j] = *sink + (float)j;
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 12; j++)
            a[j] = a[j] * m + c; /* contracted to FMA where there is one */
    float s = 0;
    for (int j = 0; j < 12; j++)
        s += a[j];
    *sink = s;
    return 24.0 * (double)iters;
}

typedef struct {
    double (*burn)(long iters, float *sink);
    long iters;
    double flops[256], cpu_s[256];
    float sink[256];
} burn_job;

static void burn_task(void *ctx, int task, int thread) {
    (void)task;
    burn_job *j = ctx;
    double c0 = thread_cpu_s();
    j->flops[thread & 255] += j->burn(j->iters, &j->sink[thread & 255]);
    j->cpu_s[thread & 255] += thread_cpu_s() - c0;
}

static double peak_flops(nc_pool *pool, double (*burn)(long, float *), double seconds, int reps,
                         double *per_cpu_s) {
    int threads = nc_pool_threads(pool);
    burn_job j = {.burn = burn, .iters = 1000};
    /* calibrate iterations to about `seconds` on one thread */
    for (;;) {
        double t0 = nc_now_s();
        if (burn(j.iters, &j.sink[0]) <= 0) { /* the unit is not there */
            if (per_cpu_s) *per_cpu_s = 0;
            return 0;
        }
        double dt = nc_now_s() - t0;
        if (dt >= seconds / 8 || j.iters > (1L << 40)) {
            j.iters = (long)((double)j.iters * seconds / (dt > 0 ? dt : 1e-9));
            break;
        }
        j.iters *= 4;
    }
    if (j.iters < 1) j.iters = 1;
    double best = 0, best_cpu = 0;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < threads && i < 256; i++)
            j.flops[i] = j.cpu_s[i] = 0;
        double t0 = nc_now_s();
        nc_pool_for(pool, threads, burn_task, &j); /* one task per thread */
        double dt = nc_now_s() - t0, f = 0, c = 0;
        for (int i = 0; i < threads && i < 256; i++) {
            f += j.flops[i];
            c += j.cpu_s[i];
        }
        if (dt > 0 && f / dt > best) best = f / dt;
        if (c > 0 && f / c > best_cpu) best_cpu = f / c;
    }
    if (per_cpu_s) *per_cpu_s = best_cpu;
    return best;
}

double cpu_peak_fma_flops(nc_pool *pool, const cpu_kernels *kern, double seconds, int reps,
                          double *per_cpu_s) {
    return peak_flops(pool, kern->fma_burn, seconds, reps, per_cpu_s);
}

double cpu_peak_amx_flops(nc_pool *pool, double seconds, int reps, double *per_cpu_s) {
    return peak_flops(pool, cpu_amx_burn, seconds, reps, per_cpu_s);
}
