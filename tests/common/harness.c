/* Runner side of tests/test.h. */
#include <sys/stat.h>

#include "../test.h"

int nc_test_failed_, nc_test_skipped_;
char nc_test_skip_reason_[256];
int nc_test_n_pass, nc_test_n_fail, nc_test_n_skip;

void nc_test_run_(void (*fn)(void), const char *name) {
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
