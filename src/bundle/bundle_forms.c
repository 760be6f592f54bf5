/* Names of the kernels and lowering forms a manifest records. */
#include "bundle/bundle_forms.h"

#include <stdio.h>
#include <string.h>

static const char *const kernel_names[LOWER_N_KERNELS] = {"qkv", "kv", "attn", "mlp"};

const char *lower_kernel_name(lower_kernel k) {
    return k >= 0 && k < LOWER_N_KERNELS ? kernel_names[k] : "?";
}

static int find_name(const char *const *names, int n, const char *name) {
    for (int i = 0; name && i < n; i++)
        if (!strcmp(names[i], name)) return i;
    return -1;
}

static const char *const SPLIT_NAMES[LOWER_N_SPLITS] = {"layer", "kernel", "function"};
static const char *const HEAD_SPLIT_NAMES[LOWER_N_HEAD_SPLITS] = {"per-chunk", "one"};
static const char *const KV_NAMES[LOWER_N_KV_UPDATES] = {"onehot", "gather", "host"};
static const char *const EXP_NAMES[LOWER_N_EXP_FORMS] = {"sigmoid", "op"};
static const char *const PAD_NAMES[LOWER_N_PADS] = {"32", "none"};
static const char *const BUCKET_NAMES[LOWER_N_BUCKET_FORMS] = {"per-bucket", "enumerated"};

const char *lower_bucket_form_name(lower_bucket_form f) {
    return f >= 0 && f < LOWER_N_BUCKET_FORMS ? BUCKET_NAMES[f] : "?";
}

int lower_bucket_form_parse(const char *name) {
    return find_name(BUCKET_NAMES, LOWER_N_BUCKET_FORMS, name);
}

const char *lower_exp_form_name(lower_exp_form f) {
    return f >= 0 && f < LOWER_N_EXP_FORMS ? EXP_NAMES[f] : "?";
}

int lower_exp_form_parse(const char *name) {
    return find_name(EXP_NAMES, LOWER_N_EXP_FORMS, name);
}

const char *lower_matmul_pad_name(lower_matmul_pad p) {
    return p >= 0 && p < LOWER_N_PADS ? PAD_NAMES[p] : "?";
}

int lower_matmul_pad_parse(const char *name) {
    return find_name(PAD_NAMES, LOWER_N_PADS, name);
}
static const char *const ROPE_NAMES[LOWER_N_ROPE_FORMS] = {"conv", "matmul"};
static const char *const ATTN_NAMES[LOWER_N_ATTN_FORMS] = {"broadcast", "grouped"};

const char *lower_attention_form_name(lower_attention_form a) {
    return a >= 0 && a < LOWER_N_ATTN_FORMS ? ATTN_NAMES[a] : "?";
}

int lower_attention_form_parse(const char *name) {
    return find_name(ATTN_NAMES, LOWER_N_ATTN_FORMS, name);
}

const char *lower_rope_form_name(lower_rope_form r) {
    return r >= 0 && r < LOWER_N_ROPE_FORMS ? ROPE_NAMES[r] : "?";
}

const char *lower_kv_update_name(lower_kv_update k) {
    return k >= 0 && k < LOWER_N_KV_UPDATES ? KV_NAMES[k] : "?";
}

const char *lower_program_split_name(lower_program_split s) {
    return s >= 0 && s < LOWER_N_SPLITS ? SPLIT_NAMES[s] : "?";
}

const char *lower_head_split_name(lower_head_split s) {
    return s >= 0 && s < LOWER_N_HEAD_SPLITS ? HEAD_SPLIT_NAMES[s] : "?";
}

int lower_program_split_parse(const char *name) {
    return find_name(SPLIT_NAMES, LOWER_N_SPLITS, name);
}

int lower_head_split_parse(const char *name) {
    return find_name(HEAD_SPLIT_NAMES, LOWER_N_HEAD_SPLITS, name);
}

int lower_kv_update_parse(const char *name) {
    return find_name(KV_NAMES, LOWER_N_KV_UPDATES, name);
}

int lower_rope_form_parse(const char *name) {
    return find_name(ROPE_NAMES, LOWER_N_ROPE_FORMS, name);
}

void mb_lower_fn_name(char *buf, size_t cap, int batch, int seq) {
    snprintf(buf, cap, "encoder_b%d_s%d", batch, seq);
}

mil_dtype lower_palette_index_dtype(int bits) {
    switch (bits) {
    case 1:
        return MIL_DT_UINT1;
    case 2:
        return MIL_DT_UINT2;
    case 4:
        return MIL_DT_UINT4;
    case 6:
        return MIL_DT_UINT6;
    case 8:
        return MIL_DT_UINT8;
    default:
        return MIL_DT_INVALID;
    }
}

int lower_qwen3_window(int sliding_window, int ctx, int s_max) {
    int64_t w = ((int64_t)sliding_window + s_max - 1 + s_max - 1) / s_max * s_max;
    return w < ctx ? (int)w : ctx;
}
