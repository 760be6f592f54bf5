/* The Hugging Face hub cache, read only (hf_cache.h). */
#include "io/hf_cache.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"

static int set(const char *s) {
    return s && *s;
}

/* "~/x" as huggingface_hub's expanduser reads it. */
static void expand(const char *path, const char *home, const char *tail, char *out, size_t cap) {
    if (path[0] == '~' && (path[1] == '/' || path[1] == '\0') && set(home))
        snprintf(out, cap, "%s%s%s", home, path + 1, tail);
    else
        snprintf(out, cap, "%s%s", path, tail);
}

void hf_cache_dir(const hf_env *env, char *out, size_t cap) {
    if (set(env->hf_hub_cache))
        expand(env->hf_hub_cache, env->home, "", out, cap);
    else if (set(env->huggingface_hub_cache))
        expand(env->huggingface_hub_cache, env->home, "", out, cap);
    else if (set(env->hf_home))
        expand(env->hf_home, env->home, "/hub", out, cap);
    else if (set(env->xdg_cache_home))
        expand(env->xdg_cache_home, env->home, "/huggingface/hub", out, cap);
    else
        snprintf(out, cap, "%s/.cache/huggingface/hub", set(env->home) ? env->home : ".");
}

static int good_part(const char *s, size_t n) {
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.';
        if (!ok) return 0;
    }
    return 1;
}

int hf_is_repo_id(const char *s) {
    const char *slash = strchr(s, '/');
    if (!slash || strchr(slash + 1, '/')) return 0;
    const char *at = strchr(slash + 1, '@');
    size_t name_len = at ? (size_t)(at - slash - 1) : strlen(slash + 1);
    if (at && !good_part(at + 1, strlen(at + 1))) return 0;
    return good_part(s, (size_t)(slash - s)) && good_part(slash + 1, name_len);
}

/* CACHE/models--ORG--NAME for "ORG/NAME" (the revision cut off into rev). */
static void repo_folder(const char *cache, const char *repo_id, char *out, size_t cap, char *rev,
                        size_t rev_cap) {
    const char *slash = strchr(repo_id, '/'), *at = strchr(repo_id, '@');
    size_t name_len = at ? (size_t)(at - slash - 1) : strlen(slash + 1);
    snprintf(out, cap, "%s/models--%.*s--%.*s", cache, (int)(slash - repo_id), repo_id,
             (int)name_len, slash + 1);
    snprintf(rev, rev_cap, "%s", at ? at + 1 : "main");
}

/* The commit that refs/REV names (one line of hex), or REV itself. */
static void commit_of(const char *folder, const char *rev, char *out, size_t cap) {
    char path[4096];
    snprintf(path, sizeof path, "%s/refs/%s", folder, rev);
    snprintf(out, cap, "%s", rev);
    char *text = NULL;
    size_t n = 0;
    nc_error ignored;
    if (nc_read_file(path, &text, &n, &ignored) != NC_OK) return;
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
        n--;
    if (n && n < cap) snprintf(out, cap, "%.*s", (int)n, text);
    free(text);
}

nc_status hf_cache_resolve(const char *cache, const char *repo_id, char *out, size_t cap,
                           nc_error *err) {
    if (!hf_is_repo_id(repo_id))
        return nc_fail(err, NC_ERR_INVALID, "'%s' is not a model id of the form ORG/NAME",
                       repo_id);
    char folder[4096], rev[256], commit[256];
    repo_folder(cache, repo_id, folder, sizeof folder, rev, sizeof rev);
    commit_of(folder, rev, commit, sizeof commit);
    int n = snprintf(out, cap, "%s/snapshots/%s", folder, commit);
    if (n < 0 || (size_t)n >= cap) return nc_fail(err, NC_ERR_RANGE, "%s: path too long", folder);
    if (nc_is_dir(out)) return NC_OK;
    char name[512];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(repo_id, "@"), repo_id);
    const char *at = strchr(repo_id, '@');
    return nc_fail(err, NC_ERR_NOT_FOUND,
                   "%s: no such folder, and not in the Hugging Face cache (%s); download it "
                   "with: hf download %s%s%s",
                   repo_id, cache, name, at ? " --revision " : "", at ? at + 1 : "");
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

nc_status hf_cache_list(const char *cache, hf_cache_visit visit, void *user, nc_error *err) {
    DIR *d = opendir(cache);
    if (!d) return NC_OK; /* no cache: nothing cached */
    char **names = NULL;
    size_t n = 0, cap_names = 0;
    nc_status st = NC_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "models--", 8) != 0) continue;
        if (n == cap_names) {
            cap_names = cap_names ? 2 * cap_names : 16;
            char **grown = realloc(names, cap_names * sizeof *names);
            if (!grown) {
                st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", cache);
                break;
            }
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name))) {
            st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", cache);
            break;
        }
        n++;
    }
    closedir(d);
    if (st == NC_OK && n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; st == NC_OK && i < n; i++) {
        /* models--ORG--NAME -> ORG/NAME (the first "--" after the prefix) */
        const char *rest = names[i] + 8, *sep = strstr(rest, "--");
        if (!sep) continue;
        char id[512], snap[4096];
        snprintf(id, sizeof id, "%.*s/%s", (int)(sep - rest), rest, sep + 2);
        nc_error ignored;
        if (hf_is_repo_id(id) && hf_cache_resolve(cache, id, snap, sizeof snap, &ignored) == NC_OK)
            visit(user, id, snap);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return st;
}
