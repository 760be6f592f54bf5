/* Model folders written whole or not at all (cli_outdir.h). */
#include "cli_outdir.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

nc_status cli_outdir_begin(const char *in, const char *out, char *tmp, size_t cap, nc_error *err) {
    char a[PATH_MAX], b[PATH_MAX], cfg[PATH_MAX + 16];
    tmp[0] = '\0';
    if (in && realpath(in, a) && realpath(out, b) && !strcmp(a, b))
        return nc_fail(err, NC_ERR_INVALID, "%s: the output folder must differ from the input",
                       out);
    snprintf(cfg, sizeof cfg, "%s/config.json", out);
    int is_free = !nc_file_exists(out) && !nc_is_dir(out);
    if (!is_free && !(nc_is_dir(out) && (nc_file_exists(cfg) || is_empty_dir(out))))
        return nc_fail(err, NC_ERR_INVALID,
                       "%s: exists and is not a model folder (not replacing it)", out);
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
