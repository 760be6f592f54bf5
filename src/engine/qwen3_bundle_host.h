/* The host side of a lowered Qwen3 bundle (docs/lowering.md), shared by the
 * engines that run one: qwen3-mil (the MIL interpreter) and qwen3-ane (the
 * ane_host runner on a device). A forward of n tokens runs in chunks of a
 * bucket size S (the smallest bucket that holds the rest, or the largest);
 * token i of a chunk at position p sits in column p mod S of every S-wide
 * tensor, which is what lets the kv kernel place it with constant gather
 * indices. The host makes each chunk's inputs (embedding rows from the
 * checkpoint, RoPE tables, attention mask, kv_write) and, when the bundle
 * leaves it to the CPU, the final norm + LM head. */
#ifndef NC_ENGINE_QWEN3_BUNDLE_HOST_H
#define NC_ENGINE_QWEN3_BUNDLE_HOST_H

#include "base/pool.h"
#include "engine/engine.h"
#include "io/hf_weights.h"
#include "bundle/manifest.h"

typedef struct qb_host {
    lower_manifest man;
    char dir[4096];
    int S_max;
    nc_pool *pool;
    hf_weights *ckpt;
    const st_tensor *embed, *lm_head, *final_norm;
    /* one chunk's inputs, S_max columns: x [D][S], rope_cos/sin [hd][S],
     * attn_mask [S][ctx], kv_write [ctx] */
    float *x, *cs, *sn, *mask, *wr;
    float *inv_freq, *normed, *rows;
    float *hx; /* the head's input: D x LOWER_HEAD_SEQ */
    /* Gemma 3: embedding rows times embed_scale (1 otherwise); its sliding
     * layers' KV length W (lower_qwen3_window; 0: no sliding layers) and
     * their inputs rope_cos_local, rope_sin_local [hd][S] (the local RoPE
     * base), attn_mask_local [S][W], kv_write_local [W] */
    float embed_scale;
    int W;
    float *cs_l, *sn_l, *mask_l, *wr_l, *inv_freq_l;
} qb_host;

/* Reads dir's manifest, opens the checkpoint it names, checks its tensors,
 * allocates the chunk buffers. n_threads <= 0: all cores. On failure h is
 * freed (qb_host_free is safe either way). */
nc_status qb_host_open(qb_host *h, const char *dir, int n_threads, nc_error *err);
void qb_host_free(qb_host *h);

/* The bucket index of a chunk of n tokens (n <= S_max). */
int qb_host_bucket(const qb_host *h, int n);

/* Fills the chunk inputs for toks[0..n) at positions p.. in S columns. */
void qb_host_chunk_inputs(qb_host *h, const int32_t *toks, int n, int p, int S);

/* --kv-update host (docs/lowering.md, "Lowering forms"): the cache update
 * no kernel makes. cache [C][ctx] takes column j mod S of fresh [C][S]
 * at every slot j where the chunk's kv_write is 1 (the kv kernel's
 * select(kv_write, spread, cache), on the CPU). */
void qb_host_kv_write(const qb_host *h, float *cache, const float *fresh, size_t C, int S);

/* Final norm + LM head (fp32, on the CPU) of column col of x [D][S]. */
void qb_host_head_cpu(qb_host *h, const float *x, int col, int S, float *logits);

/* Copies the n columns of x [D][S] holding positions p.. into rows [n][D]
 * (the layer hook's layout). */
void qb_host_rows(qb_host *h, const float *x, int n, int p, int S);

/* Checks a forward of n tokens at position pos against the context and the
 * vocabulary; the message names the bundle's --ctx. */
nc_status qb_host_check(const qb_host *h, const int32_t *tokens, int n, int pos, nc_error *err);

/* What a bundle engine's sequence starts with: its position. Entries at
 * and after it stay in the cache buffers, masked out, and are overwritten
 * by the next tokens, so truncating is moving it back. */
typedef struct qb_seq {
    int pos;
    /* with sliding-window layers (windowed, qb_seq_init): how far back a
     * truncation keeps the cache (W - sliding_window + 1: no key a later
     * token sees was overwritten by a dropped one); a deeper one drops it
     * all */
    int windowed, keep_span;
} qb_seq;

/* A new sequence of h's bundle (its position 0). */
void qb_seq_init(qb_seq *s, const qb_host *h);

int qb_seq_pos(const engine *e, const engine_seq *s);
int qb_seq_truncate(engine *e, engine_seq *s, int n_keep);

/* Runs one chunk of sequence seq: its inputs are in h (x, rope, mask,
 * kv_write for n tokens at p in S columns); logits (or NULL) of the last. */
typedef nc_status (*qb_chunk_fn)(void *user, engine_seq *seq, int n, int p, int S, float *logits,
                                 nc_error *err);

/* The step of a bundle engine: item after item, each in chunks (the
 * smallest bucket that holds the rest, or the largest), logits only for
 * an item's last chunk; a sequence's position moves only when all its
 * chunks ran (a failed item leaves it as it was: only positions at and
 * after it were written). */
nc_status qb_host_step(qb_host *h, engine_step_item *items, int n_items, qb_chunk_fn run,
                       void *user);

#endif
