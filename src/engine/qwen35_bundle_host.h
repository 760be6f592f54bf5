/* The Qwen3.5 side of a lowered bundle's host (docs/qwen35.md), on top of
 * Qwen3's (qwen3_bundle_host.h) and shared by the engines that run one:
 * qwen35-mil (the MIL interpreter) and qwen35-ane (the ane_host runner on a
 * device). What it adds: the layer pattern from the bundle's config.json,
 * partial RoPE, a prefill chunk's `valid` column mask and conv-window pick
 * matrices, and the step loop that handles a recurrent state which cannot
 * be rewound: truncation marks the linear states for a reset and the next
 * step replays the kept tokens first (the full layers' KV rows are
 * rewritten identically), so seq_truncate keeps exactly n_keep. */
#ifndef NC_ENGINE_QWEN35_BUNDLE_HOST_H
#define NC_ENGINE_QWEN35_BUNDLE_HOST_H

#include "engine/qwen3_bundle_host.h"
#include "models/qwen35.h"

typedef struct q35_host {
    qwen35_config cfg; /* the bundle's copy of config.json */
    float *inv_freq;   /* rotary_dim / 2 */
    /* a prefill chunk's host inputs: valid [S], conv_pick_state [32][32],
     * conv_pick_new [S][32] (S_max columns allocated) */
    float *valid, *pick_state, *pick_new;
    int32_t *replay; /* [ctx]: kept tokens + new ones of one step */
} q35_host;

/* A Qwen3.5 bundle sequence's host side; the engine's sequence starts with it. */
typedef struct q35_seq {
    qb_seq base;     /* the position; first */
    int lin_pos;     /* tokens the linear states have absorbed (<= pos) */
    int need_reset;  /* the linear states must be zeroed before the next step */
    int32_t *tokens; /* [ctx]: what the replay after a truncation feeds again */
} q35_seq;

/* Reads dir's config.json and checks it against the manifest h has read. On
 * failure the caller still calls q35_host_free. */
nc_status q35_host_open(q35_host *q, const char *dir, const qb_host *h, nc_error *err);
void q35_host_free(q35_host *q);

/* Overwrites h's rope_cos/sin columns of the chunk (n tokens at p in S
 * columns) for partial rotary: 1/0 past rotary_dim. */
void q35_host_rope(const q35_host *q, qb_host *h, int n, int p, int S);

/* valid, conv_pick_state and conv_pick_new of a prefill chunk of n tokens in
 * S columns (its tokens in order from column 0). */
void q35_host_chunk_picks(q35_host *q, int n, int S);

/* K and V bytes per token: the full-attention layers only (fp16 values held
 * as floats, as the engines keep them). */
size_t q35_host_kv_bytes_per_token(const q35_host *q);

/* The token history of a new sequence; q35_seq_release frees it. */
nc_status q35_seq_init(q35_seq *s, const qb_host *h, nc_error *err);
void q35_seq_release(q35_seq *s);

/* engine_ops.seq_truncate: moves the position back and marks the linear
 * states for a reset; returns the new position. */
int q35_seq_truncate(engine *e, engine_seq *s, int n_keep);

/* Zeroes the recurrent states of a sequence (the engine's). */
typedef nc_status (*q35_reset_fn)(void *user, engine_seq *seq, nc_error *err);

/* The step of a Qwen3.5 bundle engine: item after item, a pending reset
 * first, then a replay of the tokens a truncation left for the linear
 * states, then the item's own tokens, through qb_host_step. A failed item
 * keeps its position and has its states reset before its next step. */
nc_status q35_host_step(q35_host *q, qb_host *h, engine_step_item *items, int n_items,
                        qb_chunk_fn run, q35_reset_fn reset, void *user);

#endif
