/* The host side of an encoder bundle (nectar compile of a ModernBERT
 * folder): the CPU engine of the checkpoint the bundle names runs the
 * embedding rows + embedding LayerNorm before the island and pooling and
 * heads after it; the island (every encoder layer and the final norm) is
 * one function per (batch, bucket), run by the MIL interpreter in fp16 mode
 * (the mil backend, the numerics the ANE is asked for) unless another
 * runner is set (the ANE engine sets the ane_host runner). Same I/O
 * contract as modernbert_forward. */
#ifndef NC_ENGINE_MODERNBERT_BUNDLE_HOST_H
#define NC_ENGINE_MODERNBERT_BUNDLE_HOST_H

#include "models/modernbert.h"

typedef struct mb_run mb_run;

/* Opens BUNDLE (manifest.json, encoder/model.mil) and the checkpoint it was
 * compiled from; n_threads <= 0: all cores. */
nc_status mb_run_open(const char *bundle, int n_threads, mb_run **out, nc_error *err);
void mb_run_free(mb_run *m);
const modernbert_config *mb_run_config(const mb_run *m);
/* The host engine (embedding, tail), owned by m. */
modernbert_model *mb_run_host(mb_run *m);
/* The bundle's parsed program, owned by m (for islands that run it). */
struct mil_program;
const struct mil_program *mb_run_program(const mb_run *m);

/* As modernbert_forward (modernbert.h), the encoder layers and final norm
 * run by the interpreter: rows go in chunks of the largest compiled batch,
 * each padded to the smallest compiled (batch, bucket) that holds it.
 * NC_ERR_RANGE when seq exceeds the largest bucket. hidden[l] for
 * 0 < l < layers is the layer's output read off the interpreter. */
nc_status mb_run_forward(mb_run *m, const modernbert_io *io, nc_error *err);

/* What runs the island on one chunk: function (B, L) of the bundle's
 * program on inputs x [B, D, 1, L], mask_global and mask_local [B, L, 1, L]
 * (mask_local NULL when the function takes none), fp32, dense. It writes
 * out[k] ([B, D, 1, L]) for each k with out[k] != NULL: k < layers - 1 the
 * output of layer k, k = layers - 1 the output `hidden` (after the final
 * norm; always asked for). A runner that cannot report a layer's output
 * fails with NC_ERR_UNSUPPORTED. */
typedef nc_status (*mb_island_fn)(void *user, int B, int L, const float *x,
                                  const float *mask_global, const float *mask_local,
                                  float *const *out, nc_error *err);
/* Replaces the interpreter by run(user, ...) (user must outlive m). */
void mb_run_set_island(mb_run *m, mb_island_fn run, void *user);

/* Copies CPU<->island per forward so far (x, masks, hidden per chunk). */
long mb_run_crossings(const mb_run *m);

#endif
