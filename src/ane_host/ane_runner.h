/* Runs a lowered Qwen3 or encoder bundle through an ane_device: opens
 * every program on the device once (ane_bundle), binds each function's I/O
 * by name through the model's modelAttributes (ane_bind.h); a runner
 * creates one surface per plan buffer (ane_plan.h) and builds every request
 * once, for each shape and KV parity. A token (or prompt chunk, or batch
 * of encoder inputs) is then: the host writes its inputs (ane_runner_write
 * pads them into the surfaces), ane_runner_run issues
 * the plan's requests -- synchronously, or submitted back to back and
 * waited for once -- and the host reads the outputs (unpadded).
 *
 * The host-side values (embedding rows, RoPE tables, masks, kv_write: see
 * docs/lowering.md) are the caller's; this layer only moves buffers. */
#ifndef NC_ANE_HOST_ANE_RUNNER_H
#define NC_ANE_HOST_ANE_RUNNER_H

#include <stdio.h>

#include "ane_host/ane_device.h"
#include "ane_host/ane_plan.h"
#include "bundle/manifest.h"

typedef struct ane_bundle ane_bundle;
typedef struct ane_runner ane_runner;

typedef enum ane_run_mode {
    ANE_RUN_SYNC,        /* evaluate each request and wait for it (the default) */
    ANE_RUN_ASYNC,       /* submit back to back, at most max_in_flight outstanding,
                            waiting whenever the next request is another model's
                            (no ordering across models without events) */
    ANE_RUN_ASYNC_EVENTS /* submit every request chained on one shared event
                            (wait n, signal n + 1), at most max_in_flight */
} ane_run_mode;

/* A bundle loaded on a device, shared by every runner on it (as the ANE
 * compiles and loads a model once): its programs opened and bound by name,
 * the plans of every shape and KV parity, the surface sizes. A Qwen3 bundle
 * (bundle/manifest.h) or an encoder bundle (bundle/modernbert_manifest.h),
 * told apart by its manifest. dev must outlive it. */
nc_status ane_bundle_open(const ane_device *dev, const char *bundle_dir, ane_bundle **out,
                          nc_error *err);
void ane_bundle_free(ane_bundle *b);

/* A program the device refuses (to compile, load, or describe so that the
 * host can bind it) does not fail the bundle: its functions run on the CPU
 * -- the MIL interpreter on the same program, in fp16 -- between the
 * device's requests, on the same surfaces. 1 when program i does (why:
 * the device's refusal), else 0. */
int ane_bundle_on_cpu(const ane_bundle *b, int program, const char **why);
/* Where the kernels run, one line: "layers 0-4: 60/60 kernels on the ANE;
 * head: 0/1 kernels on the ANE, 1 on the CPU (head/model.mil refused:
 * ...)". */
void ane_bundle_placement(const ane_bundle *b, char *buf, size_t cap);

/* The whole-layer CPU fallback (docs/engine.md, "A refused layer on the
 * CPU engine's kernels"). A layer with any function the device refused at
 * every rung of the ladder: 1 (why: the refusal), else 0. */
int ane_bundle_layer_on_cpu(const ane_bundle *b, int layer, const char **why);
/* on: the caller runs those layers whole on its own kernels
 * (ane_runner_set_cpu_layer on every runner of b); the placement names
 * them so. */
void ane_bundle_set_cpu_layers(ane_bundle *b, int on);

/* A runner: one set of surfaces (a Qwen3 sequence's KV cache lives in
 * them) and the requests prebuilt over them, on a loaded bundle that must
 * outlive it. Opens nothing on the device. */
nc_status ane_runner_new(ane_bundle *b, ane_runner **out, nc_error *err);
/* A runner with a bundle of its own (freed with it). */
nc_status ane_runner_open(const ane_device *dev, const char *bundle_dir, ane_runner **out,
                          nc_error *err);
void ane_runner_free(ane_runner *r);
/* The Qwen3 manifest; NULL for an encoder bundle. */
const lower_manifest *ane_runner_manifest(const ane_runner *r);

/* Shapes: a Qwen3 bundle's plans are its buckets (batch 1); an encoder
 * bundle's, its (batch, bucket) functions. */

/* The plan used for shape (batch, seq) at the current KV parity. */
const ane_plan *ane_runner_plan(const ane_runner *r, int batch, int seq);

/* Buffer `name` of shape (batch, seq) ("x", "rope_cos", "attn_mask",
 * "kv_write", "logits_0", "mask_global", ...: the shape's own buffer
 * (ane_plan_buf_name) is tried first, then the bare name), written from /
 * read into count dense fp32 values. Reading "x" gives the last layer's
 * activation (ane_plan.x_final), wherever the kernels left it. */
nc_status ane_runner_write(ane_runner *r, int batch, int seq, const char *name, const float *data,
                           size_t count, nc_error *err);
nc_status ane_runner_read(ane_runner *r, int batch, int seq, const char *name, float *data,
                          size_t count, nc_error *err);
/* 1 when shape (batch, seq) has buffer `name` (an encoder function without
 * mask_local). */
int ane_runner_has(const ane_runner *r, int batch, int seq, const char *name);

/* Column col of every row of buffer `name` of Qwen3 bucket seq (count =
 * its rows): the logits of one token out of the head's 32-wide outputs. */
nc_status ane_runner_read_column(ane_runner *r, int seq, const char *name, int col, float *data,
                                 size_t count, nc_error *err);

/* Runs the plan of shape (batch, seq); head_col is the column of the token
 * whose logits are wanted (-1: skip the head). On success a Qwen3 bundle's
 * KV parity flips; on failure it does not, so the cache is as before the
 * call. */
nc_status ane_runner_run(ane_runner *r, int batch, int seq, int head_col, ane_run_mode mode,
                         nc_error *err);

/* The same for a chunk of n tokens of a Qwen3 or Qwen3.5 bundle at
 * position p (in columns p mod seq ...: engine/decoder_bundle_host.h): a Qwen3.5
 * linear layer runs its one-token mixer for n == 1, else its chunk mixer,
 * on the chunk's columns gathered into order (ane_plan.h). */
nc_status ane_runner_run_chunk(ane_runner *r, int seq, int n, int p, int head_col,
                               ane_run_mode mode, nc_error *err);

/* Zeroes the KV caches and recurrent states and resets the parity (a new
 * sequence). */
nc_status ane_runner_reset(ane_runner *r, nc_error *err);

long ane_runner_requests_issued(const ane_runner *r);

/* The caller's CPU half of a partition: layer `layer` over rows [n][hidden]
 * fp32 in place, for a chunk of n tokens at position p (the layer's input
 * in, its output out). */
typedef nc_status (*ane_cpu_layer_fn)(void *user, int layer, float *rows, int n, int p,
                                      nc_error *err);
/* With fn set, a Qwen3 or Qwen3.5 bundle's layer that ane_bundle_layer_on_cpu
 * names runs as one host step instead of its kernels: after the device's
 * earlier requests, the layer's x surface unpadded into rows, fn, and the
 * rows padded (fp16) into the surface the layer's last kernel would write;
 * its caches and states on the surfaces stay unused (fn keeps its own).
 * NULL: its refused kernels run in the MIL interpreter (cpu_kernel). */
void ane_runner_set_cpu_layer(ane_runner *r, ane_cpu_layer_fn fn, void *user);

/* Diagnostics for a first run on new hardware: the modelAttributes JSON the
 * device reported for manifest program i (owned by the device model), and
 * every function's binding (procedure id; per I/O: symbol, rows x width,
 * row bytes) written to f. */
nc_status ane_runner_model_attrs(const ane_runner *r, int program, const char **json, size_t *len,
                                 nc_error *err);
void ane_runner_describe(const ane_runner *r, FILE *f);

#endif
