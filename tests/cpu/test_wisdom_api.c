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

/* nc_model_open of `model` in a child process: its exit status (0: opened). */
static int open_in_child_of(const char *model) {
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        nc_model *m = NULL;
        nc_error err;
        int rc = nc_model_open(model, "cpu", NULL, &m, &err) == NC_OK ? 0 : 1;
        nc_model_free(m);
        _exit(rc);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p) return 98;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

/* How many slots have more than one candidate here (0: nothing to measure). */
static int slots_with_a_choice(void) {
    const char *names[CPU_WISDOM_MAX_CANDIDATES];
    int choices = 0;
    for (int s = 0; s < CPU_SLOT_N; s++)
        choices += cpu_tune_candidates((cpu_slot)s, names, CPU_WISDOM_MAX_CANDIDATES) > 1;
    return choices;
}

static int open_in_child(void) {
    return open_in_child_of(MODEL);
}

static void test_api_open_measures_then_reads(void) {
    snprintf(path, sizeof path, "%s/cache/wisdom", dir);
    setenv("NECTAR_WISDOM", path, 1);
    const char *names[CPU_WISDOM_MAX_CANDIDATES];
    int choices = slots_with_a_choice();
    CHECK(open_in_child() == 0);
    if (!choices) {
        CHECK(access(path, F_OK) != 0); /* nothing to measure: nothing written */
        SKIP("one candidate per slot on this CPU");
    }
    char before[8192];
    snprintf(before, sizeof before, "%s", read_all());
    CHECKF(!strncmp(before, "# nectar kernel wisdom 7\n", 25), "'%s'", before);
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

/* A NECTAR_WISDOM path longer than the library keeps (1023 characters)
 * fails the open in one line naming the variable; it used to open with no
 * wisdom at all, unnoticed. Run first: nothing is tuned in this process. */
static void test_api_open_refuses_a_wisdom_path_too_long(void) {
    char longpath[1100];
    memset(longpath, 'w', sizeof longpath);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = 0;
    setenv("NECTAR_WISDOM", longpath, 1);
    nc_model *m = NULL;
    nc_error err = {0};
    CHECK(nc_model_open(MODEL, "cpu", NULL, &m, &err) != NC_OK && m == NULL);
    CHECKF(!strncmp(err.msg, "NECTAR_WISDOM: ", 15) && !strchr(err.msg, '\n'), "'%s'", err.msg);
    unsetenv("NECTAR_WISDOM");
}

/* An encoder's open tunes no decoder slots: a fresh NECTAR_WISDOM is not
 * written (it used to be measured and written, ~1 s), a decoder's open is. */
static void test_api_encoder_open_measures_nothing(void) {
    char enc[400];
    snprintf(enc, sizeof enc, "%s/enc/wisdom", dir);
    setenv("NECTAR_WISDOM", enc, 1);
    int choices = slots_with_a_choice();
    CHECK(open_in_child_of("tests/fixtures/modernbert/mb_base") == 0);
    CHECK(access(enc, F_OK) != 0);
    CHECK(open_in_child_of(MODEL) == 0);
    if (!choices) SKIP("one candidate per slot on this CPU");
    CHECK(access(enc, F_OK) == 0);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/nectar-test-wisdom-api-%ld", (long)getpid());
    RUN(test_api_open_refuses_a_wisdom_path_too_long);
    RUN(test_api_encoder_open_measures_nothing); /* before this process tunes */
    RUN(test_api_open_measures_then_reads);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("  (could not remove %s)\n", dir);
    return nc_test_exit_code();
}
