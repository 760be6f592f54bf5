/* The preset rows (presets.h). Qwen3: the checkpoints' config.json on the HF
 * hub (Qwen/Qwen3-0.6B ... Qwen/Qwen3-32B); ModernBERT: answerdotai/
 * ModernBERT-base and -large, jhu-clsp/mmBERT-base; Qwen3.5: the "Model
 * Overview" of the Qwen/Qwen3.5-0.8B, -2B, -4B and -9B model cards (hidden,
 * layers, heads, head dims, FFN, tied head) and Qwen3_5TextConfig's
 * defaults (vocab 248320, the 9B's shape, untied); rope theta 1e7, ids
 * 248044 (bos, <|endoftext|>) and 248046 (<|im_end|>) as the hub's configs.
 * Llama: meta-llama/Llama-3.2-1B(-Instruct), -3B and Llama-3.1-8B's
 * config.json (rope_scaling llama3, factor 32 and 8; eos 128001 and
 * generation_config's 128009 <|eot_id|>), and HuggingFaceTB/SmolLM2-135M-
 * and -1.7B-Instruct (Apache-2.0; no rope_scaling). Gemma 3:
 * google/gemma-3-270m and gemma-3-1b-it's config.json (window 512, every
 * 6th layer global, theta 1e6 global / 1e4 local, no rope_scaling,
 * query_pre_attn_scalar 256 = head_dim) and generation_config's eos
 * [1, 106] (<eos>, <end_of_turn>).
 * "tiny" is a toy Qwen3 shape for tests and smoke runs. */
#include "models/presets.h"

#include <stdio.h>
#include <string.h>

#define QWEN3 MODEL_FAMILY_QWEN3
#define MBERT MODEL_FAMILY_MODERNBERT
#define QWEN35 MODEL_FAMILY_QWEN35
#define LLAMA MODEL_FAMILY_LLAMA
#define GEMMA3 MODEL_FAMILY_GEMMA3

static const model_preset presets[] = {
    /* name, family, hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, max_pos,
     * tied, rope_theta, rope_theta_local, bos, eos, eos_extra, pad, cls, sep,
     * lin_k_heads, lin_v_heads, lin_head_dim, rope_llama3_factor, sliding_window */
    {"qwen3-0.6b", QWEN3,  1024,   3072, 28, 16, 8, 128, 151936, 40960, 1, 1e6, 0,
     151643,       151645, 151643, -1,   -1, -1, 0, 0,   0,      0,     0},
    {"qwen3-1.7b", QWEN3,  2048,   6144, 28, 16, 8, 128, 151936, 40960, 1, 1e6, 0,
     151643,       151645, 151643, -1,   -1, -1, 0, 0,   0,      0,     0},
    {"qwen3-4b", QWEN3,  2560,   9728,   36, 32, 8,  128, 151936, 40960, 1, 1e6,
     0,          151643, 151645, 151643, -1, -1, -1, 0,   0,      0,     0, 0},
    {"qwen3-8b", QWEN3,  4096,   12288,  36, 32, 8,  128, 151936, 40960, 0, 1e6,
     0,          151643, 151645, 151643, -1, -1, -1, 0,   0,      0,     0, 0},
    {"qwen3-14b", QWEN3,  5120,   17408,  40, 40, 8,  128, 151936, 40960, 0, 1e6,
     0,           151643, 151645, 151643, -1, -1, -1, 0,   0,      0,     0, 0},
    {"qwen3-32b", QWEN3,  5120,   25600,  64, 64, 8,  128, 151936, 40960, 0, 1e6,
     0,           151643, 151645, 151643, -1, -1, -1, 0,   0,      0,     0, 0},
    {"tiny", QWEN3, 64, 160, 2, 4, 2, 32, 512, 512, 1, 1e6, 0, 0, 1, -1, -1, -1, -1, 0, 0, 0, 0, 0},
    {"modernbert-base",
     MBERT,
     768,
     1152,
     22,
     12,
     12,
     64,
     50368,
     8192,
     1,
     160000,
     10000,
     50281,
     50282,
     -1,
     50283,
     50281,
     50282,
     0,
     0,
     0,
     0,
     0},
    {"modernbert-large",
     MBERT,
     1024,
     2624,
     28,
     16,
     16,
     64,
     50368,
     8192,
     1,
     160000,
     10000,
     50281,
     50282,
     -1,
     50283,
     50281,
     50282,
     0,
     0,
     0,
     0,
     0},
    {"mmbert-base", MBERT, 768, 1152, 22, 12, 12, 64, 256000, 8192, 1, 160000,
     160000,        2,     1,   -1,   0,  1,  1,  0,  0,      0,    0, 0},
    {"qwen3.5-0.8b", QWEN35, 1024,   3584, 24, 8,  2,  256, 248320, 262144, 1, 1e7, 0,
     248044,         248046, 248044, -1,   -1, -1, 16, 16,  128,    0,      0},
    {"qwen3.5-2b", QWEN35, 2048,   6144, 24, 8,  2,  256, 248320, 262144, 1, 1e7, 0,
     248044,       248046, 248044, -1,   -1, -1, 16, 16,  128,    0,      0},
    {"qwen3.5-4b", QWEN35, 2560,   9216, 32, 16, 4,  256, 248320, 262144, 1, 1e7, 0,
     248044,       248046, 248044, -1,   -1, -1, 16, 32,  128,    0,      0},
    {"qwen3.5-9b", QWEN35, 4096,   12288, 32, 16, 4,  256, 248320, 262144, 0, 1e7, 0,
     248044,       248046, 248044, -1,    -1, -1, 16, 32,  128,    0,      0},
    {"llama3.2-1b", LLAMA,  2048,   8192, 16, 32, 8, 64, 128256, 131072, 1, 5e5, 0,
     128000,        128001, 128009, -1,   -1, -1, 0, 0,  0,      32,     0},
    {"llama3.2-3b", LLAMA,  3072,   8192, 28, 24, 8, 128, 128256, 131072, 1, 5e5, 0,
     128000,        128001, 128009, -1,   -1, -1, 0, 0,   0,      32,     0},
    {"llama3.1-8b", LLAMA,  4096,   14336, 32, 32, 8, 128, 128256, 131072, 0, 5e5, 0,
     128000,        128001, 128009, -1,    -1, -1, 0, 0,   0,      8,      0},
    {"smollm2-135m",
     LLAMA,
     576,
     1536,
     30,
     9,
     3,
     64,
     49152,
     8192,
     1,
     1e5,
     0,
     1,
     2,
     -1,
     -1,
     -1,
     -1,
     0,
     0,
     0,
     0,
     0},
    {"smollm2-1.7b",
     LLAMA,
     2048,
     8192,
     24,
     32,
     32,
     64,
     49152,
     8192,
     1,
     1.3e5,
     0,
     1,
     2,
     -1,
     -1,
     -1,
     -1,
     0,
     0,
     0,
     0,
     0},
    {"gemma3-270m", GEMMA3, 640, 2048, 18, 4,  1,  256, 262144, 32768, 1, 1e6,
     1e4,           2,      1,   106,  0,  -1, -1, 0,   0,      0,     0, 512},
    {"gemma3-1b", GEMMA3, 1152, 6912, 26, 4,  1,  256, 262144, 32768, 1, 1e6,
     1e4,         2,      1,    106,  0,  -1, -1, 0,   0,      0,     0, 512},
};
#define N_PRESETS (int)(sizeof presets / sizeof presets[0])

const model_preset *model_preset_at(int i) {
    return i >= 0 && i < N_PRESETS ? &presets[i] : NULL;
}

const model_preset *model_preset_find(const char *name) {
    for (int i = 0; i < N_PRESETS; i++)
        if (!strcmp(name, presets[i].name)) return &presets[i];
    return NULL;
}

void model_preset_names(int family, const char *sep, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_PRESETS && len < cap; i++)
        if (family < 0 || presets[i].family == (model_family)family)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? sep : "", presets[i].name);
}

nc_status model_preset_get(const char *name, const model_preset **out, nc_error *err) {
    if ((*out = model_preset_find(name))) return NC_OK;
    char names[512];
    model_preset_names(-1, ", ", names, sizeof names);
    return nc_fail(err, NC_ERR_NOT_FOUND, "--like %s: unknown shape (known: %s)", name, names);
}
