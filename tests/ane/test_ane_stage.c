/* Program folders staged for the ANE daemon (src/ane_host/ane_stage.c):
 * the key is FNV-1a 64 (checked against the algorithm's published test
 * vectors), the copy is byte-identical under an absolute resolved path,
 * a complete copy is reused and a changed program gets another folder,
 * and a missing model.mil is one line naming it. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "ane_host/ane_stage.h"
#include "base/mmap.h"

static char tmp[256];

static int setup(void) {
    if (tmp[0]) return 1;
    snprintf(tmp, sizeof tmp, "/tmp/nectar_stage_XXXXXX");
    return mkdtemp(tmp) != NULL;
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

static int same_file(const char *a, const char *b) {
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    nc_error err = {0};
    int ok = nc_read_file(a, &x, &nx, &err) == NC_OK && nc_read_file(b, &y, &ny, &err) == NC_OK &&
             nx == ny && memcmp(x, y, nx) == 0;
    free(x);
    free(y);
    return ok;
}

/* tmp/name/model.mil holding mil, and weights/weight.bin holding w (if any). */
static int make_program(const char *name, const char *mil, const char *w, char *dir, size_t cap) {
    char path[400];
    snprintf(dir, cap, "%s/%s", tmp, name);
    snprintf(path, sizeof path, "%s/model.mil", dir);
    if (mkdir(dir, 0700) != 0 || !write_text(path, mil)) return 0;
    if (!w) return 1;
    snprintf(path, sizeof path, "%s/weights", dir);
    if (mkdir(path, 0700) != 0) return 0;
    snprintf(path, sizeof path, "%s/weights/weight.bin", dir);
    return write_text(path, w);
}

/* FNV-1a 64 test vectors (Fowler/Noll/Vo): "" -> cbf29ce484222325,
 * "a" -> af63dc4c8601ec8c, "foobar" -> 85944171f73967e8. */
static void test_key_is_fnv1a64_of_the_files(void) {
    CHECK(setup());
    char dir[300], key[ANE_STAGE_KEY_MAX];
    nc_error err = {0};
    CHECK(make_program("p_a", "a", NULL, dir, sizeof dir));
    CHECK_OK(ane_stage_key(dir, key, &err), &err);
    CHECK(strcmp(key, "nectar-af63dc4c8601ec8c") == 0);
    /* model.mil then weights/weight.bin: "foo" + "bar" hashes as "foobar" */
    CHECK(make_program("p_fb", "foo", "bar", dir, sizeof dir));
    CHECK_OK(ane_stage_key(dir, key, &err), &err);
    CHECK(strcmp(key, "nectar-85944171f73967e8") == 0);
}

static void test_stage_copies_under_an_absolute_path(void) {
    CHECK(setup());
    char dir[300], root[300], out[PATH_MAX], key[ANE_STAGE_KEY_MAX], a[PATH_MAX + 64],
        b[PATH_MAX + 64];
    nc_error err = {0};
    snprintf(dir, sizeof dir, "%s/p_fb", tmp); /* made by the test above */
    /* a root given with a relative detour resolves to an absolute path */
    snprintf(root, sizeof root, "%s/p_a/../cache/nectar-ane", tmp);
    snprintf(a, sizeof a, "%s/p_a/model.mil", tmp);
    if (!nc_file_exists(a)) SKIP("runs after test_key_is_fnv1a64_of_the_files");
    CHECK_OK(ane_stage_program(root, dir, out, sizeof out, key, &err), &err);
    CHECK(out[0] == '/' && !strstr(out, "/../") && !strstr(out, "/./"));
    char want[PATH_MAX];
    snprintf(a, sizeof a, "%s/cache/nectar-ane/%s", tmp, key);
    CHECK(realpath(a, want) && strcmp(want, out) == 0);
    snprintf(a, sizeof a, "%s/model.mil", dir);
    snprintf(b, sizeof b, "%s/model.mil", out);
    CHECK(same_file(a, b));
    snprintf(a, sizeof a, "%s/weights/weight.bin", dir);
    snprintf(b, sizeof b, "%s/weights/weight.bin", out);
    CHECK(same_file(a, b));
    /* a complete copy is reused as it is: a marker-bearing folder is trusted */
    snprintf(b, sizeof b, "%s/model.mil", out);
    CHECK(write_text(b, "left alone"));
    char again[PATH_MAX];
    CHECK_OK(ane_stage_program(root, dir, again, sizeof again, key, &err), &err);
    CHECK(strcmp(again, out) == 0);
    char *t = NULL;
    size_t n = 0;
    CHECK_OK(nc_read_file(b, &t, &n, &err), &err);
    CHECK(n == 10 && memcmp(t, "left alone", 10) == 0);
    free(t);
    /* another program: another key, another folder */
    snprintf(a, sizeof a, "%s/model.mil", dir);
    CHECK(write_text(a, "foo2"));
    char key2[ANE_STAGE_KEY_MAX];
    CHECK_OK(ane_stage_program(root, dir, again, sizeof again, key2, &err), &err);
    CHECK(strcmp(key2, key) != 0 && strcmp(again, out) != 0);
}

static void test_missing_program_is_one_line(void) {
    CHECK(setup());
    char dir[300], out[PATH_MAX], key[ANE_STAGE_KEY_MAX];
    nc_error err = {0};
    snprintf(dir, sizeof dir, "%s/none", tmp);
    CHECK(ane_stage_program(tmp, dir, out, sizeof out, key, &err) != NC_OK);
    CHECK(strstr(err.msg, "none/model.mil") && !strchr(err.msg, '\n'));
}

static void test_default_root_is_per_user_cache(void) {
    char root[PATH_MAX];
    nc_error err = {0};
    setenv("NECTAR_ANE_CACHE", "/somewhere/else", 1);
    CHECK_OK(ane_stage_default_root(root, sizeof root, &err), &err);
    CHECK(strcmp(root, "/somewhere/else") == 0);
    unsetenv("NECTAR_ANE_CACHE");
    setenv("XDG_CACHE_HOME", "/x/cache/", 1);
    CHECK_OK(ane_stage_default_root(root, sizeof root, &err), &err);
#if defined(__APPLE__)
    CHECK(strstr(root, "/nectar-ane") != NULL); /* confstr's dir, whatever it is */
#else
    CHECK(strcmp(root, "/x/cache/nectar-ane") == 0);
#endif
}

int main(void) {
    RUN(test_key_is_fnv1a64_of_the_files);
    RUN(test_stage_copies_under_an_absolute_path);
    RUN(test_missing_program_is_one_line);
    RUN(test_default_root_is_per_user_cache);
    if (tmp[0]) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    }
    return nc_test_exit_code();
}
