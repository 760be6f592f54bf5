/* Accuracy of the quantized formats on the bundled demo model: nectar
 * quantize (q8, q4) into a temporary folder, then
 *  - q8 greedy decoding reproduces HF's fp32 greedy ids (models/demo/
 *    reference.json) for 64 tokens, as the unquantized model does; so do
 *    the fp16 KV cache (bf16 and q8 weights);
 *  - over a fixed 256-token text, top-1 agreement with HF's fp32 logits
 *    (tests/fixtures/quant, tools/make_quant_fixtures.py) and the mean
 *    KL(HF || nectar) per position: q8 >= 99% (counting positions where HF's
 *    own top-2 margin is under NEAR_TIE as agreeing; >= 98% strictly) and
 *    <= 0.01; q4 within the bounds below (its figures are printed);
 *  - the same for palettized weights (src/lower/palettize.c, as `nectar
 *    compile --palettize B` writes them: every projection and the LM head,
 *    a k-means table per 16 output channels) expanded back into an fp16
 *    folder run by the CPU engine: 8 bits greedy-identical to HF, 8 and 6
 *    bits within the q8 bounds, 4 bits within the q4 ones (6 bits leaves
 *    HF's greedy path at token 17 of the second prompt: not asserted);
 *  - with NECTAR_PAL_MODEL set, a large model's palettized logits against
 *    the fp32 CPU engine on its own weights (the last test).
 * The fixture names the demo weights it was made from (SHA-256); when the
 * demo model has been retrained since, the logit comparison skips. */
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../test.h"
#include "base/json.h"
#include "base/mmap.h"
#include "bench/sha256.h"
#include "io/npy.h"
#include "io/safetensors_write.h"
#include "lower/palettize.h"
#include "lower/weights_fp16.h"
#include "models/quant_write.h"
#include "models/qwen3.h"

#define DEMO "models/demo"
#define FIX "tests/fixtures/quant"
#define GREEDY_N 64
/* q4 (Q4_0, per-block scale only) on this 4096-vocabulary demo model: the
 * measured 93.8% top-1 and mean KL 0.0076 (256 positions); the bounds
 * leave a margin for other kernel tables and summation orders. */
#define Q4_MIN_TOP1 0.90
#define Q4_MAX_KL 0.015

static char tmp_root[64];

static const char *quantized(const char *type, nc_error *err) {
    static char path[2][128];
    int i = !strcmp(type, "q4");
    if (!tmp_root[0]) {
        strcpy(tmp_root, "/tmp/nectar_quant_XXXXXX");
        if (!mkdtemp(tmp_root)) return NULL;
    }
    snprintf(path[i], sizeof path[i], "%s/%s", tmp_root, type);
    if (nc_file_exists(path[i])) return path[i];
    char mf[160];
    snprintf(mf, sizeof mf, "%s/model.safetensors", path[i]);
    if (nc_file_exists(mf)) return path[i];
    return quant_write_model(DEMO, path[i], i ? CPU_W_Q4 : CPU_W_Q8, NULL, err) == NC_OK ? path[i]
                                                                                         : NULL;
}

/* --- palettized weights, expanded back (what the bundle's
 * constexpr_lut_to_dense ops compute) into an fp16 folder --- */

#define PAL_GROUP 16

typedef struct pal_folder {
    const st_file *src;
    int n;                /* tensors written */
    st_write_tensor *out; /* names, dtypes, shapes */
    const st_tensor **from;
    lower_palette **pal; /* NULL: copied as they are */
} pal_folder;

static int is_projection(const st_tensor *t) {
    size_t n = strlen(t->name);
    return t->ndim == 2 && n > 12 && !strcmp(t->name + n - 12, "_proj.weight");
}

static nc_status pal_fill(void *ctx, int index, size_t first, size_t n, void *dst, nc_error *err) {
    (void)err;
    pal_folder *f = ctx;
    const st_tensor *t = f->from[index];
    const lower_palette *p = f->pal[index];
    if (!p) {
        size_t es = st_dtype_size(t->dtype);
        memcpy(dst, (const uint8_t *)t->data + first * es, n * es);
        return NC_OK;
    }
    size_t group_elems = t->n_elems / (size_t)p->n_groups, k = (size_t)1 << p->bits;
    nc_fp16 *o = dst;
    for (size_t i = 0; i < n; i++) {
        size_t e = first + i;
        o[i] = p->lut[e / group_elems * k + p->indices[e]];
    }
    return NC_OK;
}

/* Palettizes one tensor of the source (converted to fp16 first, as the
 * compile does) into *out. */
static nc_status pal_tensor(nc_pool *pool, const st_tensor *t, int bits, lower_palette **out,
                            nc_error *err) {
    lower_weight w = {0};
    nc_fp16 *h = malloc(t->n_elems * sizeof *h);
    lower_fp16_stats fs = {0};
    if (!h) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    nc_status st = lower_tensor_to_fp16(pool, t, 0, t->n_elems, h, &fs, err);
    w.data = h;
    lower_weight_shape4(&w, t->shape[0], t->shape[1], 1, 1);
    lower_palette_options o = {.bits = bits, .group_size = PAL_GROUP, .seed = 1};
    if (st == NC_OK) st = lower_palettize(pool, &w, &o, t->name, NULL, err);
    free(h);
    *out = w.pal;
    return st;
}

/* Model folder `src` with every projection and the LM head palettized to
 * `bits`, written to `out` (config.json + model.safetensors). A tied head is
 * written as its own lm_head.weight: the bundle palettizes the head while
 * the host's embedding lookup reads the original table. */
static nc_status write_palettized(const char *src_dir, int bits, const char *out, nc_pool *pool,
                                  nc_error *err) {
    char sp[4200], mf[4200], cf[4200];
    snprintf(sp, sizeof sp, "%s/model.safetensors", src_dir);
    snprintf(mf, sizeof mf, "%s/model.safetensors", out);
    snprintf(cf, sizeof cf, "%s/config.json", src_dir);
    st_file *src = NULL;
    json_t *cfg = NULL;
    nc_status st = st_open(sp, &src, err);
    if (st == NC_OK) st = nc_json_load_file(cf, &cfg, err);
    snprintf(cf, sizeof cf, "%s/config.json", out);
    int tied = cfg && json_is_true(json_object_get(cfg, "tie_word_embeddings"));
    pal_folder f = {0};
    int cap = src ? src->n_tensors + 1 : 0;
    f.out = calloc((size_t)cap + 1, sizeof *f.out);
    f.from = calloc((size_t)cap + 1, sizeof *f.from);
    f.pal = calloc((size_t)cap + 1, sizeof *f.pal);
    if (st == NC_OK && (!f.out || !f.from || !f.pal))
        st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int i = 0; st == NC_OK && i < cap; i++) {
        const st_tensor *t = i < src->n_tensors ? &src->tensors[i] : NULL;
        int head = !t;
        if (head && tied) t = st_find(src, "model.embed_tokens.weight");
        if (!t) break;
        st_write_tensor *o = &f.out[f.n];
        o->name = head ? "lm_head.weight" : t->name;
        o->ndim = t->ndim;
        memcpy(o->shape, t->shape, sizeof o->shape);
        o->dtype = t->dtype;
        f.from[f.n] = t;
        if (head || is_projection(t) || !strcmp(t->name, "lm_head.weight")) {
            o->dtype = ST_F16;
            st = pal_tensor(pool, t, bits, &f.pal[f.n], err);
        }
        f.n++;
    }
    if (st == NC_OK && mkdir(out, 0755) && errno != EEXIST)
        st = nc_fail(err, NC_ERR_IO, "%s: %s", out, strerror(errno));
    if (st == NC_OK && tied) json_object_set_new(cfg, "tie_word_embeddings", json_false());
    if (st == NC_OK && json_dump_file(cfg, cf, JSON_INDENT(1)))
        st = nc_fail(err, NC_ERR_IO, "%s: cannot write", cf);
    if (st == NC_OK) st = st_write_file(mf, f.out, f.n, pal_fill, &f, err);
    for (int i = 0; i < f.n; i++)
        free(f.pal[i]);
    free(f.out);
    free(f.from);
    free(f.pal);
    json_decref(cfg);
    if (src) st_close(src);
    return st;
}

/* DEMO palettized to `bits` in the temporary folder (made once). */
static const char *palettized(int bits, nc_error *err) {
    static char path[3][128];
    int slot = bits == 8 ? 0 : bits == 6 ? 1 : 2;
    if (!tmp_root[0]) {
        strcpy(tmp_root, "/tmp/nectar_quant_XXXXXX");
        if (!mkdtemp(tmp_root)) return NULL;
    }
    snprintf(path[slot], sizeof path[slot], "%s/pal%d", tmp_root, bits);
    char mf[160];
    snprintf(mf, sizeof mf, "%s/model.safetensors", path[slot]);
    if (nc_file_exists(mf)) return path[slot];
    return write_palettized(DEMO, bits, path[slot], NULL, err) == NC_OK ? path[slot] : NULL;
}

static int argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

/* Greedy ids of `n` new tokens after the prompt. */
static nc_status greedy(const char *dir, int kv_f16, const int32_t *prompt, int n_prompt, int n,
                        int32_t *out, nc_error *err) {
    qwen3_model *m;
    qwen3_state *s;
    qwen3_load_options lo = {2};
    NC_TRY(qwen3_load(dir, &lo, &m, err));
    qwen3_model_set_kv_f16(m, kv_f16);
    nc_status st = qwen3_state_new(m, n_prompt + n + 1, &s, err);
    int V = qwen3_model_config(m)->vocab_size;
    float *logits = malloc((size_t)V * sizeof(float));
    if (st == NC_OK) st = qwen3_forward(m, s, prompt, n_prompt, logits, NULL, err);
    for (int i = 0; i < n && st == NC_OK; i++) {
        out[i] = argmax(logits, V);
        st = qwen3_forward(m, s, &out[i], 1, logits, NULL, err);
    }
    free(logits);
    qwen3_state_free(s);
    qwen3_free(m);
    return st;
}

/* Greedy ids of one configuration against HF's for every long-enough
 * reference prompt; returns the prompts checked, -1 on a difference. */
static int greedy_matches_hf(const json_t *ref, const char *dir, int kv_f16, const char *name,
                             nc_error *err) {
    const json_t *prompts = json_object_get(ref, "prompts");
    int checked = 0;
    for (size_t p = 0; p < json_array_size(prompts); p++) {
        const json_t *pr = json_array_get(prompts, p), *ji = json_object_get(pr, "ids"),
                     *jg = json_object_get(pr, "greedy_ids");
        if (json_array_size(jg) < GREEDY_N) continue;
        int32_t prompt[256], got[GREEDY_N];
        int np = 0;
        for (size_t i = 0; i < json_array_size(ji) && np < 256; i++)
            prompt[np++] = (int32_t)json_integer_value(json_array_get(ji, i));
        if (greedy(dir, kv_f16, prompt, np, GREEDY_N, got, err) != NC_OK) {
            printf("  %s: %s\n", name, err->msg);
            return -1;
        }
        for (int i = 0; i < GREEDY_N; i++)
            if (got[i] != (int32_t)json_integer_value(json_array_get(jg, (size_t)i))) {
                printf("  prompt %zu: %s greedy differs from HF fp32 at token %d\n", p, name, i);
                return -1;
            }
        checked++;
    }
    return checked;
}

static void test_q8_and_fp16_kv_greedy_64_tokens_equal_hf_fp32(void) {
    if (!nc_file_exists(DEMO "/reference.json")) SKIP("models/demo has no reference.json");
    nc_error err;
    json_t *ref;
    CHECK_OK(nc_json_load_file(DEMO "/reference.json", &ref, &err), &err);
    const char *q8 = quantized("q8", &err);
    const char *p8 = q8 ? palettized(8, &err) : NULL;
    if (!p8) json_decref(ref);
    CHECK_OK(p8 ? NC_OK : NC_ERR_IO, &err);
    struct {
        const char *dir, *name;
        int kv_f16;
    } cfg[4] = {{q8, "q8", 0},
                {DEMO, "bf16 + fp16 KV", 1},
                {q8, "q8 + fp16 KV", 1},
                {p8, "palettized 8-bit", 0}};
    int checked = 0;
    for (int c = 0; c < 4 && checked >= 0; c++)
        checked = greedy_matches_hf(ref, cfg[c].dir, cfg[c].kv_f16, cfg[c].name, &err);
    json_decref(ref);
    CHECK(checked >= 0);
    if (!checked) SKIP("reference.json has no prompt with %d greedy ids", GREEDY_N);
    printf("  q8, bf16 + fp16 KV cache, q8 + fp16 KV cache, palettized 8-bit: %d prompts "
           "x %d tokens identical\n",
           checked, GREEDY_N);
}

/* HF's own top-2 margin below which the reference is a coin flip: two
 * positions of the text have margins of 0.0026 and 0.0034, and even
 * quantizing only the weights (in numpy) flips them. */
#define NEAR_TIE 0.01

typedef struct {
    double top1;      /* strict: same argmax as HF */
    double top1_ties; /* also counting nectar's pick within NEAR_TIE of HF's top logit */
    double mean_kl, max_kl;
} agreement;

/* log-softmax of n floats into double out. */
static void log_softmax(const float *x, int n, double *out) {
    double mx = x[0], s = 0;
    for (int i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++)
        s += exp((double)x[i] - mx);
    double lse = mx + log(s);
    for (int i = 0; i < n; i++)
        out[i] = (double)x[i] - lse;
}

/* The CPU engine's logits at every position of ids (malloc'd into *out). */
static nc_status all_logits(const char *dir, int kv_f16, const int32_t *ids, int n, float **out,
                            int *V, nc_error *err) {
    qwen3_model *m = NULL;
    qwen3_state *s = NULL;
    qwen3_load_options lo = {2};
    *out = NULL;
    nc_status st = qwen3_load(dir, &lo, &m, err);
    if (st == NC_OK) {
        qwen3_model_set_kv_f16(m, kv_f16);
        *V = qwen3_model_config(m)->vocab_size;
        *out = malloc((size_t)n * (size_t)*V * sizeof(float));
        if (!*out) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    if (st == NC_OK) st = qwen3_state_new(m, n, &s, err);
    if (st == NC_OK) st = qwen3_forward(m, s, ids, n, NULL, *out, err);
    qwen3_state_free(s);
    qwen3_free(m);
    return st;
}

/* Top-1 agreement and KL(ref || got) over n positions of V logits. */
static void agree_logits(const float *ref, const float *got, int n, int V, agreement *a) {
    double *lp = malloc((size_t)V * sizeof(double)), *lq = malloc((size_t)V * sizeof(double));
    int agree = 0, agree_ties = 0;
    double kl_sum = 0;
    a->max_kl = 0;
    for (int t = 0; lp && lq && t < n; t++) {
        const float *r = ref + (size_t)t * V, *q = got + (size_t)t * V;
        int ar = argmax(r, V), aq = argmax(q, V);
        agree += ar == aq;
        agree_ties += ar == aq || r[aq] >= r[ar] - NEAR_TIE;
        log_softmax(r, V, lp);
        log_softmax(q, V, lq);
        double kl = 0;
        for (int i = 0; i < V; i++)
            kl += exp(lp[i]) * (lp[i] - lq[i]);
        kl_sum += kl;
        if (kl > a->max_kl) a->max_kl = kl;
    }
    a->top1 = (double)agree / n;
    a->top1_ties = (double)agree_ties / n;
    a->mean_kl = kl_sum / n;
    free(lp);
    free(lq);
}

static nc_status compare_to_hf(const char *dir, int kv_f16, const json_t *meta, const float *ref,
                               int V, agreement *a, nc_error *err) {
    const json_t *ji = json_object_get(meta, "ids");
    int n = (int)json_array_size(ji), Vm = 0;
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        ids[i] = (int32_t)json_integer_value(json_array_get(ji, (size_t)i));
    float *logits = NULL;
    nc_status st = all_logits(dir, kv_f16, ids, n, &logits, &Vm, err);
    if (st == NC_OK && Vm != V)
        st = nc_fail(err, NC_ERR_FORMAT, "%s: %d logits, the fixture has %d", dir, Vm, V);
    if (st == NC_OK) agree_logits(ref, logits, n, V, a);
    free(ids);
    free(logits);
    return st;
}

static void test_top1_and_kl_against_hf_fp32_logits(void) {
    if (!nc_file_exists(FIX "/demo_text.json")) SKIP("no fixture: tools/make_quant_fixtures.py");
    nc_error err;
    char sha[65];
    CHECK_OK(nc_sha256_path(DEMO "/model.safetensors", sha, &err), &err);
    json_t *meta;
    CHECK_OK(nc_json_load_file(FIX "/demo_text.json", &meta, &err), &err);
    const char *want = json_string_value(json_object_get(meta, "model_sha256"));
    if (!want || strcmp(want, sha)) {
        json_decref(meta);
        SKIP("models/demo changed since the fixture; rerun tools/make_quant_fixtures.py");
    }
    nc_npy ref;
    nc_status st = nc_npy_read(FIX "/demo_logits.npy", &ref, &err);
    float *r = NULL;
    if (st == NC_OK) st = nc_npy_to_f32(&ref, &r, &err);
    if (st != NC_OK) json_decref(meta);
    CHECK_OK(st, &err);
    int V = (int)ref.shape[1];
    const char *names[8] = {"bf16 (unquantized)",
                            "q8",
                            "q4",
                            "bf16 + fp16 KV",
                            "q8 + fp16 KV",
                            "palettized 8-bit",
                            "palettized 6-bit",
                            "palettized 4-bit"};
    const char *q8 = quantized("q8", &err), *q4 = quantized("q4", &err);
    const char *p8 = palettized(8, &err), *p6 = palettized(6, &err), *p4 = palettized(4, &err);
    const char *dirs[8] = {DEMO, q8, q4, DEMO, q8, p8, p6, p4};
    agreement a[8];
    for (int i = 0; i < 8 && st == NC_OK; i++) {
        st =
            dirs[i] ? compare_to_hf(dirs[i], i == 3 || i == 4, meta, r, V, &a[i], &err) : NC_ERR_IO;
        if (st == NC_OK)
            printf("  %-18s top-1 agreement %.2f%% (%.2f%% counting HF near-ties), mean KL %.5f, "
                   "max KL %.5f (%d positions)\n",
                   names[i], 100 * a[i].top1, 100 * a[i].top1_ties, a[i].mean_kl, a[i].max_kl,
                   (int)ref.shape[0]);
    }
    nc_npy_free(&ref);
    free(r);
    json_decref(meta);
    CHECK_OK(st, &err);
    CHECK(a[0].top1 == 1.0 && a[0].mean_kl < 1e-4); /* the reference itself: exact up to fp16 */
    CHECK(a[1].top1_ties >= 0.99);
    CHECK(a[1].top1 >= 0.98);
    CHECK(a[1].mean_kl <= 0.01);
    CHECK(a[2].top1 >= Q4_MIN_TOP1);
    CHECK(a[2].mean_kl <= Q4_MAX_KL);
    CHECK(a[3].top1_ties >= 0.99 && a[3].mean_kl <= 1e-3); /* fp16 KV: ~1e-3 relative in K, V */
    /* int8 prompt activations and fp16 K, V: two roundings, 3 of 256 top-1
     * flips past HF's near-ties with the int8 GEMM (every table but scalar
     * and plain AVX2), at a mean KL 100x under the bound */
    CHECK(a[4].top1_ties >= 0.98 && a[4].top1 >= 0.98 && a[4].mean_kl <= 0.01);
    CHECK(a[5].top1_ties >= 0.99 && a[5].top1 >= 0.98 && a[5].mean_kl <= 0.01); /* as q8 */
    CHECK(a[6].top1_ties >= 0.99 && a[6].top1 >= 0.98 && a[6].mean_kl <= 0.01);
    CHECK(a[7].top1 >= Q4_MIN_TOP1 && a[7].mean_kl <= Q4_MAX_KL); /* as q4 */
}

/* A large model (the folder NECTAR_PAL_MODEL names, e.g. `nectar gen-random
 * --like qwen3-0.6b`) palettized to 8, 6 and 4 bits against the fp32 CPU
 * engine on its own weights, over 64 positions of fixed token ids. The
 * figures are printed for docs/palettization.md; 8 and 6 bits are held to
 * the q8 KL bound. Run only when NECTAR_PAL_MODEL is set (main): it writes
 * three model-sized folders, a measurement rather than a suite test. */
static void test_palettized_large_model_vs_fp32_cpu(void) {
    const char *dir = getenv("NECTAR_PAL_MODEL");
    enum { N = 64 };
    nc_error err;
    nc_pool *pool = NULL;
    CHECK_OK(nc_pool_new(0, &pool, &err), &err);
    qwen3_config cfg;
    nc_status st = qwen3_config_load(dir, &cfg, &err);
    int32_t ids[N];
    for (int i = 0; st == NC_OK && i < N; i++)
        ids[i] = (int32_t)(((uint32_t)i * 2654435761u >> 7) % (uint32_t)cfg.vocab_size);
    float *ref = NULL;
    int V = 0;
    if (st == NC_OK) st = all_logits(dir, 0, ids, N, &ref, &V, &err);
    agreement a[3] = {{0}};
    static const int widths[3] = {8, 6, 4};
    for (int w = 0; w < 3 && st == NC_OK; w++) {
        char out[160], mf[200], cf[200];
        snprintf(out, sizeof out, "%s.pal%d.tmp", dir, widths[w]);
        float *got = NULL;
        int Vg = 0;
        st = write_palettized(dir, widths[w], out, pool, &err);
        if (st == NC_OK) st = all_logits(out, 0, ids, N, &got, &Vg, &err);
        if (st == NC_OK) agree_logits(ref, got, N, V, &a[w]);
        if (st == NC_OK)
            printf("  %s palettized %d-bit: top-1 agreement %.2f%%, mean KL %.5f, max KL %.5f "
                   "(%d positions, vs the fp32 CPU engine)\n",
                   dir, widths[w], 100 * a[w].top1, a[w].mean_kl, a[w].max_kl, N);
        free(got);
        snprintf(mf, sizeof mf, "%s/model.safetensors", out);
        snprintf(cf, sizeof cf, "%s/config.json", out);
        remove(mf);
        remove(cf);
        remove(out);
    }
    free(ref);
    nc_pool_free(pool);
    CHECK_OK(st, &err);
    /* random weights give nearly flat logits: top-1 there counts near-ties
     * (6 bits scored higher than 8), so only the KL is held to the q8 bound */
    CHECK(a[0].mean_kl <= 0.01 && a[1].mean_kl <= 0.01);
}

static void remove_tree(void) {
    if (!tmp_root[0]) return;
    const char *sub[] = {"q8", "q4", "pal8", "pal6", "pal4"};
    const char *files[] = {"model.safetensors", "config.json",           "generation_config.json",
                           "tokenizer.json",    "tokenizer_config.json", "reference.json",
                           "README.md"};
    char p[256];
    for (int i = 0; i < 5; i++) {
        for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
            snprintf(p, sizeof p, "%s/%s/%s", tmp_root, sub[i], files[f]);
            remove(p);
        }
        snprintf(p, sizeof p, "%s/%s", tmp_root, sub[i]);
        remove(p);
    }
    remove(tmp_root);
}

int main(void) {
    RUN(test_q8_and_fp16_kv_greedy_64_tokens_equal_hf_fp32);
    RUN(test_top1_and_kl_against_hf_fp32_logits);
    /* an opt-in measurement at a real model size, not part of the suite */
    const char *large = getenv("NECTAR_PAL_MODEL");
    if (large && *large) RUN(test_palettized_large_model_vs_fp32_cpu);
    remove_tree();
    return nc_test_exit_code();
}
