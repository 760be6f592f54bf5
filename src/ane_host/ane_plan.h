/* The request plan of one token (or one chunk of a prompt) through a
 * lowered Qwen3 bundle (docs/lowering.md): which program and function runs
 * in which order, and which named buffer (one IOSurface) each of its I/O
 * is bound to. Per layer: the functions its program holds for the bucket,
 * in manifest order (qkv -> kv -> attn -> mlp, or the fused variants of
 * `nectar compile --kernels-per-layer`); then, with the LM head on the ANE,
 * a host step that moves the last token's column of the last layer's x
 * into column 0 of the head's input, and the head.
 *
 * Aliasing, so that no request reads and writes one surface and the host
 * copies nothing between kernels:
 *   x@S -> attn -> x2@S -> mlp -> x@S      (two activation buffers; an
 *                                           x_out always writes the other)
 *   k_cache.L.a -> kv -> k_cache.L.b       (KV ping-pong, per layer;
 *   attn reads the new one)                 the parity flips every token)
 * With parity 1 the roles of .a and .b swap. A failed token leaves the
 * current cache untouched, since only the other buffer was written.
 * q, k_new, v_new of a bucket are shared by all layers (they are consumed
 * within the layer); the caches and kv_write by all buckets.
 *
 * A Qwen3.5 linear-attention layer's program (docs/qwen35.md) holds
 * functions with recurrent-state I/O (conv_state, delta_state: ping-pong
 * per layer like the KV cache, with the same parity) besides its per-bucket
 * ones: its mixer runs first, on its own x pair (xs@sN -> xs2@sN, N the
 * function's width), between two host steps that gather the chunk's
 * columns of x into order from column 0 and scatter them back; then the
 * bucket's other functions (mlp) on x. A plan has one of two forms: the
 * chunk form runs the mixer that takes `valid` (a prefill over the bucket,
 * whatever its internal form), the token form the one that does not (one
 * token in column 0: decoding). A bundle without state functions has the
 * chunk form only. Functions are told apart by their I/O names alone.
 *
 * An encoder bundle (docs/encoders-ane.md) has no cache and one function
 * per (batch, bucket): its plan is that one request, each I/O bound to a
 * buffer of its own shape ("x@b3s64"). */
#ifndef NC_ANE_HOST_ANE_PLAN_H
#define NC_ANE_HOST_ANE_PLAN_H

#include "ane_host/ane_attrs.h"
#include "ane_host/ane_device.h"
#include "bundle/manifest.h"

typedef enum ane_step_kind {
    ANE_STEP_KERNEL,      /* one request: a function of a program */
    ANE_STEP_HEAD_COLUMN, /* host: last token's column of x -> column 0 of head_x */
    ANE_STEP_GATHER,      /* host: the chunk's n columns from p mod S -> columns 0..n-1 */
    ANE_STEP_SCATTER,     /* host: columns 0..n-1 -> the chunk's columns (the rest kept) */
    ANE_STEP_KV           /* host (--kv-update host): the chunk's columns of k_new / v_new
                             (p mod S on) -> cache columns p.. */
} ane_step_kind;

typedef enum ane_plan_form {
    ANE_FORM_CHUNK, /* the bucket's functions (a Qwen3.5 mixer: the one taking `valid`) */
    ANE_FORM_TOKEN  /* a Qwen3.5 mixer: the one-token function */
} ane_plan_form;

typedef struct ane_plan_buf {
    char name[ANE_NAME_MAX]; /* "x@s32", "k_cache.3.a", "logits_0" */
    int rank;
    int64_t shape[4];
    char dtype[8];
} ane_plan_buf;

typedef struct ane_plan_io {
    char name[ANE_NAME_MAX]; /* the function's I/O name */
    int buf;                 /* index into bufs */
} ane_plan_io;

typedef struct ane_plan_step {
    ane_step_kind kind;
    int program; /* manifest program index (-1 for host steps) */
    int layer;   /* -1 for the head */
    char fn[ANE_NAME_MAX];
    int n_in, n_out;
    ane_plan_io in[LOWER_MAX_IO], out[LOWER_MAX_IO];
} ane_plan_step;

typedef struct ane_plan {
    int batch, seq, parity; /* batch: 1 for Qwen3 plans */
    ane_plan_form form;
    int x_final; /* the buffer holding the last layer's activation (x@S or x2@S) */
    int n_bufs, n_steps, n_requests;
    ane_plan_buf *bufs;
    ane_plan_step *steps;
} ane_plan;

/* The plan for bucket `seq` (one of the manifest's), form and KV parity
 * 0/1 of a Qwen3 or Qwen3.5 bundle. */
nc_status ane_plan_qwen3(const lower_manifest *m, int seq, ane_plan_form form, int parity,
                         ane_plan *out, nc_error *err);
/* The forms a bundle's plans take: 2 when a program has state functions
 * (Qwen3.5), else 1 (the chunk form). */
int ane_plan_n_forms(const lower_manifest *m);
/* The plan of an encoder program's function (batch, seq); x_final is its
 * output `hidden`. */
nc_status ane_plan_encoder(const lower_program_info *prog, int batch, int seq, ane_plan *out,
                           nc_error *err);
void ane_plan_free(ane_plan *p);
/* 1 for a buffer carried from token to token (a KV cache or recurrent
 * state: "k_cache.3.a", "delta_state.0.b"), which a new sequence zeroes. */
int ane_plan_is_carried(const char *buf);
/* The buffer of I/O `io` private to a plan's shape: "io@s<seq>" (batch 1),
 * "io@b<batch>s<seq>" otherwise. */
void ane_plan_buf_name(char *buf, size_t cap, const char *io, int batch, int seq);
/* Index of buffer `name`, or -1. */
int ane_plan_find_buf(const ane_plan *p, const char *name);

/* Dataflow facts, checked: no step reads a buffer it writes; every buffer
 * read is either written by an earlier step or is an entry (written by the
 * host or carried over from the previous token). entries[i] is set to 1
 * for the entry buffers (n_bufs entries). */
nc_status ane_plan_entries(const ane_plan *p, int *entries, nc_error *err);

/* The allocation size of every buffer of a set of plans (all buckets and
 * parities of a bundle) under a surface policy: at least its 64-byte-row
 * layout (ane_layout_for) and policy->min_bytes; with policy->uniform,
 * every buffer that shares a request with another (transitively: the
 * connected groups of the "same request" relation, across all plans,
 * buffers matched by name) gets the largest size of its group, so that the
 * surfaces of every request have one allocation size. */
typedef struct ane_surface_sizes {
    int n;
    char (*names)[ANE_NAME_MAX];
    size_t *bytes;
} ane_surface_sizes;

nc_status ane_plan_surface_sizes(const ane_plan *const *plans, int n_plans,
                                 const ane_surface_policy *policy, ane_surface_sizes *out,
                                 nc_error *err);
/* The same where the device's bindings may need more than the packed
 * layout (a RowStride wider than the rule): bound(user, step, io name,
 * is_output) gives the bytes a kernel step's binding needs (0: none). */
typedef size_t (*ane_bound_bytes_fn)(void *user, const ane_plan_step *step, const char *io,
                                     int is_output);
nc_status ane_plan_surface_sizes_bound(const ane_plan *const *plans, int n_plans,
                                       const ane_surface_policy *policy, ane_bound_bytes_fn bound,
                                       void *user, ane_surface_sizes *out, nc_error *err);
/* The size to allocate for buffer `name` whose layout needs `need` bytes:
 * max(need, its planned size); need alone for a name not planned. */
size_t ane_surface_size(const ane_surface_sizes *s, const char *name, size_t need);
void ane_surface_sizes_free(ane_surface_sizes *s);

#endif
