/* Bundle folder and manifest.json pieces shared by both compiles (bundle_io.h). */
#define _XOPEN_SOURCE 700
#include "bundle/bundle_io.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mmap.h"
#include "nectar.h"

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void lower_remove_tree(const char *dir) {
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

size_t lower_tree_bytes(const char *dir) {
    size_t total = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4200];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode))
            total += lower_tree_bytes(p);
        else if (S_ISREG(sb.st_mode))
            total += (size_t)sb.st_size;
    }
    closedir(d);
    return total;
}

nc_status lower_bundle_check_out(const char *out, nc_error *err) {
    char m[4200];
    snprintf(m, sizeof m, "%s/manifest.json", out);
    if ((!nc_file_exists(out) && !nc_is_dir(out)) || (nc_is_dir(out) && nc_file_exists(m)))
        return NC_OK;
    return nc_fail(err, NC_ERR_INVALID, "%s: exists and is not a nectar bundle (not replacing it)",
                   out);
}

nc_status lower_bundle_make_tmp(const char *out, char *tmp, size_t cap, nc_error *err) {
    snprintf(tmp, cap, "%s.tmp.%ld", out, (long)getpid());
    lower_remove_tree(tmp);
    if (mkdir(tmp, 0777) == 0) return NC_OK;
    nc_status st = nc_fail(err, NC_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    tmp[0] = '\0';
    return st;
}

nc_status lower_bundle_publish(const char *tmp, const char *out, nc_error *err) {
    if (rename(tmp, out) == 0) return NC_OK;
    char old[4200];
    snprintf(old, sizeof old, "%s.old.%ld", out, (long)getpid());
    if (rename(out, old) != 0 || rename(tmp, out) != 0)
        return nc_fail(err, NC_ERR_IO, "%s: cannot move the bundle into place: %s", out,
                       strerror(errno));
    lower_remove_tree(old);
    return NC_OK;
}

nc_status lower_copy_file(const char *from_dir, const char *to_dir, const char *name, int required,
                          nc_error *err) {
    char src[4200], dst[4200];
    snprintf(src, sizeof src, "%s/%s", from_dir, name);
    snprintf(dst, sizeof dst, "%s/%s", to_dir, name);
    if (!nc_file_exists(src))
        return required ? nc_fail(err, NC_ERR_NOT_FOUND, "%s: missing", src) : NC_OK;
    return nc_copy_file(src, dst, err);
}

/* --- manifest.json: writing ------------------------------------------------ */

void lower_json_set_header(json_t *root) {
    json_object_set_new(root, "format", json_string(LOWER_MANIFEST_FORMAT));
    json_object_set_new(root, "format_version", json_integer(LOWER_MANIFEST_VERSION));
    json_object_set_new(root, "nectar_version", json_string(NECTAR_VERSION));
}

json_t *lower_json_fp16_stats(const lower_fp16_stats *s, const char *from) {
    json_t *conv = json_object();
    if (from) json_object_set_new(conv, "from", json_string(from));
    json_object_set_new(conv, "to", json_string("fp16"));
    json_object_set_new(conv, "overflow_policy", json_string("saturate to +/-65504"));
    json_object_set_new(conv, "values", json_integer((json_int_t)s->n_values));
    json_object_set_new(conv, "saturated", json_integer((json_int_t)s->n_saturated));
    json_object_set_new(conv, "nonfinite", json_integer((json_int_t)s->n_nonfinite));
    return conv;
}

static json_t *io_list(const lower_io *io, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        json_t *o = json_object(), *sh = json_array();
        for (int d = 0; d < io[i].rank; d++)
            json_array_append_new(sh, json_integer(io[i].shape[d]));
        json_object_set_new(o, "name", json_string(io[i].name));
        json_object_set_new(o, "shape", sh);
        json_object_set_new(o, "dtype", json_string(io[i].dtype));
        json_array_append_new(a, o);
    }
    return a;
}

json_t *lower_json_program(const lower_program_info *pi, const char *role, int with_batch) {
    json_t *po = json_object(), *fns = json_array();
    json_object_set_new(po, "path", json_string(pi->path));
    json_object_set_new(po, "weights", json_string("weights/weight.bin"));
    if (pi->layer >= 0) json_object_set_new(po, "layer", json_integer(pi->layer));
    json_object_set_new(po, "role", json_string(role));
    for (int f = 0; f < pi->n_fns; f++) {
        const lower_fn_info *fi = &pi->fns[f];
        json_t *fo = json_object();
        json_object_set_new(fo, "name", json_string(fi->name));
        if (with_batch)
            json_object_set_new(fo, "batch", json_integer(fi->n_in ? fi->in[0].shape[0] : 0));
        json_object_set_new(fo, "seq", json_integer(fi->seq));
        json_object_set_new(fo, "inputs", io_list(fi->in, fi->n_in));
        json_object_set_new(fo, "outputs", io_list(fi->out, fi->n_out));
        json_array_append_new(fns, fo);
    }
    json_object_set_new(po, "functions", fns);
    return po;
}

nc_status lower_json_write(json_t *root, const char *path, nc_error *err) {
    return nc_json_save(root, path, 1, err);
}

/* --- manifest.json: reading ------------------------------------------------ */

nc_status lower_manifest_text(const char *dir, char *path, size_t path_cap, char **text,
                              size_t *len, nc_error *err) {
    snprintf(path, path_cap, "%s/manifest.json", dir);
    /* a model folder given where a bundle belongs: say what to do, not
     * which file is missing */
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (access(path, F_OK) != 0 && access(cfg, F_OK) == 0)
        return nc_fail(err, NC_ERR_INVALID,
                       "%s: not a bundle (a model folder): run nectar compile -m %s -o BUNDLE, "
                       "or use --backend cpu",
                       dir, dir);
    return nc_read_file(path, text, len, err);
}

nc_status lower_json_check_header(const json_t *root, const char *what, nc_error *err) {
    const char *fmt = NULL;
    int ver = 0;
    if (!json_is_object(root)) return nc_fail(err, NC_ERR_FORMAT, "%s: not an object", what);
    NC_TRY(nc_json_str(root, "format", &fmt, 1, what, err));
    if (strcmp(fmt, LOWER_MANIFEST_FORMAT))
        return nc_fail(err, NC_ERR_FORMAT, "%s: format is '%s', not '%s'", what, fmt,
                       LOWER_MANIFEST_FORMAT);
    NC_TRY(lower_json_int_in(root, "format_version", 0, 1 << 20, &ver, what, err));
    if (ver != LOWER_MANIFEST_VERSION)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: format_version %d (this nectar reads %d)",
                       what, ver, LOWER_MANIFEST_VERSION);
    return NC_OK;
}

nc_status lower_json_int_in(const json_t *o, const char *key, int lo, int hi, int *out,
                            const char *what, nc_error *err) {
    int64_t v = 0;
    NC_TRY(nc_json_int(o, key, &v, 1, what, err));
    if (v < lo || v > hi)
        return nc_fail(err, NC_ERR_FORMAT, "%s: %s = %lld is not in [%d, %d]", what, key,
                       (long long)v, lo, hi);
    *out = (int)v;
    return NC_OK;
}

nc_status lower_json_str_into(const json_t *o, const char *key, char *buf, size_t cap,
                              const char *what, nc_error *err) {
    const char *s = NULL;
    NC_TRY(nc_json_str(o, key, &s, 1, what, err));
    if (strlen(s) >= cap) return nc_fail(err, NC_ERR_FORMAT, "%s: %s is too long", what, key);
    snprintf(buf, cap, "%s", s);
    return NC_OK;
}

const json_t *lower_json_member(const json_t *o, const char *key, int is_array, const char *what,
                                nc_error *err) {
    const json_t *v = json_object_get(o, key);
    if (!v || (is_array ? !json_is_array(v) : !json_is_object(v))) {
        nc_fail(err, NC_ERR_FORMAT, "%s: field '%s' must be %s", what, key,
                is_array ? "an array" : "an object");
        return NULL;
    }
    return v;
}

static nc_status read_io(const json_t *a, lower_io *io, int *n, int min_rank, int max_rank,
                         int64_t max_dim, const char *what, nc_error *err) {
    if (json_array_size(a) > LOWER_MAX_IO)
        return nc_fail(err, NC_ERR_FORMAT, "%s: too many I/O", what);
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *e = json_array_get(a, i);
        lower_io *x = &io[(*n)++];
        if (!json_is_object(e))
            return nc_fail(err, NC_ERR_FORMAT, "%s: I/O %zu is not an object", what, i);
        NC_TRY(lower_json_str_into(e, "name", x->name, sizeof x->name, what, err));
        NC_TRY(lower_json_str_into(e, "dtype", x->dtype, sizeof x->dtype, what, err));
        const json_t *sh = lower_json_member(e, "shape", 1, what, err);
        if (!sh) return err->code;
        size_t rank = json_array_size(sh);
        if (rank < (size_t)min_rank || rank > (size_t)max_rank) {
            if (min_rank == max_rank)
                return nc_fail(err, NC_ERR_FORMAT, "%s: %s must have rank %d", what, x->name,
                               min_rank);
            return nc_fail(err, NC_ERR_FORMAT, "%s: %s has rank %zu", what, x->name, rank);
        }
        x->rank = (int)rank;
        for (int d = 0; d < x->rank; d++) {
            const json_t *v = json_array_get(sh, (size_t)d);
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max_dim)
                return nc_fail(err, NC_ERR_FORMAT, "%s: %s has a bad dimension", what, x->name);
            x->shape[d] = json_integer_value(v);
        }
    }
    return NC_OK;
}

nc_status lower_json_read_fn_io(const json_t *fo, lower_fn_info *fi, int min_rank, int max_rank,
                                int64_t max_dim, const char *what, nc_error *err) {
    const json_t *in = lower_json_member(fo, "inputs", 1, what, err);
    const json_t *out = in ? lower_json_member(fo, "outputs", 1, what, err) : NULL;
    if (!in || !out) return err->code;
    NC_TRY(read_io(in, fi->in, &fi->n_in, min_rank, max_rank, max_dim, what, err));
    return read_io(out, fi->out, &fi->n_out, min_rank, max_rank, max_dim, what, err);
}

json_t *lower_json_child(json_t *parent, const char *key) {
    json_t *c = json_object_get(parent, key);
    if (!json_is_object(c)) {
        c = json_object();
        json_object_set_new(parent, key, c);
    }
    return c;
}
