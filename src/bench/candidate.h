/* A candidate of `nectar bench --compare`: something that takes one workload
 * item and makes one decision. The harness only sees three calls (load, run
 * one decision, unload), so an external command, a builtin calibration load
 * and an in-process nectar backend are measured the same way.
 *
 * Specs (docs/measuring.md):
 *   cmd:SHELL    `sh -c SHELL` once per decision, the item on its stdin;
 *                exit status 0 = completed decision.
 *   pipe:SHELL   one persistent `sh -c SHELL` process: it prints one line
 *                when loaded, then answers each request line (the item,
 *                with \\ and newline escaped as \\\\ and \\n) with one line;
 *                an answer starting with "error" is a failed decision.
 *   spin:N       builtin: N rounds of an integer hash (calibration, tests).
 *   cpu:DIR      nectar's Qwen3 cpu engine: tokenize the item, prefill it
 *                from an empty cache and pick the argmax next token.
 *   mil:BUNDLE   one MIL program (.mil file or bundle folder) on the MIL
 *                interpreter (fp16); inputs bound to a fixed pattern.
 *   decide:BACKEND:PATH  a decision model (docs/decision.md): cpu:DIR,
 *                mil:BUNDLE, ane:BUNDLE (the real device) or
 *                ane-fake:BUNDLE; a decision = the item's lines as one
 *                padded batch (the study's L = 64 or 96: the smaller
 *                that holds every row) and each row's most likely action. */
#ifndef NC_BENCH_CANDIDATE_H
#define NC_BENCH_CANDIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct nc_bench_item {
    const char *data;
    size_t len;
} nc_bench_item;

/* The workload: items fed round-robin to both candidates in the same order. */
typedef struct nc_bench_workload {
    nc_bench_item *items;
    size_t n_items;
    char kind[16]; /* "prompts", "input", "snake" or "none" */
    char path[1024];
    char sha256[65]; /* of the file's bytes (of "" for none) */
    char *storage;
} nc_bench_workload;

/* --prompts FILE: one item per non-empty line. --input FILE: the whole file
 * is one item. path NULL: one empty item. */
nc_status nc_workload_load(const char *kind, const char *path, nc_bench_workload *out,
                           nc_error *err);
void nc_workload_free(nc_bench_workload *w);
/* --snake N: the teacher plays N games (seeds seed .. seed + N - 1) three
 * lanes at a time; one item per tick holding the lanes' texts, one a line
 * (src/bench/workload_snake.c). */
nc_status nc_workload_snake(int games, uint64_t seed, nc_bench_workload *out, nc_error *err);

typedef struct nc_candidate nc_candidate;

typedef struct nc_candidate_ops {
    nc_status (*load)(nc_candidate *c, nc_error *err);
    /* Untimed set-up for the next decision (may be NULL): e.g. writing the
     * item where a command will read it. */
    nc_status (*prepare)(nc_candidate *c, const nc_bench_item *item, nc_error *err);
    nc_status (*run)(nc_candidate *c, const nc_bench_item *item, nc_error *err);
    void (*unload)(nc_candidate *c);
} nc_candidate_ops;

struct nc_candidate {
    const nc_candidate_ops *ops;
    char kind[16];         /* "cmd", "pipe", "spin", "cpu", "mil", "decide" */
    char spec[2048];       /* as given */
    char model_path[1024]; /* hashed into model_sha256 when set */
    char model_sha256[65]; /* "" when there is no model to hash */
    double timeout_s;      /* per decision */
    void *impl;
};

/* Parses the spec; nothing is started until load. */
nc_status nc_candidate_open(const char *spec, double timeout_s, nc_candidate **out, nc_error *err);
/* Records (and hashes) the model the candidate runs. */
nc_status nc_candidate_set_model(nc_candidate *c, const char *path, nc_error *err);
void nc_candidate_close(nc_candidate *c);

/* Per-kind constructors (candidate_*.c). */
nc_status nc_candidate_cmd_init(nc_candidate *c, const char *shell, int is_persistent,
                                nc_error *err);
nc_status nc_candidate_spin_init(nc_candidate *c, const char *arg, nc_error *err);
nc_status nc_candidate_nectar_init(nc_candidate *c, const char *kind, const char *arg,
                                   nc_error *err);
nc_status nc_candidate_decide_init(nc_candidate *c, const char *arg, nc_error *err);

/* The builtin work unit of spin:N (exposed so tests can burn the same). */
unsigned long long nc_spin(unsigned long long rounds);

#endif
