/* The sampling parameter table (sampling_params.h). */
#include "gen/sampling_params.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

typedef struct row {
    gen_param p;
    size_t offset; /* its field in gen_sampler_params */
} row;

/* In GEN_SET_* order: a row's bit is 1 << its index. Ranges: the widest a
 * caller may ask for (the sampler takes any finite value; these keep typos
 * such as --temp 70 for 0.7 out), and OpenAI's for the server. */
#define ROW(field, ...)                                                                            \
    { {__VA_ARGS__}, offsetof(gen_sampler_params, field) }
static const row rows[GEN_N_PARAMS] = {
    ROW(temperature, .name = "temperature", .flag = "--temp", .meta = "T",
        .help = "temperature, 0 = greedy", .hf_key = "temperature", .lo = 0, .hi = 100, .off = 0,
        .serve_lo = 0, .serve_hi = 2, .set = 1u << 0),
    ROW(top_k, .name = "top_k", .flag = "--top-k", .meta = "K",
        .help = "keep the K most likely tokens, 0 = off", .hf_key = "top_k", .is_int = 1, .lo = 0,
        .hi = INT_MAX, .off = 0, .serve_lo = 0, .serve_hi = 1e9, .set = 1u << 1),
    ROW(top_p, .name = "top_p", .flag = "--top-p", .meta = "P",
        .help = "nucleus: smallest set with mass >= P, 1 = off", .hf_key = "top_p", .lo = 0,
        .hi = 1, .off = 1, .serve_lo = 0, .serve_hi = 1, .set = 1u << 2),
    ROW(min_p, .name = "min_p", .flag = "--min-p", .meta = "P",
        .help = "drop tokens below P x the top probability, 0 = off", .hf_key = "min_p", .lo = 0,
        .hi = 1, .off = 0, .serve_lo = 0, .serve_hi = 1, .set = 1u << 3),
    ROW(repeat_penalty, .name = "repeat_penalty", .flag = "--repeat-penalty", .meta = "R",
        .help = "divide positive / multiply negative logits of seen tokens, 1 = off",
        .hf_key = "repetition_penalty", .lo = 0, .hi = 100, .open_lo = 1, .off = 1,
        .serve_lo = 0.01, .serve_hi = 10, .set = 1u << 4),
    ROW(presence_penalty, .name = "presence_penalty", .flag = "--presence-penalty", .meta = "P",
        .help = "subtract P from the logit of every seen token, 0 = off", .hf_key = NULL,
        .lo = -100, .hi = 100, .off = 0, .serve_lo = -2, .serve_hi = 2, .set = 1u << 5),
    ROW(frequency_penalty, .name = "frequency_penalty", .flag = "--frequency-penalty", .meta = "F",
        .help = "subtract F x count from the logit of seen tokens, 0 = off", .hf_key = NULL,
        .lo = -100, .hi = 100, .off = 0, .serve_lo = -2, .serve_hi = 2, .set = 1u << 6),
};

const gen_param *gen_param_at(int i) {
    return i >= 0 && i < GEN_N_PARAMS ? &rows[i].p : NULL;
}

const gen_param *gen_param_named(const char *name) {
    for (int i = 0; i < GEN_N_PARAMS; i++)
        if (!strcmp(rows[i].p.name, name)) return &rows[i].p;
    return NULL;
}

nc_status gen_param_check(const gen_param *r, double v, const char *what, nc_error *err) {
    if (isfinite(v) && (r->open_lo ? v > r->lo : v >= r->lo) && v <= r->hi &&
        (!r->is_int || v == floor(v)))
        return NC_OK;
    return nc_fail(err, NC_ERR_INVALID, "%s: %g is not %s in %c%.15g, %.15g]", what, v,
                   r->is_int ? "a whole number" : "a number", r->open_lo ? '(' : '[', r->lo, r->hi);
}

static const row *row_of(const gen_param *r) {
    return (const row *)r; /* p is a row's first member */
}

void *gen_param_field(gen_sampler_params *p, const gen_param *r) {
    return (char *)p + row_of(r)->offset;
}

double gen_param_get(const gen_sampler_params *p, const gen_param *r) {
    const void *f = (const char *)p + row_of(r)->offset;
    return r->is_int ? (double)*(const int *)f : (double)*(const float *)f;
}

void gen_param_put(gen_sampler_params *p, const gen_param *r, double v) {
    void *f = gen_param_field(p, r);
    if (r->is_int)
        *(int *)f = (int)v;
    else
        *(float *)f = (float)v;
}
