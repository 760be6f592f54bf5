/* The mil backend: runs an ANE bundle (nectar compile) through the MIL
 * interpreter in fp16 mode, behind the same generation seam as the cpu
 * engine. The host side of the ANE split lives here: token embeddings from
 * the checkpoint, RoPE tables, attention and write masks, the KV cache
 * (owned here, passed through every kv/attn kernel), column placement and
 * padding, and the LM head's chunks. Every buffer is bound by the name the
 * manifest lists. One sequence per engine. */
#ifndef NC_GEN_ENGINE_MIL_H
#define NC_GEN_ENGINE_MIL_H

#include "gen/engine.h"
#include "lower/manifest.h"

typedef struct gen_mil gen_mil;

/* Called after each decoder layer with the hidden states of the n_rows
 * tokens just processed ([n_rows, width] fp32, row-major). */
typedef void (*gen_mil_layer_hook)(void *user, int layer, const float *rows, int n_rows,
                                   int width);

/* Opens BUNDLE (manifest, programs, the checkpoint's embedding table). The
 * interpreters of each function are prepared on first use. n_threads <= 0:
 * all cores. */
nc_status gen_mil_open(const char *bundle_dir, int n_threads, gen_mil **out, nc_error *err);
void gen_mil_free(gen_mil *m);
const lower_manifest *gen_mil_manifest(const gen_mil *m);
void gen_mil_set_layer_hook(gen_mil *m, gen_mil_layer_hook hook, void *user);

/* The engine (model and state are both m). */
gen_engine gen_engine_mil(gen_mil *m);

#endif
