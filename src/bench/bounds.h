/* The arithmetic behind `nectar bounds`: parameter counts, dense FLOPs,
 * weight bytes per storage format and the bandwidth/compute floors that no
 * implementation can beat (docs/measuring.md). Pure functions of a model shape;
 * the formulas and what each term counts are in docs/measuring.md. */
#ifndef NC_BENCH_BOUNDS_H
#define NC_BENCH_BOUNDS_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "models/decoder.h"
#include "models/qwen3.h"
#include "models/qwen35.h"

/* A ModernBERT-style encoder: N layers of attention (Wqkv D->3D, Wo D->D) and
 * a gated MLP (Wi D->2I, Wo I->D), plus H "head" transformer layers of the
 * classic shape (4D^2 attention + 8D^2 ungated D->4D->D MLP = 12D^2). */
typedef struct nc_encoder_shape {
    int64_t n_layers;      /* N */
    int64_t d_model;       /* D */
    int64_t d_ff;          /* I, the gated MLP's intermediate width */
    int64_t n_head_layers; /* H, extra 12D^2 transformer layers on top */
    int64_t d_head_ff;     /* the head layers' MLP width I_h; 0: 4D (the study's 12D^2) */
} nc_encoder_shape;

/* The Qwen3 decoder fields that decide sizes (HF config.json names). */
typedef struct nc_qwen3_shape {
    int64_t hidden_size, intermediate_size, num_hidden_layers;
    int64_t num_attention_heads, num_key_value_heads, head_dim, vocab_size;
    int is_tied; /* tie_word_embeddings: lm_head shares the embedding table */
    /* Qwen3.5 (all 0 for Qwen3): n_linear of the layers are Gated DeltaNet
     * layers (in_proj_qkv/z/b/a, conv1d, out_proj; a recurrent state
     * [lin_v_heads, lin_k_dim, lin_v_dim] and a conv window per sequence);
     * the others are gated attention (q_proj also makes the output gate). */
    int64_t n_linear, lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim, lin_conv_kernel;
    int no_qk_norm; /* Llama: attention layers without q_norm / k_norm */
    int sandwich_norms; /* Gemma 3: two more norms a layer (after attention and MLP) */
} nc_qwen3_shape;

/* Parameter counts of a Qwen3 model, split the ways claims need them. */
typedef struct nc_qwen3_params {
    double layer_matmul;     /* q,k,v,o,gate,up,down matrices of all layers */
    double norms;            /* RMSNorm weights: 2 per layer + q/k norms + final */
    double embedding;        /* embed_tokens: vocab x hidden */
    double lm_head;          /* separately stored head (0 when tied) */
    double total;            /* everything stored once: matmul + norms + emb + head */
    double non_embedding;    /* total - embedding - lm_head (Qwen's published figure) */
    double matmul_per_token; /* A: matrix params one token multiplies: layers + head */
} nc_qwen3_params;

/* A weight storage format and its bytes per parameter. */
typedef struct nc_weight_format {
    const char *name;
    double bytes_per_param;
} nc_weight_format;

/* fp32, fp16, bf16, q8 (34 bytes per 32), q4 (18 bytes per 32). */
extern const nc_weight_format nc_weight_formats[];
extern const int nc_n_weight_formats;
const nc_weight_format *nc_weight_format_find(const char *name);

/* A = N(4D^2 + 3DI) + 12HD^2; with a head MLP of width I_h other than
 * 4D the head term is H(4D^2 + 2D I_h). */
double nc_encoder_params(const nc_encoder_shape *s);
/* F_dense(B,L) = 2BLA + 4B(N+H)L^2 D (multiply and add counted separately). */
double nc_encoder_flops(const nc_encoder_shape *s, int64_t batch, int64_t seq_len);

nc_qwen3_params nc_qwen3_count(const nc_qwen3_shape *s);
/* Prefill of B x L tokens, dense (un-masked) attention, logits at every
 * position: 2BL*A + 4B*N*L^2*q_dim. */
double nc_qwen3_prefill_flops(const nc_qwen3_shape *s, int64_t batch, int64_t seq_len);
/* One decoded token with `context` cached positions: 2A + 4*N*context*q_dim. */
double nc_qwen3_decode_flops(const nc_qwen3_shape *s, int64_t context);
/* K and V read for one decoded token at `context` positions, fp16 cache. */
double nc_qwen3_kv_bytes(const nc_qwen3_shape *s, int64_t context);
/* Qwen3.5: the recurrent states one decoded token reads and writes (fp32,
 * as the cpu engine keeps them): 2 x linear layers x (state + conv window)
 * x 4 bytes; 0 for Qwen3. */
double nc_qwen3_state_bytes(const nc_qwen3_shape *s);

/* Checks every field is positive and the shape is consistent. */
nc_status nc_qwen3_validate(const nc_qwen3_shape *s, const char *what, nc_error *err);
nc_status nc_encoder_validate(const nc_encoder_shape *s, nc_error *err);

/* The sizes of any decoder as the engine reports them (engine->dims). */
nc_qwen3_shape nc_decoder_shape_of(const decoder_dims *d);
/* The sizes of a parsed Qwen3 config (models/qwen3_config.h, the one reader). */
nc_qwen3_shape nc_qwen3_shape_of(const qwen3_config *c);
/* The sizes of a parsed Qwen3.5 config, linear-attention layers included. */
nc_qwen3_shape nc_qwen35_shape_of(const qwen35_config *c);
/* Reads a Qwen3 config.json file, or a Qwen3.5 one (a folder's config.json). */
nc_status nc_qwen3_shape_load(const char *config_path, nc_qwen3_shape *out, nc_error *err);
/* A Qwen3 or Qwen3.5 preset's shape (models/presets.h: qwen3-0.6b ...
 * qwen3-32b, qwen3.5-0.8b ... qwen3.5-9b). */
nc_status nc_qwen3_shape_like(const char *name, nc_qwen3_shape *out, nc_error *err);
/* A ModernBERT-family preset's shape (H = 0): modernbert-base, -large,
 * mmbert-base. */
nc_status nc_encoder_shape_like(const char *name, nc_encoder_shape *out, nc_error *err);
/* Reads hidden_size, intermediate_size, num_hidden_layers of a ModernBERT
 * config; a decision.json beside it (a decision-model folder,
 * docs/decision.md) adds H = head_layers and I_h = head_intermediate_size. */
nc_status nc_encoder_shape_load(const char *config_path, nc_encoder_shape *out, nc_error *err);

/* t >= max(flops / compute, bytes / bandwidth); a rate <= 0 means "not given"
 * and that floor is reported as 0. Rates in bytes/s and FLOP/s. */
double nc_floor_s(double flops, double compute_flops_per_s, double bytes,
                  double bandwidth_bytes_per_s);

/* Amdahl's law: a fraction f of the time sped up s times gives
 * S = 1 / (1 - f + f/s); s = infinity gives 1 / (1 - f). */
double nc_amdahl(double fraction, double speedup);

#endif
