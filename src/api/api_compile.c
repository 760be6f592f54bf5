/* nc_compile: a folder of a family that has a lowering (models/family.h:
 * Qwen3, Qwen3.5, ModernBERT) to an ANE bundle, with the options of
 * `nectar compile` as "key=value" strings. */
#include <stdlib.h>
#include <string.h>

#include "api/api_options.h"
#include "decide/decision_lower.h"
#include "models/family.h"
#include "lower/modernbert_compile.h"
#include "lower/qwen3_compile.h"
#include "nectar.h"

/* "32,64,128" into out[max]: each in [lo, hi]. */
static nc_status int_list(const char *const *options, const char *key, int lo, int hi, int max,
                          int *out, int *n, nc_error *err) {
    const char *v = api_opt_get(options, key);
    if (!v) return NC_OK;
    *n = 0;
    for (const char *p = v;;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x < lo || x > hi || (*end && *end != ',') || *n == max)
            return nc_fail(err, NC_ERR_INVALID,
                           "nc_compile: option %s=%s: not up to %d integers in [%d, %d]", key, v,
                           max, lo, hi);
        out[(*n)++] = (int)x;
        if (!*end) return NC_OK;
        p = end + 1;
    }
}

static nc_status compile_encoder(const char *model_dir, const char *out_dir,
                                 const char *const *options, nc_error *err) {
    static const char *const keys[] = {"threads", "seqs", "batches", NULL};
    mb_compile_options o;
    memset(&o, 0, sizeof o);
    o.model_dir = model_dir;
    o.out_dir = out_dir;
    NC_TRY(api_opt_check(options, keys, "nc_compile (encoder)", err));
    NC_TRY(api_opt_int(options, "threads", 0, 4096, &o.n_threads, "nc_compile", err));
    NC_TRY(int_list(options, "seqs", 32, 1 << 16, MB_LOWER_MAX_SHAPES, o.seqs, &o.n_seqs, err));
    NC_TRY(
        int_list(options, "batches", 1, 1024, MB_LOWER_MAX_SHAPES, o.batches, &o.n_batches, err));
    mb_compile_report r;
    /* a decision folder (encoder + decision.json): the region grows the head */
    return decision_is_dir(model_dir) ? decision_compile(&o, &r, err)
                                      : lower_modernbert_compile(&o, &r, err);
}

NC_API nc_status nc_compile(const char *model_dir, const char *out_dir, const char *const *options,
                            nc_error *err) {
    if (!model_dir || !out_dir) return nc_fail(err, NC_ERR_INVALID, "nc_compile: NULL argument");
    const model_family_row *f;
    NC_TRY(model_family_of_dir(model_dir, &f, err));
    if (!f->compiles)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "nc_compile: %s: %s models have no ANE lowering yet (run them on the cpu "
                       "backend)",
                       model_dir, f->title);
    if (f->is_encoder) return compile_encoder(model_dir, out_dir, options, err);
    static const char *const keys[] = {"threads", "ctx", "buckets", "lm_head", NULL};
    lower_compile_options o;
    memset(&o, 0, sizeof o);
    o.model_dir = model_dir;
    o.out_dir = out_dir;
    NC_TRY(api_opt_check(options, keys, "nc_compile", err));
    NC_TRY(api_opt_int(options, "threads", 0, 4096, &o.n_threads, "nc_compile", err));
    NC_TRY(api_opt_int(options, "ctx", 32, 1 << 20, &o.ctx, "nc_compile", err));
    NC_TRY(int_list(options, "buckets", 32, 1 << 20, LOWER_MAX_BUCKETS, o.seqs, &o.n_seqs, err));
    const char *head = api_opt_get(options, "lm_head");
    if (head && strcmp(head, "ane") && strcmp(head, "cpu"))
        return nc_fail(err, NC_ERR_INVALID, "nc_compile: option lm_head=%s is not ane or cpu",
                       head);
    o.lm_head_on_cpu = head && !strcmp(head, "cpu");
    lower_compile_report r;
    return lower_qwen3_compile(&o, &r, err);
}
