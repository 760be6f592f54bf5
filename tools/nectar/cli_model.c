/* `-m` as a folder or a hub model id (cli_model.h). */
#include "cli_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/hf_cache.h"

#define MAX_RESOLVED 32

/* What was resolved, for cli_model_name (the strings live until exit). */
static struct {
    char *id, *path;
} resolved[MAX_RESOLVED];
static int n_resolved;

void cli_model_cache_dir(char *out, unsigned long cap) {
    hf_env env = {getenv("HF_HUB_CACHE"), getenv("HUGGINGFACE_HUB_CACHE"), getenv("HF_HOME"),
                  getenv("XDG_CACHE_HOME"), getenv("HOME")};
    hf_cache_dir(&env, out, cap);
}

const char *cli_model_path(const char *cmd, const char *arg) {
    struct stat sb;
    if (stat(arg, &sb) == 0 || !hf_is_repo_id(arg)) return arg;
    char cache[4096], snap[4096];
    cli_model_cache_dir(cache, sizeof cache);
    nc_error err = {0};
    if (hf_cache_resolve(cache, arg, snap, sizeof snap, &err) != NC_OK) {
        fprintf(stderr, "nectar %s: error: %s\n", cmd, err.msg);
        return NULL;
    }
    if (n_resolved == MAX_RESOLVED) return arg;
    char *id = strdup(arg), *path = strdup(snap);
    if (!id || !path) {
        free(id);
        free(path);
        fprintf(stderr, "nectar %s: error: out of memory\n", cmd);
        return NULL;
    }
    resolved[n_resolved].id = id;
    resolved[n_resolved++].path = path;
    return path;
}

const char *cli_model_name(const char *path) {
    for (int i = 0; path && i < n_resolved; i++)
        if (resolved[i].path == path || !strcmp(resolved[i].path, path)) return resolved[i].id;
    return NULL;
}
