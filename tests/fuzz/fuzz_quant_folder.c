/* Fuzz target: loading a model folder written by `nectar quantize` (Qwen3
 * config.json + model.safetensors holding U8 Q8/Q4 block matrices), then one
 * forward step over two tokens. Input: config.json, a NUL byte, the
 * safetensors bytes; they are written to a private temporary folder that
 * qwen3_load opens as it would a real one. A folder that loads must run
 * without reading outside its tensors. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/qwen3.h"

static char dir[64];

static int write_file(const char *name, const uint8_t *p, size_t n) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static void cleanup(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s", "/tmp/nectar-fuzz-quant.XXXXXX");
        if (!mkdtemp(dir)) abort();
        atexit(cleanup);
    }
    const uint8_t *sep = memchr(data, 0, size);
    if (!sep) return 0;
    size_t n_cfg = (size_t)(sep - data);
    if (write_file("config.json", data, n_cfg) ||
        write_file("model.safetensors", sep + 1, size - n_cfg - 1))
        abort();
    qwen3_load_options opt = {1};
    qwen3_model *m;
    nc_error err;
    if (qwen3_load(dir, &opt, &m, &err) != NC_OK) return 0;
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
