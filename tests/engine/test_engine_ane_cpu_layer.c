/* A layer the device refuses at every rung runs whole on the CPU engine's
 * kernels (docs/engine.md, "A refused layer on the CPU engine's kernels"):
 * under fake:reject=all every layer of models/demo (Qwen3, on the bundle's
 * own fp16 weight.bin blobs) and of a Qwen3.5 fixture (linear and
 * full-attention layers, on the checkpoint's weights) is on the family's
 * CPU decoder, fp32 arithmetic, between the fake device's fp16 surfaces. Checked against
 * independent references: the cpu engine's hidden state after every layer
 * (fp32 from the checkpoint, itself tested against HF) within the fp16
 * rounding of each layer's output surface, and HF transformers' greedy ids
 * (reference.json). A truncation of the Qwen3.5 sequence (reset + replay
 * from position 0) gives the first pass's logits again bit for bit. With
 * ane_cpu = interp the same layers run on the MIL interpreter instead
 * (the placement says which). The ladder stops before its relower rung
 * (a probe profile's ladder_order), which would put models/demo's refused
 * kernels back on the fake device in another form. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/bundle_ref.h"
#include "../test.h"
#include "engine/engine.h"
#include "engine/engine_options.h"

#define Q35 "tests/fixtures/qwen35/tiny_vl_tied"
#define MAX_LAYERS 8
#define MAX_ROWS 128

static char root[256], demo_bundle[256], q35_bundle[256];

/* Every layer's rows, in the order the hook saw them. */
typedef struct layer_rec {
    int width, rows[MAX_LAYERS];
    float *data[MAX_LAYERS];
} layer_rec;

static void record(void *user, int layer, const float *rows, int n, int width) {
    layer_rec *r = user;
    if (layer < 0 || layer >= MAX_LAYERS || r->rows[layer] + n > MAX_ROWS) return;
    if (!r->data[layer]) r->data[layer] = calloc((size_t)MAX_ROWS * width, sizeof(float));
    if (!r->data[layer]) return;
    r->width = width;
    memcpy(r->data[layer] + (size_t)r->rows[layer] * width, rows, (size_t)n * width * sizeof *rows);
    r->rows[layer] += n;
}

static void rec_free(layer_rec *r) {
    for (int l = 0; l < MAX_LAYERS; l++)
        free(r->data[l]);
}

static engine *open_engine(const char *kind, const char *dir, const char *device,
                           const char *ane_cpu) {
    nc_error err = {0};
    engine_options opt = {.n_threads = 1};
    engine *e = NULL;
    if ((device && engine_option_set(&opt, "ane_device", device, "test", &err)) ||
        (ane_cpu && engine_option_set(&opt, "ane_cpu", ane_cpu, "test", &err)) ||
        engine_open(kind, dir, &opt, &e, &err)) {
        printf("  %s %s: %s\n", kind, dir, err.msg);
        return NULL;
    }
    return e;
}

/* prompt ids[0..n), then greedy tokens until `total` tokens went in; every
 * layer's rows into rec, the greedy ids into gen, the last logits into
 * last. */
static int run_greedy(engine *e, const int32_t *ids, int n, int total, layer_rec *rec, int *gen,
                      float *last) {
    nc_error err = {0};
    if (rec && engine_set_layer_hook(e, record, rec, &err)) {
        printf("  %s: %s\n", e->kind, err.msg);
        return 0;
    }
    engine_seq *s = NULL;
    float *logits = malloc((size_t)e->n_vocab * sizeof *logits);
    int ok = logits && engine_seq_new(e, 0, &s, &err) == NC_OK;
    int32_t tok[MAX_ROWS];
    memcpy(tok, ids, (size_t)n * sizeof *tok);
    for (int done = 0, k = 0; ok && done < total; k++) {
        int take = done == 0 ? n : 1;
        ok = engine_forward(e, s, tok + done, take, logits, &err) == NC_OK;
        done += take;
        if (ok && done < total) tok[done] = gen[k] = nc_test_argmax(logits, e->n_vocab);
    }
    if (!ok) printf("  %s: %s\n", e->kind, err.msg);
    if (ok && last) memcpy(last, logits, (size_t)e->n_vocab * sizeof *logits);
    if (s) engine_seq_free(e, s);
    free(logits);
    return ok;
}

/* max |a - b| over every layer's rows, relative to max |b| of that layer. */
static double worst_layer_error(const layer_rec *a, const layer_rec *b, int layers, int *worst) {
    double w = 0;
    for (int l = 0; l < layers; l++) {
        if (!a->data[l] || !b->data[l] || a->rows[l] != b->rows[l] || a->width != b->width)
            return INFINITY;
        double diff = 0, scale = 0;
        for (size_t i = 0; i < (size_t)a->rows[l] * a->width; i++) {
            diff = fmax(diff, fabs((double)a->data[l][i] - b->data[l][i]));
            scale = fmax(scale, fabs((double)b->data[l][i]));
        }
        if (diff / scale > w) {
            w = diff / scale;
            *worst = l;
        }
    }
    return w;
}

/* The fp16 rounding of each layer's input and output surface (2^-11
 * relative), compounded over the layers (measured: 4.3e-4 on models/demo,
 * 3.0e-3 on the Qwen3.5 fixture, printed before the PASS line). */
#define LAYER_TOL 1e-2

static void layers_match_cpu(const char *model, const char *bundle, const char *kind_cpu,
                             const char *kind_ane, const char *source, const int32_t *ids, int n,
                             int total) {
    layer_rec cpu = {0}, ane = {0};
    int gen_cpu[MAX_ROWS] = {0}, gen_ane[MAX_ROWS] = {0}, worst = -1;
    engine *c = open_engine(kind_cpu, model, NULL, NULL);
    engine *a = open_engine(kind_ane, bundle, "fake:reject=all", NULL);
    CHECK(c && a);
    CHECKF(strstr(a->placement, "CPU engine kernels (layer_00/model.mil refused: ") &&
               !strstr(a->placement, "on the CPU ("),
           "placement: %s", a->placement);
    CHECKF(strstr(a->placement, source), "placement: %s", a->placement);
    CHECK(run_greedy(c, ids, n, total, &cpu, gen_cpu, NULL));
    CHECK(run_greedy(a, ids, n, total, &ane, gen_ane, NULL));
    double w = worst_layer_error(&ane, &cpu, c->n_layers, &worst);
    CHECKF(w < LAYER_TOL, "%s: layer %d differs from the cpu engine's by %.3g (relative)",
           kind_ane, worst, w);
    printf("  %s: every layer within %.2g of the cpu engine's (worst: layer %d)\n", kind_ane, w,
           worst);
    for (int k = 0; k < total - n; k++)
        CHECKF(gen_ane[k] == gen_cpu[k], "%s step %d: %d, cpu %d", kind_ane, k, gen_ane[k],
               gen_cpu[k]);
    rec_free(&cpu);
    rec_free(&ane);
    engine_close(c);
    engine_close(a);
}

static void test_qwen3_refused_layers_on_cpu_kernels_match_cpu_engine(void) {
    CHECK(demo_bundle[0] || nc_test_compile_bundle(root, sizeof root, "cpulayer", "models/demo",
                                                   "demo", demo_bundle, sizeof demo_bundle, 256,
                                                   4, 0, 0));
    int32_t ids[40];
    for (int i = 0; i < 40; i++) /* a prompt over two chunks of 32 once decoding */
        ids[i] = (int32_t)(7 + 37 * i) % 1000;
    layers_match_cpu("models/demo", demo_bundle, "qwen3-cpu", "qwen3-ane",
                     "CPU engine kernels on the bundle's fp16 weights", ids, 40, 72);
}

static int compile_q35(void) {
    return q35_bundle[0] || nc_test_compile_bundle(root, sizeof root, "cpulayer", Q35, "q35",
                                                   q35_bundle, sizeof q35_bundle, 128, 4, 0, 0);
}

/* The bundle, and prompt `which` of the fixture with HF's first n_greedy
 * greedy ids. */
static int q35_prompt(int which, int n_greedy, int32_t *in, int *n, int *greedy) {
    int ids[64];
    if (!compile_q35() || !nc_test_load_prompt(Q35, which, 64, n_greedy, ids, n, greedy)) return 0;
    for (int i = 0; i < *n; i++)
        in[i] = ids[i];
    return 1;
}

static void test_qwen35_refused_layers_on_cpu_kernels_match_cpu_engine_and_hf(void) {
    int32_t in[64];
    int n = 0, greedy[24];
    CHECK(q35_prompt(1, 24, in, &n, greedy));
    layers_match_cpu(Q35, q35_bundle, "qwen35-cpu", "qwen35-ane",
                     "CPU engine kernels on the checkpoint's weights", in, n, n + 24);
    /* HF's greedy ids, an independent reference */
    engine *a = open_engine("qwen35-ane", q35_bundle, "fake:reject=all", NULL);
    int gen[MAX_ROWS] = {0};
    CHECK(a && run_greedy(a, in, n, n + 24, NULL, gen, NULL));
    for (int k = 0; k < 24; k++)
        CHECKF(gen[k] == greedy[k], "step %d: %d, HF %d", k, gen[k], greedy[k]);
    engine_close(a);
}

/* A truncation resets the recurrent states and replays from position 0:
 * the CPU decoder's layer state restarts there too. */
static void test_qwen35_truncation_replays_cpu_layers(void) {
    int32_t in[64];
    int n = 0, greedy[1];
    CHECK(q35_prompt(1, 1, in, &n, greedy));
    engine *a = open_engine("qwen35-ane", q35_bundle, "fake:reject=all", NULL);
    CHECK(a);
    nc_error err = {0};
    engine_seq *s = NULL;
    size_t V = (size_t)a->n_vocab;
    float *first = malloc(V * sizeof(float)), *again = malloc(V * sizeof(float));
    CHECK(first && again);
    CHECK_OK(engine_seq_new(a, 0, &s, &err), &err);
    CHECK_OK(engine_forward(a, s, in, n, first, &err), &err);
    int32_t more[3] = {5, 9, 11};
    CHECK_OK(engine_forward(a, s, more, 3, again, &err), &err);
    CHECK(engine_seq_truncate(a, s, n - 5) == n - 5);
    CHECK_OK(engine_forward(a, s, in + n - 5, 5, again, &err), &err);
    CHECKF(memcmp(first, again, V * sizeof(float)) == 0,
           "the replay after a truncation differs from the first pass");
    engine_seq_free(a, s);
    engine_close(a);
    free(first);
    free(again);
}

/* ane_cpu = interp: the refused kernels in the MIL interpreter, as before;
 * the same greedy ids. */
static void test_interp_option_keeps_the_interpreter(void) {
    int32_t in[64];
    int n = 0, greedy[8];
    CHECK(q35_prompt(0, 8, in, &n, greedy));
    engine *a = open_engine("qwen35-ane", q35_bundle, "fake:reject=all", "interp");
    CHECK(a);
    CHECKF(!strstr(a->placement, "CPU engine kernels") && strstr(a->placement, " on the CPU ("),
           "placement: %s", a->placement);
    nc_error err = {0};
    CHECK(engine_set_layer_hook(a, record, NULL, &err) != NC_OK); /* device layers: none */
    int gen[MAX_ROWS] = {0};
    CHECK(run_greedy(a, in, n, n + 8, NULL, gen, NULL));
    for (int k = 0; k < 8; k++)
        CHECKF(gen[k] == greedy[k], "step %d: %d, HF %d", k, gen[k], greedy[k]);
    engine_close(a);
    engine_options o = {0};
    CHECK(engine_option_set(&o, "ane_cpu", "fast", "NECTAR_ANE_CPU", &err) == NC_ERR_INVALID);
    CHECKF(strstr(err.msg, "NECTAR_ANE_CPU: 'fast' is not one of kernels|interp"), "%s", err.msg);
}

/* A probe profile whose ladder stops before the relower rung (which puts
 * models/demo's refused attn back on the fake device): the refused layers
 * stay refused. Returns 1 on success. */
static int profile_without_relower(char *path, size_t cap) {
    snprintf(path, cap, "/tmp/nectar_cpulayer_profile_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    static const char order[] = "{\"ladder_order\": [\"program\", \"function\", \"outputs\", \"cpu\"]}";
    int ok = write(fd, order, sizeof order - 1) == (ssize_t)(sizeof order - 1);
    close(fd);
    return ok && setenv("NECTAR_ANE_PROFILE", path, 1) == 0;
}

int main(void) {
    char profile[64];
    if (!profile_without_relower(profile, sizeof profile)) {
        printf("FAIL cannot write a probe profile\n");
        return 1;
    }
    RUN(test_qwen3_refused_layers_on_cpu_kernels_match_cpu_engine);
    RUN(test_qwen35_refused_layers_on_cpu_kernels_match_cpu_engine_and_hf);
    RUN(test_qwen35_truncation_replays_cpu_layers);
    RUN(test_interp_option_keeps_the_interpreter);
    nc_test_remove_root(root);
    unlink(profile);
    return nc_test_exit_code();
}
