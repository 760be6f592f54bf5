/* Fuzz target: loading a model folder written by `nectar quantize` (Qwen3
 * config.json + model.safetensors holding U8 Q8/Q4 block matrices), then one
 * forward step over two tokens. Input: config.json, a NUL byte, the
 * safetensors bytes; they are written to a private temporary folder that
 * qwen3_load opens as it would a real one. A folder that loads must run
 * without reading outside its tensors. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_files.h"
#include "models/qwen3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *sep = memchr(data, 0, size);
    if (!sep) return 0;
    size_t n_cfg = (size_t)(sep - data);
    fuzz_write_file("config.json", data, n_cfg);
    fuzz_write_file("model.safetensors", sep + 1, size - n_cfg - 1);
    qwen3_load_options opt = {1};
    qwen3_model *m;
    nc_error err;
    if (qwen3_load(fuzz_dir(), &opt, &m, &err) != NC_OK) return 0;
    const qwen3_config *c = qwen3_model_config(m);
    qwen3_state *s;
    if (c->vocab_size <= (1 << 16) && qwen3_state_new(m, 4, &s, &err) == NC_OK) {
        float *logits = malloc((size_t)c->vocab_size * sizeof *logits);
        int32_t toks[2] = {0, c->vocab_size - 1};
        if (logits) qwen3_forward(m, s, toks, 2, logits, NULL, &err);
        free(logits);
        qwen3_state_free(s);
    }
    qwen3_free(m);
    return 0;
}
