/* Model folders written whole or not at all (cli_outdir.h). */
#include "cli_outdir.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mmap.h"
#include "bundle/bundle_io.h"

static int is_empty_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return d && n == 0;
}

/* The pid of a temporary sibling's name "BASE.tmp.<pid>" / "BASE.old.<pid>",
 * or 0 when name is not one of base's. */
static long sibling_pid(const char *name, const char *base) {
    size_t n = strlen(base);
    if (strncmp(name, base, n) || (strncmp(name + n, ".tmp.", 5) && strncmp(name + n, ".old.", 5)))
        return 0;
    char *end;
    long pid = strtol(name + n + 5, &end, 10);
    return *end || pid <= 0 ? 0 : pid;
}

void cli_outdir_sweep(const char *out) {
    char dir[PATH_MAX], path[PATH_MAX * 2];
    snprintf(dir, sizeof dir, "%s", out);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    const char *parent = slash ? (slash == dir ? "/" : dir) : ".";
    if (slash && slash != dir) *slash = '\0';
    DIR *d = opendir(parent);
    struct dirent *e;
    while (d && *base && (e = readdir(d)) != NULL) {
        long pid = sibling_pid(e->d_name, base);
        /* a live process's sibling is its own business (ESRCH: gone) */
        if (!pid || pid == (long)getpid() || !(kill((pid_t)pid, 0) != 0 && errno == ESRCH))
            continue;
        snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
        lower_remove_tree(path);
    }
    if (d) closedir(d);
}

nc_status cli_outdir_begin(const char *in, const char *out, char *tmp, size_t cap, nc_error *err) {
    return cli_outdir_begin_kind(in, out, "config.json", "model", tmp, cap, err);
}

nc_status cli_outdir_begin_kind(const char *in, const char *out, const char *marker,
                                const char *kind, char *tmp, size_t cap, nc_error *err) {
    char a[PATH_MAX], b[PATH_MAX], cfg[PATH_MAX + 64];
    tmp[0] = '\0';
    if (in && realpath(in, a) && realpath(out, b) && !strcmp(a, b))
        return nc_fail(err, NC_ERR_INVALID, "%s: the output folder must differ from the input",
                       out);
    cli_outdir_sweep(out);
    snprintf(cfg, sizeof cfg, "%s/%s", out, marker);
    int is_free = !nc_file_exists(out) && !nc_is_dir(out);
    if (!is_free && !(nc_is_dir(out) && (nc_file_exists(cfg) || is_empty_dir(out))))
        return nc_fail(err, NC_ERR_INVALID, "%s: exists and is not a %s folder (not replacing it)",
                       out, kind);
    return lower_bundle_make_tmp(out, tmp, cap, err);
}

nc_status cli_outdir_commit(const char *tmp, const char *out, nc_error *err) {
    nc_status st = lower_bundle_publish(tmp, out, err);
    if (st != NC_OK) cli_outdir_abort(tmp);
    return st;
}

void cli_outdir_abort(const char *tmp) {
    if (tmp && *tmp) lower_remove_tree(tmp);
}
