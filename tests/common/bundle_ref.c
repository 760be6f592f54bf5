/* Shared by the bundle tests (bundle_ref.h). */
#include "bundle_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/half.h"
#include "base/json.h"
#include "lower/qwen3_compile.h"

int nc_test_compile_bundle(char *root, size_t cap, const char *tag, const char *model_dir,
                           const char *name, char *out, size_t out_cap, int ctx,
                           int kernels_per_layer, int lm_head_on_cpu, int q35_prefill) {
    if (!root[0]) {
        snprintf(root, cap, "/tmp/nectar_%s_XXXXXX", tag);
        if (!mkdtemp(root)) {
            root[0] = '\0';
            return 0;
        }
    }
    snprintf(out, out_cap, "%s/%s", root, name);
    lower_compile_options o = {0};
    o.model_dir = model_dir;
    o.out_dir = out;
    o.ctx = ctx;
    o.kernels_per_layer = kernels_per_layer;
    o.lm_head_on_cpu = lm_head_on_cpu;
    o.q35_prefill = q35_prefill;
    o.n_seqs = 2;
    o.seqs[0] = 32;
    o.seqs[1] = 64;
    o.n_threads = 1;
    lower_compile_report r;
    nc_error err = {0};
    if (lower_qwen3_compile(&o, &r, &err) != NC_OK) {
        printf("  compile: %s\n", err.msg);
        out[0] = '\0';
        return 0;
    }
    return 1;
}

void nc_test_remove_root(const char *root) {
    if (!root[0]) return;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) printf("  could not remove %s\n", root);
}

int nc_test_load_prompt(const char *fixture, int which, int max_ids, int n_greedy, int *ids,
                        int *n_ids, int *greedy) {
    char path[512];
    snprintf(path, sizeof path, "%s/reference.json", fixture);
    json_t *root = NULL;
    nc_error err = {0};
    if (nc_json_load_file(path, &root, &err)) return 0;
    const json_t *pr = json_array_get(json_object_get(root, "prompts"), (size_t)which);
    const json_t *js = json_object_get(pr, "ids"), *g = json_object_get(pr, "greedy_ids");
    *n_ids = (int)json_array_size(js);
    int ok = *n_ids > 0 && *n_ids <= max_ids && (int)json_array_size(g) >= n_greedy;
    for (int i = 0; ok && i < *n_ids; i++)
        ids[i] = (int)json_integer_value(json_array_get(js, (size_t)i));
    for (int i = 0; ok && i < n_greedy; i++)
        greedy[i] = (int)json_integer_value(json_array_get(g, (size_t)i));
    json_decref(root);
    return ok;
}

int nc_test_argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static float embed_at(const st_tensor *t, size_t i) {
    if (t->dtype == ST_F32) {
        float f;
        memcpy(&f, (const char *)t->data + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const char *)t->data + 2 * i, 2);
    return t->dtype == ST_BF16 ? nc_bf16_to_f32(h) : nc_fp16_to_f32(h);
}

int nc_test_host_open(nc_test_host *h, const ane_runner *r, int rotary_dim) {
    memset(h, 0, sizeof *h);
    h->m = *ane_runner_manifest(r);
    nc_error err = {0};
    if (hf_weights_open(h->m.source_dir, &h->ckpt, &err)) return 0;
    h->embed = hf_weights_find(h->ckpt, h->m.embed_tensor, NULL);
    h->D = h->m.cfg.hidden_size;
    h->hd = h->m.cfg.head_dim;
    h->rd = rotary_dim;
    h->V = h->m.cfg.vocab_size;
    h->ctx = h->m.ctx;
    h->theta = h->m.cfg.rope_theta;
    size_t S = (size_t)h->m.seqs[h->m.n_seqs - 1];
    h->x = malloc((size_t)h->D * S * sizeof(float));
    h->cs = malloc((size_t)h->hd * S * sizeof(float));
    h->sn = malloc((size_t)h->hd * S * sizeof(float));
    h->mask = malloc(S * (size_t)h->ctx * sizeof(float));
    h->wr = malloc((size_t)h->ctx * sizeof(float));
    h->logits = malloc((size_t)h->V * sizeof(float));
    return h->embed && h->x && h->cs && h->sn && h->mask && h->wr && h->logits;
}

void nc_test_host_close(nc_test_host *h) {
    hf_weights_close(h->ckpt);
    free(h->x);
    free(h->cs);
    free(h->sn);
    free(h->mask);
    free(h->wr);
    free(h->logits);
}

nc_status nc_test_host_write(nc_test_host *h, ane_runner *r, int seq, const int32_t *toks, int n,
                             int pos, nc_error *err) {
    int ctx = h->ctx;
    memset(h->x, 0, (size_t)h->D * seq * sizeof(float));
    for (int i = 0; i < h->hd * seq; i++) {
        h->cs[i] = 1.0f;
        h->sn[i] = 0.0f;
    }
    for (int row = 0; row < seq; row++)
        for (int k = 0; k < ctx; k++)
            h->mask[(size_t)row * ctx + k] = k == 0 ? 0.0f : -1.0e4f;
    memset(h->wr, 0, (size_t)ctx * sizeof(float));
    for (int t = 0; t < n; t++) {
        int p = pos + t, col = p % seq;
        for (int d = 0; d < h->D; d++)
            h->x[(size_t)d * seq + col] = embed_at(h->embed, (size_t)toks[t] * h->D + d);
        for (int d = 0; d < h->rd; d++) {
            int i = d % (h->rd / 2);
            float inv = (float)(1.0 / pow(h->theta, 2.0 * i / h->rd));
            float ang = (float)p * inv;
            h->cs[(size_t)d * seq + col] = (float)cos((double)ang);
            h->sn[(size_t)d * seq + col] = (float)sin((double)ang);
        }
        for (int k = 0; k < ctx; k++)
            h->mask[(size_t)col * ctx + k] = k <= p ? 0.0f : -1.0e4f;
        h->wr[p] = 1.0f;
    }
    NC_TRY(ane_runner_write(r, 1, seq, "x", h->x, (size_t)h->D * seq, err));
    NC_TRY(ane_runner_write(r, 1, seq, "rope_cos", h->cs, (size_t)h->hd * seq, err));
    NC_TRY(ane_runner_write(r, 1, seq, "rope_sin", h->sn, (size_t)h->hd * seq, err));
    NC_TRY(ane_runner_write(r, 1, seq, "attn_mask", h->mask, (size_t)seq * ctx, err));
    return ane_runner_write(r, 1, seq, "kv_write", h->wr, (size_t)ctx, err);
}

nc_status nc_test_host_logits(nc_test_host *h, ane_runner *r, int seq, nc_error *err) {
    int off = 0;
    for (int c = 0; c < h->m.n_head_chunks; c++) {
        char name[32];
        snprintf(name, sizeof name, "logits_%d", c);
        int rows = (int)h->m.head_rows[c];
        NC_TRY(ane_runner_read_column(r, seq, name, 0, h->logits + off, (size_t)rows, err));
        off += rows;
    }
    return off == h->V ? NC_OK
                       : nc_fail(err, NC_ERR_FORMAT, "head chunks cover %d of %d", off, h->V);
}
