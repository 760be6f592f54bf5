/* Bundling a .mil file into a fresh model folder (see bundle.h): find the
 * weight files, copy them under weights/, rewrite BLOBFILE paths, print,
 * then re-read and validate the result. */
#include "mil/bundle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mmap.h"
#include "mil/blob_cache.h"
#include "mil/parse.h"
#include "mil/print.h"
#include "mil/walk.h"

typedef struct {
    const mil_program *prog;
    nc_status st;
    nc_error *err;
    int n_refs;
    mil_bundle_report *rep;
    char (*orig)[1024]; /* BLOBFILE path strings as written, per report file */
} blob_ctx;

static void check_one(void *vctx, const mil_value *v, const mil_op *op) {
    blob_ctx *c = vctx;
    (void)op;
    if (v->kind != MIL_VALUE_BLOB || c->st != NC_OK) return;
    const uint8_t *bytes;
    size_t n;
    c->n_refs++;
    c->st = mil_value_bytes(c->prog, v, &bytes, &n, c->err);
}

nc_status mil_program_check_blobs(const mil_program *prog, int *n_refs, nc_error *err) {
    blob_ctx c = {.prog = prog, .st = NC_OK, .err = err};
    mil_program_visit_values(prog, check_one, &c);
    if (n_refs) *n_refs = c.n_refs;
    return c.st;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Records each distinct resolved blob file (by path string as written). */
static void collect(void *vctx, const mil_value *v, const mil_op *op) {
    blob_ctx *c = vctx;
    (void)op;
    if (v->kind != MIL_VALUE_BLOB || c->st != NC_OK) return;
    c->n_refs++;
    for (int i = 0; i < c->rep->n_files; i++)
        if (!strcmp(c->orig[i], v->blob_path)) return;
    char resolved[1024];
    c->st = mil_blob_resolve_path(c->prog, v->blob_path, resolved, sizeof resolved, c->err);
    if (c->st != NC_OK) return;
    /* two spellings of one file share one copy */
    for (int i = 0; i < c->rep->n_files; i++)
        if (!strcmp(c->rep->from[i], resolved)) {
            if (c->rep->n_files >= MIL_BUNDLE_MAX_FILES) break;
            /* keep a second spelling entry pointing at the same target */
            int k = c->rep->n_files++;
            snprintf(c->orig[k], 1024, "%s", v->blob_path);
            snprintf(c->rep->from[k], 1024, "%s", resolved);
            memcpy(c->rep->to[k], c->rep->to[i], sizeof c->rep->to[k]);
            return;
        }
    if (c->rep->n_files >= MIL_BUNDLE_MAX_FILES) {
        c->st = nc_fail(c->err, NC_ERR_RANGE, "more than %d weight files", MIL_BUNDLE_MAX_FILES);
        return;
    }
    int k = c->rep->n_files++;
    snprintf(c->orig[k], 1024, "%s", v->blob_path);
    snprintf(c->rep->from[k], 1024, "%s", resolved);
    /* the first file becomes weight.bin (coremltools' name); others keep theirs */
    if (k == 0)
        snprintf(c->rep->to[k], 64, "weight.bin");
    else
        snprintf(c->rep->to[k], 64, "%d_%.50s", k, base_name(resolved));
}

typedef struct {
    mil_program *prog;
    const mil_bundle_report *rep;
    char (*orig)[1024];
    int oom;
} rewrite_ctx;

static void rewrite(void *vctx, const mil_value *v, const mil_op *op) {
    rewrite_ctx *c = vctx;
    (void)op;
    if (v->kind != MIL_VALUE_BLOB) return;
    for (int i = 0; i < c->rep->n_files; i++)
        if (!strcmp(c->orig[i], v->blob_path)) {
            char p[128];
            snprintf(p, sizeof p, "@model_path/weights/%s", c->rep->to[i]);
            char *s = nc_arena_strdup(&c->prog->arena, p);
            if (!s)
                c->oom = 1;
            else
                ((mil_value *)v)->blob_path = s; /* the program is ours to edit */
            return;
        }
}

static void remove_bundle(const char *out_dir, const mil_bundle_report *rep) {
    char p[1200];
    for (int i = 0; i < rep->n_files; i++) {
        snprintf(p, sizeof p, "%s/weights/%s", out_dir, rep->to[i]);
        remove(p);
    }
    snprintf(p, sizeof p, "%s/model.mil", out_dir);
    remove(p);
    snprintf(p, sizeof p, "%s/weights", out_dir);
    rmdir(p);
    rmdir(out_dir);
}

static nc_status copy_file(const char *from, const char *to, nc_error *err) {
    nc_mapped_file m;
    NC_TRY(nc_map_file(from, &m, err));
    nc_status st = nc_write_file_atomic(to, m.data ? (const void *)m.data : "", m.size_bytes, err);
    nc_unmap_file(&m);
    return st;
}

nc_status mil_bundle(const char *mil_path, const char *out_dir, mil_bundle_report *rep,
                     nc_error *err) {
    memset(rep, 0, sizeof *rep);
    char(*orig)[1024] = calloc(MIL_BUNDLE_MAX_FILES, sizeof *orig);
    if (!orig) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    mil_program *prog;
    nc_status st = mil_parse_file(mil_path, &prog, err);
    if (st != NC_OK) {
        free(orig);
        return st;
    }
    blob_ctx c = {.prog = prog, .st = NC_OK, .err = err, .rep = rep, .orig = orig};
    mil_program_visit_values(prog, collect, &c);
    st = c.st;
    for (int i = 0; st == NC_OK && i < rep->n_files; i++) { /* the weights must exist and be v2 */
        mil_blob_file f;
        st = mil_blob_open(rep->from[i], &f, err);
        if (st == NC_OK) mil_blob_close(&f);
    }
    if (st != NC_OK) {
        mil_program_free(prog);
        free(orig);
        return st;
    }
    struct stat sb;
    if (stat(out_dir, &sb) == 0) {
        mil_program_free(prog);
        free(orig);
        return nc_fail(err, NC_ERR_INVALID, "%s: already exists (bundle writes a fresh folder)",
                       out_dir);
    }
    char p[1200];
    snprintf(p, sizeof p, "%s/weights", out_dir);
    if (mkdir(out_dir, 0777) != 0 || mkdir(p, 0777) != 0) {
        st = nc_fail(err, NC_ERR_IO, "%s: cannot create folder: %s", out_dir, strerror(errno));
        rmdir(out_dir);
        mil_program_free(prog);
        free(orig);
        return st;
    }
    for (int i = 0; st == NC_OK && i < rep->n_files; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= !strcmp(rep->to[j], rep->to[i]);
        if (dup) continue;
        snprintf(p, sizeof p, "%s/weights/%s", out_dir, rep->to[i]);
        st = copy_file(rep->from[i], p, err);
    }
    rewrite_ctx rc = {.prog = prog, .rep = rep, .orig = orig};
    if (st == NC_OK) {
        mil_program_visit_values(prog, rewrite, &rc);
        if (rc.oom) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    snprintf(p, sizeof p, "%s/model.mil", out_dir);
    if (st == NC_OK) st = mil_print_file(prog, p, err);
    mil_program_free(prog);
    if (st == NC_OK) { /* read back what we wrote, as the compiler will */
        mil_program *back;
        st = mil_parse_file(p, &back, err);
        if (st == NC_OK) {
            st = mil_program_check_blobs(back, &rep->n_blob_refs, err);
            mil_program_free(back);
        }
    }
    if (st != NC_OK) remove_bundle(out_dir, rep);
    free(orig);
    return st;
}
