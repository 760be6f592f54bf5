/* The MIL interpreter: runs one function of a parsed program on the CPU with
 * the ANE's numerics (fp16 mode: every op's fp16 result rounded once,
 * accumulation inside an op in fp32) or plain fp32 for debugging. See
 * docs/mil-interpreter.md for the model of the hardware.
 *
 * Prepare once, run many times: mil_interp_new resolves every op, loads and
 * decompresses the weights (const, BLOBFILE, constexpr_*) and folds ops whose
 * inputs are all constant. mil_interp_run then only computes; buffers are
 * kept between runs, so a run with the same input shapes allocates nothing.
 * State inputs (state<tensor<...>>) keep their value across runs. */
#ifndef NC_MIL_INTERP_H
#define NC_MIL_INTERP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/pool.h"
#include "mil/ir.h"

typedef enum mil_interp_mode {
    MIL_INTERP_FP16, /* the ANE model: fp16 results, fp32 accumulation */
    MIL_INTERP_FP32  /* fp16 tensors held and computed as fp32: for debugging */
} mil_interp_mode;

typedef struct mil_interp mil_interp;

/* A view of a tensor inside the interpreter, valid until the next run or
 * set_input. Float tensors are held as float (fp16-exact values in fp16
 * mode), int and bool tensors as int32. */
typedef struct mil_interp_view {
    mil_dtype dtype; /* the declared dtype (fp16, fp32, int32, bool, ...) */
    int rank;
    int64_t shape[8];
    size_t count;
    const float *f32;   /* float dtypes, else NULL */
    const int32_t *i32; /* integer and bool dtypes, else NULL */
} mil_interp_view;

/* Prepares function `fn_name` (NULL: "main", or the only function) of prog.
 * prog must outlive the interpreter; its model_dir locates weight files.
 * Preparing reads weights through the program's caches, so interpreters of
 * one program are prepared from one thread at a time; once prepared, each
 * interpreter may run on its own thread. */
nc_status mil_interp_new(const mil_program *prog, const char *fn_name, mil_interp_mode mode,
                         mil_interp **out, nc_error *err);
/* Same, refusing (NC_ERR_RANGE, naming the op) any tensor of more than
 * max_elements elements (0: no limit): for untrusted programs and fuzzing. */
nc_status mil_interp_new_limited(const mil_program *prog, const char *fn_name,
                                 mil_interp_mode mode, size_t max_elements, mil_interp **out,
                                 nc_error *err);
void mil_interp_free(mil_interp *it);

/* Binds input (or initial state) `name`. `dtype` says how `data` is stored:
 * MIL_DT_FP16 (uint16 bit patterns), FP32, FP64, INT8/16/32/64, UINT8/16/32,
 * BOOL (one byte each). The declared type decides the conversion; shapes
 * must match its known dimensions. The data is copied. */
nc_status mil_interp_set_input(mil_interp *it, const char *name, mil_dtype dtype, int rank,
                               const int64_t *shape, const void *data, nc_error *err);

/* Runs the function once. Every non-state input must have been bound. */
nc_status mil_interp_run(mil_interp *it, nc_error *err);

/* A function output (or an input/state, or any named variable) by name. */
nc_status mil_interp_get(const mil_interp *it, const char *name, mil_interp_view *out,
                         nc_error *err);

/* Copies variable `name` into dst converted to `dtype` (FP16 bit patterns,
 * FP32, INT32 or BOOL bytes); dst holds max_count elements. */
nc_status mil_interp_copy_out(const mil_interp *it, const char *name, mil_dtype dtype, void *dst,
                              size_t max_count, nc_error *err);

/* Lets matmul, linear and conv split their work over `pool` (owned by the
 * caller, shared by any number of interpreters; NULL: serial, the default).
 * Results are identical either way: each output element is summed by one
 * thread in the same order. Runs of interpreters sharing a pool must not
 * overlap (nc_pool_for is not re-entrant). */
void mil_interp_set_pool(mil_interp *it, nc_pool *pool);

/* After each op of a run, writes one line per output to f (NULL: off):
 * "file:line: op 'name' -> var [shape] min .. max, N inf, N nan" -- where an
 * fp16 overflow first appears. */
void mil_interp_set_trace(mil_interp *it, FILE *f);

const mil_function *mil_interp_function(const mil_interp *it);
mil_interp_mode mil_interp_get_mode(const mil_interp *it);

/* .npy exchange (interp_npy.c), for `nectar mil run` and tests: binds an
 * input from an array, and writes a variable as .npy in its declared dtype
 * (fp16, fp32, int32 or bool; fp16 tensors as fp32 in fp32 mode, unrounded). */
struct nc_npy;
nc_status mil_interp_set_input_npy(mil_interp *it, const char *name, const struct nc_npy *a,
                                   nc_error *err);
nc_status mil_interp_write_npy(const mil_interp *it, const char *name, const char *path,
                               nc_error *err);

#endif
