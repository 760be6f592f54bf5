/* The mil backend for encoders: runs an encoder bundle (nectar compile of a
 * ModernBERT folder) through the MIL interpreter in fp16 mode, the numerics
 * the ANE is asked for. The host side is the CPU engine of the checkpoint
 * the bundle names: embedding rows + embedding LayerNorm before the island,
 * pooling and heads after it. Same I/O contract as modernbert_forward. */
#ifndef NC_LOWER_MODERNBERT_RUN_H
#define NC_LOWER_MODERNBERT_RUN_H

#include "models/modernbert.h"

typedef struct mb_run mb_run;

/* Opens BUNDLE (manifest.json, encoder/model.mil) and the checkpoint it was
 * compiled from; n_threads <= 0: all cores. */
nc_status mb_run_open(const char *bundle, int n_threads, mb_run **out, nc_error *err);
void mb_run_free(mb_run *m);
const modernbert_config *mb_run_config(const mb_run *m);
/* The host engine (embedding, tail), owned by m. */
modernbert_model *mb_run_host(mb_run *m);

/* As modernbert_forward (modernbert.h), the encoder layers and final norm
 * run by the interpreter: rows go in chunks of the largest compiled batch,
 * each padded to the smallest compiled (batch, bucket) that holds it.
 * NC_ERR_RANGE when seq exceeds the largest bucket. hidden[l] for
 * 0 < l < layers is the layer's output read off the interpreter. */
nc_status mb_run_forward(mb_run *m, const modernbert_io *io, nc_error *err);

/* Copies CPU<->island per forward so far (x, masks, hidden per chunk). */
long mb_run_crossings(const mb_run *m);

#endif
