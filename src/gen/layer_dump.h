/* --dump-layers: collects the hidden state after every decoder layer for
 * every token a backend processes (prompt and generated, in order) and
 * writes DIR/layer_NN.npy, float32 [tokens, hidden]. Both backends feed it
 * through their layer hook, so their dumps compare row for row. */
#ifndef NC_GEN_LAYER_DUMP_H
#define NC_GEN_LAYER_DUMP_H

#include "base/error.h"

typedef struct gen_layer_dump gen_layer_dump;

/* Creates dir if needed (its parent must exist). */
nc_status gen_layer_dump_new(const char *dir, int n_layers, int width, gen_layer_dump **out,
                             nc_error *err);
/* The hook: appends n_rows rows of `width` floats to layer `layer`. A row
 * width or layer outside what was declared, or a failed allocation, is
 * remembered and reported by gen_layer_dump_write. */
void gen_layer_dump_hook(void *dump, int layer, const float *rows, int n_rows, int width);
/* Writes every layer's file (atomically, each). */
nc_status gen_layer_dump_write(gen_layer_dump *d, nc_error *err);
void gen_layer_dump_free(gen_layer_dump *d);

#endif
