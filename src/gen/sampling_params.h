/* The sampling parameters, one row each: the name the API and the server
 * take ("temperature"), the command-line flag ("--temp"), the key of
 * generation_config.json that gives its model default ("temperature",
 * "repetition_penalty"), its range and neutral value, and the server's
 * OpenAI range where it is narrower. nc_sampling_set, the command line,
 * gen_sampling_from_folder and the server all read this table, so a
 * parameter's name and range are defined here once, and an out-of-range
 * value is refused in one wording: "WHAT: VALUE is not in [LO, HI]". */
#ifndef NC_GEN_SAMPLING_PARAMS_H
#define NC_GEN_SAMPLING_PARAMS_H

#include "base/error.h"
#include "gen/sampler.h"

typedef struct gen_param {
    const char *name;          /* the API's and the server's */
    const char *flag;          /* the command line's */
    const char *meta;          /* its value in the help: "T" */
    const char *help;          /* what it does */
    const char *hf_key;        /* generation_config.json's key, or NULL: none */
    int is_int;                /* a whole number (an int field), else a float field */
    double lo, hi;             /* the range */
    int open_lo;               /* lo itself excluded (repeat_penalty > 0) */
    double off;                /* the value that turns it off (gen_sampler_defaults_greedy) */
    double serve_lo, serve_hi; /* the server's (OpenAI's) range */
    unsigned set;              /* its GEN_SET_* bit (gen/model.h): 1 << its row */
} gen_param;

#define GEN_N_PARAMS 7

/* The i-th row (0, 1, ...), NULL past the last. */
const gen_param *gen_param_at(int i);
/* The row named `name` ("temperature"), or NULL. */
const gen_param *gen_param_named(const char *name);

/* NC_OK when v is finite, in the row's range and whole for an integer;
 * else one line "WHAT: V is not a number in [LO, HI]" ("a whole number"
 * for an integer). The server checks its own range in OpenAI's wording
 * ("'temperature' must be between 0 and 2"). */
nc_status gen_param_check(const gen_param *r, double v, const char *what, nc_error *err);

/* The parameter's field of p. */
double gen_param_get(const gen_sampler_params *p, const gen_param *r);
void gen_param_put(gen_sampler_params *p, const gen_param *r, double v);
/* Its field's address in p (a float, or an int for is_int): the command
 * line's parser writes there. */
void *gen_param_field(gen_sampler_params *p, const gen_param *r);

#endif
