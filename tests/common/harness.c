/* Runner side of tests/test.h. */
#include <sys/stat.h>

#include "../test.h"
#include "cpu/cpu_kernels.h"
#include "io/weights_residency.h"

int nc_test_failed_, nc_test_skipped_;
char nc_test_skip_reason_[256];
int nc_test_n_pass, nc_test_n_fail, nc_test_n_skip;

static int is_on(const char *v) {
    return v && *v && strcmp(v, "0");
}

/* The kernel table (and where the weights live: NECTAR_WEIGHTS) the shell tests ask for (test_qwen3_scalar.sh runs a
 * binary under NECTAR_NO_SIMD=1, NECTAR_SIMD=avx2, ...), chosen the way
 * `nectar` does it (tools/nectar/cli_env.c): the library reads no
 * environment, it is told. */
static void select_kernels(void) {
    const char *simd = getenv("NECTAR_SIMD");
    const char *t = is_on(getenv("NECTAR_NO_SIMD"))  ? "scalar"
                    : simd && *simd                  ? simd
                    : is_on(getenv("NECTAR_NO_AMX")) ? "avx512"
                                                     : NULL;
    nc_error err;
    if (cpu_select_table(t, &err) != NC_OK ||
        cpu_select_bf16(getenv("NECTAR_BF16"), &err) != NC_OK ||
        weights_residency_select(getenv("NECTAR_WEIGHTS"), &err) != NC_OK) {
        printf("FAIL kernel_table_from_the_environment: %s\n", err.msg);
        exit(1);
    }
}

void nc_test_run_(void (*fn)(void), const char *name) {
    static int started;
    if (!started++) select_kernels();
    nc_test_failed_ = 0;
    nc_test_skipped_ = 0;
    nc_test_skip_reason_[0] = '\0';
    fn();
    if (nc_test_failed_) {
        printf("FAIL %s\n", name);
        nc_test_n_fail++;
    } else if (nc_test_skipped_) {
        printf("SKIP %s: %s\n", name, nc_test_skip_reason_);
        nc_test_n_skip++;
    } else {
        printf("PASS %s\n", name);
        nc_test_n_pass++;
    }
    fflush(stdout);
}

int nc_test_exit_code(void) {
    return nc_test_n_fail ? 1 : 0;
}

const char *nc_test_fixture_path(const char *rel) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "tests/fixtures/%s", rel);
    struct stat st;
    return stat(buf, &st) == 0 ? buf : NULL;
}
