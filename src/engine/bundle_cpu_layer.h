/* The CPU half of the ane engine's partition (docs/engine.md, "A refused
 * layer on the CPU engine's kernels"): the layers the device refused at
 * every rung of the ladder (ane_bundle_layer_on_cpu) run whole on the
 * family's CPU decoder (models/decoder.h: layer_forward), fp32
 * arithmetic, on the bundle's own fp16 weights where the family's decoder
 * is Qwen3's, else on the checkpoint the manifest names (the bundle host
 * opens it already for the embedding rows). Each sequence keeps a CPU
 * state holding only those layers; a KV cache is positional and a
 * recurrent layer restarts at position 0, so the bundle host's truncation
 * and replay (db_seq_truncate, db_host_step) serve it unchanged. */
#ifndef NC_ENGINE_BUNDLE_CPU_LAYER_H
#define NC_ENGINE_BUNDLE_CPU_LAYER_H

#include "engine/decoder_bundle_host.h"
#include "models/decoder.h"

typedef struct bundle_weights bundle_weights;

typedef struct bundle_cpu_layers {
    decoder d;
    int open;
    unsigned char *layers; /* [L]: 1 where the layer runs here */
    int n_layers, n_cpu;
    int ctx;
    /* where the weights came from: the bundle's weight.bin (a Qwen3-layout
     * family with fp16 weights), else the checkpoint */
    bundle_weights *bw;
    const char *source; /* "the bundle's fp16 weights" or "the checkpoint's weights" */
} bundle_cpu_layers;

/* Opens family's CPU decoder for the layers marked in layers[0..h's L)
 * (n_cpu of them): on the layer programs' own fp16 weight.bin blobs (by
 * the lowering's tensor names, the grouped attention form's q_proj rows
 * and o_proj columns put back in order) where the family's decoder is
 * Qwen3's and the weights are plain fp16 blobs; else on h's checkpoint
 * (Qwen3.5, palettized bundles), checked to be the bundle's model. */
nc_status bundle_cpu_layers_open(bundle_cpu_layers *c, const db_host *h,
                                 const model_family_row *family, const unsigned char *layers,
                                 int n_threads, nc_error *err);
void bundle_cpu_layers_close(bundle_cpu_layers *c);

/* One sequence's side: its CPU state, and the layer hook (--dump-layers)
 * its rows are reported to. */
typedef struct bundle_cpu_seq {
    bundle_cpu_layers *c;
    void *state;
    engine_layer_hook hook;
    void *hook_user;
} bundle_cpu_seq;

nc_status bundle_cpu_seq_init(bundle_cpu_seq *s, bundle_cpu_layers *c, nc_error *err);
void bundle_cpu_seq_release(bundle_cpu_seq *s);

/* ane_cpu_layer_fn over a bundle_cpu_seq: the decoder's layer_forward on
 * the rows, then the hook. */
nc_status bundle_cpu_layer_run(void *seq, int layer, float *rows, int n, int p, nc_error *err);

#endif
