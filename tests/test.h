/* The test harness: each tests/<layer>/test_*.c is one binary whose main
 * calls RUN(test_fn) for each case. Every case prints one line:
 *   PASS name | FAIL name: file:line: what | SKIP name: why
 * tests/run_tests.sh sums them into "N passed, N failed, N skipped". */
#ifndef NC_TEST_H
#define NC_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int nc_test_failed_; /* the current case failed */
extern int nc_test_skipped_;
extern char nc_test_skip_reason_[256];
extern int nc_test_n_pass, nc_test_n_fail, nc_test_n_skip;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);                      \
            nc_test_failed_ = 1;                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Like CHECK, with a printf-style explanation. */
#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("  %s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);                      \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            nc_test_failed_ = 1;                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Checks an nc_status call is NC_OK, printing the error message if not. */
#define CHECK_OK(call, errp)                                                                       \
    do {                                                                                           \
        nc_status st_ = (call);                                                                    \
        if (st_ != NC_OK) {                                                                        \
            printf("  %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, (errp)->msg);            \
            nc_test_failed_ = 1;                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* The larger of a running worst error and a new one, where a NaN error is
 * the worst of all: fmax() would drop it and let a NaN output pass. */
static inline double nc_worse(double worst, double err) {
    return isnan(err) || isnan(worst) ? INFINITY : (err > worst ? err : worst);
}

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol))) {                                                           \
            printf("  %s:%d: |%s - %s| = |%g - %g| > %g\n", __FILE__, __LINE__, #a, #b, a_, b_,    \
                   (double)(tol));                                                                 \
            nc_test_failed_ = 1;                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define SKIP(...)                                                                                  \
    do {                                                                                           \
        snprintf(nc_test_skip_reason_, sizeof nc_test_skip_reason_, __VA_ARGS__);                  \
        nc_test_skipped_ = 1;                                                                      \
        return;                                                                                    \
    } while (0)

void nc_test_run_(void (*fn)(void), const char *name);
#define RUN(fn) nc_test_run_(fn, #fn)

/* Exit status for main: non-zero when any case failed. */
int nc_test_exit_code(void);

/* tests/fixtures/<rel> (tests run from the repository root); NULL when it
 * does not exist, so the test can say which committed fixture is missing. */
const char *nc_test_fixture_path(const char *rel);

#endif
