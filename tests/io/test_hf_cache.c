/* -m ORG/NAME through the Hugging Face cache: a cache laid out by
 * huggingface_hub's own functions (tests/fixtures/hf_cache/layout.json,
 * tools/make_hf_cache_fixture.py: folders, blobs copied from the repository's
 * fixtures, relative links, refs) is rebuilt in a temporary folder; each
 * model resolves to the snapshot huggingface_hub's snapshot_download
 * (local_files_only) returned; the cache folder follows the environment as
 * huggingface_hub's constants compute it; a name not cached says the
 * `hf download` command; and through $NECTAR_BIN: `run` and `embed` by name
 * equal the same folders by path, `list` shows the models nectar runs and
 * not the other, a missing name is one error line. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "base/mmap.h"
#include "io/hf_cache.h"

#define LAYOUT "tests/fixtures/hf_cache/layout.json"

static char g_root[64]; /* the temporary folder; the cache is g_root/hub */
static char g_cache[128];
static json_t *g_layout;

static int run(const char *cmd) {
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Rebuilds the cache of layout.json under g_cache. */
static int build_cache(void) {
    strcpy(g_root, "/tmp/nectar_hf_XXXXXX");
    if (!mkdtemp(g_root)) return 0;
    snprintf(g_cache, sizeof g_cache, "%s/hub", g_root);
    if (mkdir(g_cache, 0777)) return 0;
    g_layout = json_load_file(LAYOUT, 0, NULL);
    if (!g_layout) return 0;
    char path[1024], cmd[4096];
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(g_layout, "dirs"), i, v) {
        snprintf(path, sizeof path, "%s/%s", g_cache, json_string_value(v));
        if (mkdir(path, 0777)) return 0;
    }
    json_array_foreach(json_object_get(g_layout, "files"), i, v) {
        const char *src = json_string_value(json_object_get(v, "source"));
        const char *rel = json_string_value(json_object_get(v, "path"));
        if (src)
            snprintf(cmd, sizeof cmd, "cp '%s' '%s/%s'", src, g_cache, rel);
        else /* the config of a model nectar cannot run */
            snprintf(cmd, sizeof cmd, "printf '%%s' '%s' > '%s/%s'",
                     json_string_value(json_object_get(g_layout, "gpt2_config")), g_cache, rel);
        if (run(cmd)) return 0;
    }
    json_array_foreach(json_object_get(g_layout, "links"), i, v) {
        snprintf(path, sizeof path, "%s/%s", g_cache, json_string_value(json_object_get(v, "path")));
        if (symlink(json_string_value(json_object_get(v, "target")), path)) return 0;
    }
    const char *rel;
    json_object_foreach(json_object_get(g_layout, "refs"), rel, v) {
        snprintf(cmd, sizeof cmd, "printf '%%s' '%s' > '%s/%s'", json_string_value(v), g_cache, rel);
        if (run(cmd)) return 0;
    }
    return 1;
}

static void test_snapshots_resolve_as_huggingface_hub(void) {
    const char *id;
    json_t *v;
    int n = 0;
    json_object_foreach(json_object_get(g_layout, "resolved"), id, v) {
        char got[4096], want[4096];
        nc_error err = {0};
        CHECK_OK(hf_cache_resolve(g_cache, id, got, sizeof got, &err), &err);
        snprintf(want, sizeof want, "%s/%s", g_cache, json_string_value(v));
        CHECKF(!strcmp(got, want), "%s: %s, huggingface_hub %s", id, got, want);
        n++;
    }
    CHECK(n == 3);
    /* a revision: the older commit of tiny-qwen3 by its hash */
    char got[4096];
    nc_error err = {0};
    CHECK(hf_cache_resolve(g_cache, "nectar-test/tiny-qwen3@main", got, sizeof got, &err) == NC_OK);
}

static void test_cache_folder_follows_the_environment(void) {
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(g_layout, "cache_dirs"), i, c) {
        json_t *e = json_object_get(c, "env");
#define ENV(k) json_string_value(json_object_get(e, k))
        hf_env env = {ENV("HF_HUB_CACHE"), ENV("HUGGINGFACE_HUB_CACHE"), ENV("HF_HOME"),
                      ENV("XDG_CACHE_HOME"), ENV("HOME")};
#undef ENV
        char got[4096];
        hf_cache_dir(&env, got, sizeof got);
        const char *want = json_string_value(json_object_get(c, "dir"));
        CHECKF(!strcmp(got, want), "case %zu: %s, huggingface_hub %s", i, got, want);
    }
    CHECK(i == 7);
}

static void test_missing_name_says_hf_download(void) {
    char out[4096];
    nc_error err = {0};
    CHECK(hf_cache_resolve(g_cache, "nectar-test/missing", out, sizeof out, &err) ==
          NC_ERR_NOT_FOUND);
    CHECKF(strstr(err.msg, "hf download nectar-test/missing") && strstr(err.msg, g_cache), "%s",
           err.msg);
    CHECK(hf_cache_resolve(g_cache, "nectar-test/tiny-qwen3@v9", out, sizeof out, &err) ==
          NC_ERR_NOT_FOUND);
    CHECKF(strstr(err.msg, "hf download nectar-test/tiny-qwen3 --revision v9"), "%s", err.msg);
}

static void test_repo_id_shapes(void) {
    CHECK(hf_is_repo_id("Qwen/Qwen3-0.6B"));
    CHECK(hf_is_repo_id("answerdotai/ModernBERT-base@main"));
    CHECK(!hf_is_repo_id("Qwen3-0.6B"));
    CHECK(!hf_is_repo_id("/abs/path"));
    CHECK(!hf_is_repo_id("a/b/c"));
    CHECK(!hf_is_repo_id("../x"));
    CHECK(!hf_is_repo_id("org/"));
    CHECK(!hf_is_repo_id("org/na me"));
}

/* Runs $NECTAR_BIN with the cache as $HF_HOME/hub (no other HF variable). */
#define ENVS "env -u HF_HUB_CACHE -u HUGGINGFACE_HUB_CACHE -u XDG_CACHE_HOME HF_HOME=%s "

static void test_cli_run_and_embed_by_name(void) {
    const char *bin = getenv("NECTAR_BIN");
    if (!bin || !nc_file_exists(bin)) SKIP("NECTAR_BIN not set (run through make test)");
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             ENVS "%s run -m nectar-test/tiny-qwen3 -p 'Hello there' -n 12 --temp 0 >%s/a 2>/dev/null && "
                  "%s run -m tests/fixtures/qwen3/tiny_bf16 -p 'Hello there' -n 12 --temp 0 >%s/b 2>/dev/null && "
                  "cmp -s %s/a %s/b && test -s %s/a",
             g_root, bin, g_root, bin, g_root, g_root, g_root, g_root);
    CHECKF(run(cmd) == 0, "run by name differs from run by folder");
    snprintf(cmd, sizeof cmd,
             ENVS "%s embed -m nectar-test/st-max -p 'Hello there' >%s/c 2>/dev/null && "
                  "%s embed -m tests/fixtures/st/st_max -p 'Hello there' >%s/d 2>/dev/null && "
                  "cmp -s %s/c %s/d",
             g_root, bin, g_root, bin, g_root, g_root, g_root);
    CHECKF(run(cmd) == 0, "embed by name differs from embed by folder");
}

static void test_cli_list_and_missing(void) {
    const char *bin = getenv("NECTAR_BIN");
    if (!bin || !nc_file_exists(bin)) SKIP("NECTAR_BIN not set (run through make test)");
    char cmd[4096], path[256];
    snprintf(cmd, sizeof cmd, ENVS "%s list >%s/list 2>%s/list.err", g_root, bin, g_root, g_root);
    CHECK(run(cmd) == 0);
    snprintf(path, sizeof path, "%s/list", g_root);
    char *text = NULL;
    size_t n = 0;
    nc_error err = {0};
    CHECK_OK(nc_read_file(path, &text, &n, &err), &err);
    int ok = strstr(text, "nectar-test/tiny-qwen3") && strstr(text, " qwen3 ") &&
             strstr(text, "nectar-test/st-max") && strstr(text, " modernbert ") &&
             strstr(text, "sentence-transformers") && strstr(text, "bf16") &&
             !strstr(text, "gpt2-like");
    if (!ok) printf("  list printed:\n%s", text);
    free(text);
    CHECK(ok);
    snprintf(cmd, sizeof cmd, ENVS "%s list --all 2>/dev/null | grep -q 'other-org/gpt2-like.*gpt2'",
             g_root, bin);
    CHECKF(run(cmd) == 0, "list --all does not show the gpt2 model and why");
    snprintf(cmd, sizeof cmd,
             ENVS "%s run -m nectar-test/missing -p x -n 1 >%s/m.out 2>%s/m.err; test $? -ne 0 && "
                  "grep -q 'hf download nectar-test/missing' %s/m.err && test ! -s %s/m.out && "
                  "test $(wc -l < %s/m.err) -eq 1",
             g_root, bin, g_root, g_root, g_root, g_root, g_root);
    CHECKF(run(cmd) == 0, "a missing name is not one error line with the hf download command");
}

int main(void) {
    if (!build_cache()) {
        printf("FAIL hf_cache_layout: cannot rebuild %s in %s\n", LAYOUT, g_root);
        return 1;
    }
    RUN(test_snapshots_resolve_as_huggingface_hub);
    RUN(test_cache_folder_follows_the_environment);
    RUN(test_missing_name_says_hf_download);
    RUN(test_repo_id_shapes);
    RUN(test_cli_run_and_embed_by_name);
    RUN(test_cli_list_and_missing);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_root);
    run(cmd);
    json_decref(g_layout);
    return nc_test_exit_code();
}
