/* The host side of a lowered decoder bundle (docs/lowering.md), whatever
 * its family, shared by the two engines that run one: the MIL interpreter
 * (engine_bundle_mil.c) and the ane_host runner on a device
 * (engine_bundle_ane.c). What differs between families is data: the
 * manifest's model (RoPE base and scaling, embedding scale, sliding
 * layers and their window), the family row's sizes of the bundle's
 * config.json (decoder_dims: the rotated width of a head, a hybrid's conv
 * kernel), and the layers' programs (a layer whose functions carry
 * conv_state and delta_state is a recurrent one).
 *
 * A forward of n tokens runs in chunks of a bucket size S (the smallest
 * bucket that holds the rest, or the largest); token i of a chunk at
 * position p sits in column p mod S of every S-wide tensor, which is what
 * lets the kv kernel place it with constant gather indices. The host makes
 * each chunk's inputs (embedding rows from the checkpoint, RoPE tables,
 * attention masks, kv_write; a recurrent layer's prefill picks) and, when
 * the bundle leaves it to the CPU, the final norm + LM head. A recurrent
 * state cannot be rewound: a truncation marks it for a reset and the next
 * step replays the kept tokens first (the attention layers' KV rows are
 * rewritten identically), so seq_truncate keeps exactly n_keep. */
#ifndef NC_ENGINE_DECODER_BUNDLE_HOST_H
#define NC_ENGINE_DECODER_BUNDLE_HOST_H

#include "base/pool.h"
#include "bundle/manifest.h"
#include "engine/engine.h"
#include "io/hf_weights.h"

/* What a layer carries from one token to the next, per sequence: bound by
 * these names (the engines keep them in host buffers or surfaces). */
enum { DB_K_CACHE, DB_V_CACHE, DB_CONV_STATE, DB_DELTA_STATE, DB_N_CARRIED };
extern const char *const db_carried_names[DB_N_CARRIED];

typedef struct db_host {
    lower_manifest man;
    decoder_dims dims; /* the family row's read_dims of the bundle's config.json */
    char dir[4096];
    int S_max;
    nc_pool *pool;
    hf_weights *ckpt;
    const st_tensor *embed, *lm_head, *final_norm;
    /* per layer: values of each carried buffer its functions take (0: none) */
    size_t *carried; /* [L][DB_N_CARRIED] */
    int n_recurrent; /* layers with conv_state and delta_state */
    /* one chunk's inputs, S_max columns: x [D][S], rope_cos/sin [hd][S]
     * (1/0 past the rotated width), attn_mask [S][ctx], kv_write [ctx] */
    float *x, *cs, *sn, *mask, *wr;
    float *inv_freq, *normed, *rows;
    float *hx; /* the head's input: D x LOWER_HEAD_SEQ */
    /* embedding rows times embed_scale (Gemma 3; 1 otherwise); the sliding
     * layers' KV length W (lower_qwen3_window; 0: no sliding layers) and
     * their inputs rope_cos_local, rope_sin_local [hd][S] (the local RoPE
     * base), attn_mask_local [S][W], kv_write_local [W] */
    float embed_scale;
    int W;
    float *cs_l, *sn_l, *mask_l, *wr_l, *inv_freq_l;
    /* a recurrent layer's prefill chunk: valid [S], conv_pick_state
     * [32][32], conv_pick_new [S][32]; the replay's tokens [ctx] */
    float *valid, *pick_state, *pick_new;
    int32_t *replay;
} db_host;

/* Reads dir's manifest and, through family's read_dims, its config.json;
 * opens the checkpoint the manifest names, checks its tensors, allocates
 * the chunk buffers. n_threads <= 0: all cores. On failure h is freed
 * (db_host_free is safe either way). */
nc_status db_host_open(db_host *h, const char *dir, const model_family_row *family, int n_threads,
                       nc_error *err);
void db_host_free(db_host *h);

/* The shape fields of engine e on h's bundle (kv_f16: how the engine
 * keeps its caches); fails when opt->ctx asks for another context than
 * the bundle was compiled for. */
nc_status db_host_fill_engine(const db_host *h, engine *e, const engine_options *opt, int kv_f16,
                              nc_error *err);

/* The values of an input or output (the product of its shape). */
size_t db_io_count(const lower_io *io);

/* Layer l keeps a recurrent state (conv_state and delta_state). */
static inline int db_host_recurrent(const db_host *h, int l) {
    return h->carried[(size_t)l * DB_N_CARRIED + DB_DELTA_STATE] != 0;
}

/* Fills the chunk inputs for toks[0..n) at positions p.. in S columns;
 * with recurrent layers and n > 1 also valid and the conv-window picks. */
void db_host_chunk_inputs(db_host *h, const int32_t *toks, int n, int p, int S);

/* --kv-update host (docs/lowering.md, "Lowering forms"): the cache update
 * no kernel makes. cache [C][width] takes column j mod S of fresh [C][S]
 * at slot j mod width for every position j where the chunk's kv_write is 1
 * (the kv kernel's select(kv_write, spread, cache), on the CPU); width is
 * ctx, or a sliding layer's window, where position p sits in slot p mod W. */
void db_host_kv_write(const db_host *h, float *cache, size_t width, const float *fresh, size_t C,
                      int S);

/* Final norm + LM head (fp32, on the CPU) of column col of x [D][S]. */
void db_host_head_cpu(db_host *h, const float *x, int col, int S, float *logits);

/* Copies the n columns of x [D][S] holding positions p.. into rows [n][D]
 * (the layer hook's layout). */
void db_host_rows(db_host *h, const float *x, int n, int p, int S);

/* What a bundle engine's sequence starts with: its position. Entries at
 * and after it stay in the cache buffers, masked out, and are overwritten
 * by the next tokens, so truncating is moving it back. */
typedef struct db_seq {
    int pos;
    /* with sliding-window layers: how far back a truncation keeps the
     * cache (W - sliding_window + 1: no key a later token sees was
     * overwritten by a dropped one); a deeper one drops it all */
    int windowed, keep_span;
    /* with recurrent layers: the tokens so far ([ctx], what a replay feeds
     * again; NULL without them), how many the states have absorbed, and
     * whether they must be zeroed before the next step */
    int32_t *tokens;
    int lin_pos, need_reset;
} db_seq;

/* A new sequence of h's bundle (position 0); db_seq_release frees it. */
nc_status db_seq_init(db_seq *s, const db_host *h, nc_error *err);
void db_seq_release(db_seq *s);

/* engine_ops of a sequence that starts with a db_seq. */
int db_seq_pos(const engine *e, const engine_seq *s);
int db_seq_truncate(engine *e, engine_seq *s, int n_keep);

/* Runs one chunk of sequence seq: its inputs are in h (n tokens at p in S
 * columns); logits (or NULL) of the last. */
typedef nc_status (*db_chunk_fn)(void *user, engine_seq *seq, int n, int p, int S, float *logits,
                                 nc_error *err);
/* Zeroes the recurrent states of a sequence (the engine's). */
typedef nc_status (*db_reset_fn)(void *user, engine_seq *seq, nc_error *err);

/* The step of a bundle engine: item after item (a pending reset first,
 * then a replay of the tokens a truncation left for the recurrent states,
 * then the item's own), each in chunks, logits only for an item's last
 * chunk. A sequence's position moves only when all its chunks ran: a
 * failed item leaves it as it was (only positions at and after it were
 * written; recurrent states are reset before its next step). */
nc_status db_host_step(db_host *h, engine_step_item *items, int n_items, db_chunk_fn run,
                       db_reset_fn reset, void *user);

#endif
