/* ModernBERT CPU engine against Hugging Face transformers (eager attention,
 * fp32): tests/fixtures/modernbert/{mb_mlm,mb_base,mm_cls} were written by
 * tools/make_modernbert_fixtures.py from the models reloaded from disk.
 * Checked at every real (non-pad) position of a padded batch whose rows are
 * longer and shorter than the local window: the embeddings output and every
 * layer's hidden states, the final hidden states, MLM logits (legacy theta
 * keys, two thetas, tied decoder), classifier logits (v5 rope_parameters,
 * mean pooling), bf16 stored weights, a batch of one equal to its row in the padded batch, and
 * MLM logits for selected positions only. Tolerance 1e-4 absolute (fp32 on
 * both sides; measured worst errors are printed), or under the fast bf16
 * contract FAST_REL_TOL per row. */
#include <math.h>

#include "../test.h"
#include "cpu/cpu_kernels.h"
#include "io/npy.h"
#include "models/modernbert.h"

#define FIX "tests/fixtures/modernbert/"
#define TOL 1e-4
/* Under NECTAR_BF16=fast (tests/encoders/test_modernbert_kernels.sh): the
 * worst row's ||nectar - HF|| / ||HF||, any layer; measured 0.015 (mb_bf16)
 * and 0.021 (mb_hd48) on these tiny random models, 1.4e-6 with fp32
 * weights, which the contract leaves alone. */
#define FAST_REL_TOL 0.03
#define TEST_THREADS 2

typedef struct ref {
    nc_npy ids, mask, hidden, last, logits;
    int batch, seq;
} ref;

static void ref_free(ref *r) {
    nc_npy_free(&r->ids);
    nc_npy_free(&r->mask);
    nc_npy_free(&r->hidden);
    nc_npy_free(&r->last);
    nc_npy_free(&r->logits);
}

static int ref_load(const char *model, const char *sub, ref *r, int has_last, int has_logits,
                    nc_error *err) {
    memset(r, 0, sizeof *r);
    char p[512];
#define LOAD(field, name)                                                                          \
    snprintf(p, sizeof p, FIX "%s/%s/%s", model, sub, name);                                       \
    if (nc_npy_read(p, &r->field, err) != NC_OK) return -1;
    LOAD(ids, "input_ids.npy");
    LOAD(mask, "attention_mask.npy");
    LOAD(hidden, "hidden.npy");
    if (has_last) {
        LOAD(last, "last.npy");
    }
    if (has_logits) {
        LOAD(logits, "logits.npy");
    }
#undef LOAD
    r->batch = (int)r->ids.shape[0];
    r->seq = (int)r->ids.shape[1];
    return 0;
}

/* Over real positions of [planes][batch][seq][width] arrays: the worst
 * |a - b| of an element, or (relative) the worst ||a - b|| / ||b|| of a
 * row. */
static double max_err_real(const float *a, const float *b, const int32_t *mask, int planes,
                           int rows, size_t width, int relative) {
    double e = 0;
    for (int p = 0; p < planes; p++)
        for (int r = 0; r < rows; r++) {
            if (!mask[r]) continue;
            size_t at = ((size_t)p * rows + r) * width;
            double dd = 0, bb = 0, row = 0;
            for (size_t i = 0; i < width; i++) {
                double d = fabs((double)a[at + i] - b[at + i]);
                if (d > row || isnan(d)) row = isnan(d) ? INFINITY : d;
                dd += d * d;
                bb += (double)b[at + i] * b[at + i];
            }
            if (relative) row = bb > 0 ? sqrt(dd / bb) : sqrt(dd);
            if (row > e || isnan(row)) e = isnan(row) ? INFINITY : row;
        }
    return e;
}

/* pack_budget: modernbert_set_pack_budget (the default packs every layer
 * matrix where the table packs; a small one packs the first few only);
 * threads: the model's pool. */
static void check_model_on(const char *name, const char *sub, int head, size_t pack_budget,
                           int threads) {
    nc_error err = {0};
    ref r;
    if (ref_load(name, sub, &r, head == MODERNBERT_HEAD_NONE, head != MODERNBERT_HEAD_NONE, &err)) {
        printf("  %s\n", err.msg);
        ref_free(&r);
        CHECK(0);
    }
    char dir[256];
    snprintf(dir, sizeof dir, FIX "%s", name);
    modernbert_model *m = NULL;
    CHECK_OK(modernbert_load(dir, threads, &m, &err), &err);
    modernbert_set_pack_budget(m, pack_budget);
    const modernbert_config *c = modernbert_model_config(m);
    CHECK(c->head == (modernbert_head)head);
    int n = r.batch * r.seq, nl = c->num_hidden_layers;
    size_t d = (size_t)c->hidden_size;
    CHECK(r.hidden.shape[0] == nl + 1 && r.hidden.shape[3] == (int64_t)d);
    float *hidden = calloc((size_t)(nl + 1) * n * d, sizeof(float));
    float *last = calloc((size_t)n * d, sizeof(float));
    size_t nlog = head == MODERNBERT_HEAD_MLM ? (size_t)n * c->vocab_size
                                              : (size_t)r.batch * (size_t)c->num_labels;
    float *logits = calloc(nlog, sizeof(float));
    modernbert_io io = {.ids = r.ids.data,
                        .mask = r.mask.data,
                        .batch = r.batch,
                        .seq = r.seq,
                        .hidden = hidden,
                        .last = last,
                        .pooling = -1};
    if (head == MODERNBERT_HEAD_MLM) io.mlm_logits = logits;
    if (head == MODERNBERT_HEAD_CLASSIFIER) io.cls_logits = logits;
    nc_status st = modernbert_forward(m, &io, &err);
    if (st != NC_OK) printf("  %s\n", err.msg);
    double eh = st ? INFINITY : max_err_real(hidden, r.hidden.data, r.mask.data, nl + 1, n, d, 0);
    double el = head == MODERNBERT_HEAD_NONE && !st
                    ? max_err_real(last, r.last.data, r.mask.data, 1, n, d, 0)
                    : 0;
    double eg = 0;
    if (!st && head == MODERNBERT_HEAD_MLM)
        eg = max_err_real(logits, r.logits.data, r.mask.data, 1, n, (size_t)c->vocab_size, 0);
    if (!st && head == MODERNBERT_HEAD_CLASSIFIER)
        for (size_t i = 0; i < nlog; i++)
            eg = nc_worse(eg, fabs(logits[i] - ((float *)r.logits.data)[i]));
    printf("  %s/%s (rows of %d, %d threads): max |err| hidden (all layers) %.3g, last %.3g, "
           "logits %.3g\n",
           name, sub, r.seq, threads, eh, el, eg);
    /* NECTAR_BF16=fast rounds the activations of products against bf16
     * weights to bf16: those rows are held to FAST_REL_TOL instead */
    double rh = st ? INFINITY : max_err_real(hidden, r.hidden.data, r.mask.data, nl + 1, n, d, 1);
    double rl = head == MODERNBERT_HEAD_NONE && !st
                    ? max_err_real(last, r.last.data, r.mask.data, 1, n, d, 1)
                    : 0;
    int fast = cpu_bf16_mode() == CPU_BF16_MODE_FAST;
    if (fast) printf("  fast contract: worst relative row error hidden %.3g, last %.3g\n", rh, rl);
    free(hidden);
    free(last);
    free(logits);
    ref_free(&r);
    modernbert_free(m);
    CHECK(st == NC_OK);
    if (fast)
        CHECK(rh <= FAST_REL_TOL && rl <= FAST_REL_TOL && eg <= TOL);
    else
        CHECK(eh <= TOL && el <= TOL && eg <= TOL);
}

static void check_model_packed(const char *name, const char *sub, int head, size_t pack_budget) {
    check_model_on(name, sub, head, pack_budget, TEST_THREADS);
}

static void check_model(const char *name, const char *sub, int head) {
    check_model_packed(name, sub, head, MODERNBERT_PACK_BUDGET_BYTES);
}

static void test_modernbert_mlm_legacy_thetas_matches_hf(void) {
    check_model("mb_mlm", "ref", MODERNBERT_HEAD_MLM);
}
static void test_modernbert_bare_encoder_matches_hf(void) {
    check_model("mb_base", "ref", MODERNBERT_HEAD_NONE);
}
static void test_modernbert_bf16_weights_matches_hf(void) {
    check_model("mb_bf16", "ref", MODERNBERT_HEAD_NONE);
}
/* 48-wide heads: the QKV product's 64-row blocks split heads, so the
 * epilogue stores part heads and RoPE runs as its own pass. */
static void test_modernbert_split_heads_matches_hf(void) {
    check_model("mb_hd48", "ref", MODERNBERT_HEAD_NONE);
}
static void test_mmbert_classifier_rope_parameters_matches_hf(void) {
    check_model("mm_cls", "ref", MODERNBERT_HEAD_CLASSIFIER);
}

/* ref_long: the same batches plus a row of 77 (51) tokens: several blocks
 * of 32 queries, local bands crossing block edges, pad-only query blocks. */
static void test_modernbert_long_rows_match_hf(void) {
    check_model("mb_mlm", "ref_long", MODERNBERT_HEAD_MLM);
}
static void test_mmbert_long_rows_match_hf(void) {
    check_model("mm_cls", "ref_long", MODERNBERT_HEAD_CLASSIFIER);
}

/* On tables that pack bf16 weights (AVX-512 without AMX: 68 KiB of bf16
 * panels per layer here): layers 0-1 and layer 2's Wo packed once, the
 * rest packed again on every pass; then nothing packed. */
static void test_modernbert_partly_packed_matches_hf(void) {
    check_model_packed("mb_bf16", "ref", MODERNBERT_HEAD_NONE, 150000);
    check_model_packed("mb_mlm", "ref_long", MODERNBERT_HEAD_MLM, 0);
}

/* Where every product runs on packed bf16 panels (AVX-512 without AMX),
 * each thread takes a slab of whole 12-row tiles through the layer (2
 * threads above): one thread (one slab), three (slabs that end inside
 * sequences, at rows 72 and 156 of mb_hd48's 231), five (slabs of one
 * and two tiles), and nine, where mb_bf16's 8 tiles are too few for a
 * slab per thread and the products split by columns. */
static void test_modernbert_slabs_on_other_thread_counts(void) {
    check_model_on("mb_bf16", "ref", MODERNBERT_HEAD_NONE, MODERNBERT_PACK_BUDGET_BYTES, 1);
    check_model_on("mb_hd48", "ref", MODERNBERT_HEAD_NONE, MODERNBERT_PACK_BUDGET_BYTES, 1);
    check_model_on("mb_hd48", "ref", MODERNBERT_HEAD_NONE, MODERNBERT_PACK_BUDGET_BYTES, 3);
    check_model_on("mb_bf16", "ref", MODERNBERT_HEAD_NONE, MODERNBERT_PACK_BUDGET_BYTES, 5);
    check_model_on("mb_bf16", "ref", MODERNBERT_HEAD_NONE, MODERNBERT_PACK_BUDGET_BYTES, 9);
}

/* A row alone (no padding) gives what it gave inside the padded batch, and
 * MLM logits for chosen positions equal the full computation's rows. */
static void test_modernbert_single_row_and_selected_mlm_rows(void) {
    nc_error err = {0};
    ref r;
    if (ref_load("mb_mlm", "ref", &r, 0, 1, &err)) {
        printf("  %s\n", err.msg);
        ref_free(&r);
        CHECK(0);
    }
    modernbert_model *m = NULL;
    CHECK_OK(modernbert_load(FIX "mb_mlm", TEST_THREADS, &m, &err), &err);
    const modernbert_config *c = modernbert_model_config(m);
    int b = 1, len = 0; /* row 1 is padded in the batch */
    const int32_t *mask = r.mask.data, *ids = r.ids.data;
    for (int t = 0; t < r.seq; t++)
        len += mask[b * r.seq + t];
    size_t V = (size_t)c->vocab_size;
    int rows[2] = {0, len - 1};
    float *lg = calloc(2 * V, sizeof(float));
    modernbert_io io = {.ids = ids + (size_t)b * r.seq,
                        .batch = 1,
                        .seq = len,
                        .mlm_logits = lg,
                        .mlm_rows = rows,
                        .n_mlm_rows = 2,
                        .pooling = -1};
    nc_status st = modernbert_forward(m, &io, &err);
    double e = 0;
    for (int i = 0; i < 2 && !st; i++)
        for (size_t v = 0; v < V; v++)
            e = nc_worse(e, fabs(lg[i * V + v] -
                             ((float *)r.logits.data)[((size_t)b * r.seq + rows[i]) * V + v]));
    printf("  single row of %d tokens vs padded batch (HF): max |err| %.3g\n", len, e);
    free(lg);
    ref_free(&r);
    modernbert_free(m);
    CHECK(st == NC_OK && e <= TOL);
}

static void test_modernbert_rejects_bad_batches(void) {
    nc_error err = {0};
    modernbert_model *m = NULL;
    CHECK_OK(modernbert_load(FIX "mb_base", 1, &m, &err), &err);
    int32_t ids[4] = {1, 2, 3, 100000}, mask0[4] = {0, 0, 0, 0};
    float out[4 * 64];
    modernbert_io io = {.ids = ids, .batch = 1, .seq = 4, .last = out, .pooling = -1};
    nc_status st1 = modernbert_forward(m, &io, &err);
    int ok1 = st1 == NC_ERR_INVALID && strstr(err.msg, "100000") != NULL;
    io.mask = mask0;
    ids[3] = 3;
    nc_status st2 = modernbert_forward(m, &io, &err);
    int ok2 = st2 == NC_ERR_INVALID && strstr(err.msg, "no real token") != NULL;
    io.mask = NULL;
    io.cls_logits = out;
    nc_status st3 = modernbert_forward(m, &io, &err);
    int ok3 = st3 == NC_ERR_INVALID && strstr(err.msg, "classifier") != NULL;
    modernbert_free(m);
    CHECK(ok1 && ok2 && ok3);
}

int main(void) {
    RUN(test_modernbert_mlm_legacy_thetas_matches_hf);
    RUN(test_modernbert_bare_encoder_matches_hf);
    RUN(test_modernbert_bf16_weights_matches_hf);
    RUN(test_modernbert_split_heads_matches_hf);
    RUN(test_mmbert_classifier_rope_parameters_matches_hf);
    RUN(test_modernbert_long_rows_match_hf);
    RUN(test_mmbert_long_rows_match_hf);
    RUN(test_modernbert_partly_packed_matches_hf);
    RUN(test_modernbert_slabs_on_other_thread_counts);
    RUN(test_modernbert_single_row_and_selected_mlm_rows);
    RUN(test_modernbert_rejects_bad_batches);
    return nc_test_exit_code();
}
