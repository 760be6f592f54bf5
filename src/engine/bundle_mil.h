/* The MIL-interpreter side of a lowered decoder bundle (the mil engine of
 * every decoder family): the manifest's programs parsed once, one fp16 interpreter
 * per function (prepared on first use), and a function run as a dataflow
 * over named buffers: an input is bound from the buffer of its name; an
 * output NAME_out is copied into buffer NAME (the host's x, a cache or a
 * recurrent state), any other output becomes a buffer for the functions
 * after it (q, gate, ...). The engine binds its sequence's buffers. */
#ifndef NC_ENGINE_BUNDLE_MIL_H
#define NC_ENGINE_BUNDLE_MIL_H

#include "engine/decoder_bundle_host.h"
#include "mil/interp.h"

#define BM_MAX_NAMED 48

typedef struct bm_named {
    const char *name;
    const float *data;
    size_t count;
    float *owned_dst; /* where NAME_out is copied (host / cache buffers), or NULL */
} bm_named;

/* A name -> values table for one layer's dataflow. */
typedef struct bm_env {
    bm_named v[BM_MAX_NAMED];
    int n;
} bm_env;

void bm_env_put(bm_env *e, const char *name, const float *data, size_t count, float *dst);

typedef struct bm_model {
    db_host h;
    int L;
    mil_program **progs;    /* per manifest program */
    int *layer_prog;        /* layer -> its (last) program's index */
    int head_prog;          /* the first head program; -1: head on the CPU */
    mil_interp ***its;      /* [program][function], prepared on first use */
    engine_layer_hook hook; /* per-layer states (--dump-layers), or NULL */
    void *hook_user;
} bm_model;

/* engine_ops.set_layer_hook of an engine whose impl starts with a bm_model. */
void bm_set_layer_hook(engine *e, engine_layer_hook hook, void *user);

/* Opens the host side (db_host_open) and parses every program. On failure
 * the caller still calls bm_free. */
nc_status bm_open(bm_model *m, const char *dir, const model_family_row *family, int n_threads,
                  nc_error *err);
void bm_free(bm_model *m);

/* Runs function fn of program prog over env: inputs by name, outputs back. */
nc_status bm_run_fn(bm_model *m, int prog, int fn, bm_env *env, nc_error *err);
/* The same for the function named `name` (missing: one line naming it). */
nc_status bm_run_named(bm_model *m, int prog, const char *name, bm_env *env, nc_error *err);
/* Every function for bucket S of every program of layer l (one, or one
 * per kernel or function under a program split), in manifest order. */
nc_status bm_run_layer(bm_model *m, int l, int S, bm_env *env, nc_error *err);

/* Logits of column col of the host's x [D][S]: the head program, or the
 * CPU head when the bundle leaves it to the CPU. */
nc_status bm_head(bm_model *m, int col, int S, float *logits, nc_error *err);

#endif
