/* nc_model_open (the C API, and the Python package over it) applies the
 * kernels chosen by measurement as the command line does (cpu_wisdom.h):
 * NECTAR_WISDOM names the file; the first open in a process on a machine
 * without wisdom measures and writes it (here in a child process), an open
 * in another process reads it: every slot with a choice "from the wisdom
 * file", nothing measured, the file left as it was. */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "cpu/cpu_wisdom.h"
#include "nectar.h"

#define MODEL "tests/fixtures/qwen3/tiny_bf16"

static char dir[256], path[300];

static char *read_all(void) {
    static char buf[8192];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    return buf;
}

/* nc_model_open in a child process: its exit status (0: opened). */
static int open_in_child(void) {
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        nc_model *m = NULL;
        nc_error err;
        int rc = nc_model_open(MODEL, "cpu", NULL, &m, &err) == NC_OK ? 0 : 1;
        nc_model_free(m);
        _exit(rc);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p) return 98;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static void test_api_open_measures_then_reads(void) {
    snprintf(dir, sizeof dir, "/tmp/nectar-test-wisdom-api-%ld", (long)getpid());
    snprintf(path, sizeof path, "%s/cache/wisdom", dir);
    setenv("NECTAR_WISDOM", path, 1);
    const char *names[CPU_WISDOM_MAX_CANDIDATES];
    int choices = 0;
    for (int s = 0; s < CPU_SLOT_N; s++)
        choices += cpu_tune_candidates((cpu_slot)s, names, CPU_WISDOM_MAX_CANDIDATES) > 1;
    CHECK(open_in_child() == 0);
    if (!choices) {
        CHECK(access(path, F_OK) != 0); /* nothing to measure: nothing written */
        SKIP("one candidate per slot on this CPU");
    }
    char before[8192];
    snprintf(before, sizeof before, "%s", read_all());
    CHECKF(!strncmp(before, "# nectar kernel wisdom 3\n", 25), "'%s'", before);
    nc_model *m = NULL;
    nc_error err;
    CHECK_OK(nc_model_open(MODEL, "cpu", NULL, &m, &err), &err);
    const cpu_tuning *t;
    CHECK_OK(cpu_tune_once(NULL, 1, &t, &err), &err); /* this process's: the open's */
    CHECK(!strcmp(t->file, path));
    for (int s = 0; s < CPU_SLOT_N; s++) {
        if (cpu_tune_candidates((cpu_slot)s, names, CPU_WISDOM_MAX_CANDIDATES) < 2) continue;
        CHECKF(!strcmp(t->slot[s].why, "from the wisdom file"), "%s: %s", t->slot[s].slot,
               t->slot[s].why);
        char line[300];
        snprintf(line, sizeof line, "\t%s\t%s\t", t->slot[s].slot, t->slot[s].kernel);
        CHECKF(strstr(before, line) != NULL, "%s not in the file", line);
    }
    CHECK(!strcmp(read_all(), before));
    nc_model_free(m);
}

int main(void) {
    RUN(test_api_open_measures_then_reads);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
    return nc_test_exit_code();
}
