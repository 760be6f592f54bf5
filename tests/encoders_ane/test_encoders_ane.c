/* Encoders on the ANE path: the lowered ModernBERT program (compile of the
 * tiny HF fixtures), run by the fp16 interpreter, against the CPU engine
 * through the parity gate and against HF's own outputs (ref/ arrays, written
 * by tools/make_modernbert_fixtures.py); the gate must CATCH deliberately
 * wrong transforms (softmax over the query axis, RoPE across all heads);
 * the same bundle on the fake ANE device through the ane_host runner. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "ane_host/ane_fake.h"
#include "engine/engine_parity.h"
#include "io/npy.h"
#include "bundle/bundle_io.h"
#include "lower/modernbert_compile.h"
#include "bundle/modernbert_manifest.h"
#include "engine/modernbert_bundle_host.h"
#include "mil/check.h"
#include "mil/parse.h"

#define FIX "tests/fixtures/modernbert/"

typedef struct fixture {
    int32_t *ids, *mask;
    int n, seq;
} fixture;

static nc_status load_fixture(const char *name, fixture *f, nc_error *err) {
    char p[512];
    nc_npy a = {0}, m = {0};
    snprintf(p, sizeof p, FIX "%s/ref/input_ids.npy", name);
    NC_TRY(nc_npy_read(p, &a, err));
    snprintf(p, sizeof p, FIX "%s/ref/attention_mask.npy", name);
    nc_status st = nc_npy_read(p, &m, err);
    if (!st && (a.dtype != NC_NPY_I32 || m.dtype != NC_NPY_I32 || a.ndim != 2))
        st = nc_fail(err, NC_ERR_FORMAT, "%s: int32 [N, S] expected", name);
    if (!st) {
        f->n = (int)a.shape[0];
        f->seq = (int)a.shape[1];
        f->ids = a.data;
        f->mask = m.data;
        a.data = m.data = NULL;
    }
    nc_npy_free(&a);
    nc_npy_free(&m);
    return st;
}

static void fixture_free(fixture *f) {
    free(f->ids);
    free(f->mask);
}

/* Compiles fixture `name` into a fresh bundle under /tmp; returns its path. */
static nc_status compile(const char *name, const mb_lower_options *lo, int small, char *out,
                         size_t cap, nc_error *err) {
    static int counter;
    snprintf(out, cap, "/tmp/nectar_test_enc_%ld_%d.ane", (long)getpid(), counter++);
    char dir[512];
    snprintf(dir, sizeof dir, FIX "%s", name);
    mb_compile_options o;
    memset(&o, 0, sizeof o);
    o.model_dir = dir;
    o.out_dir = out;
    o.n_threads = 1;
    if (small) { /* one bucket, one batch: the fastest bundle that holds 3 x 32 */
        o.n_seqs = 1;
        o.seqs[0] = 32;
        o.n_batches = 1;
        o.batches[0] = 3;
    }
    if (lo) o.lower = *lo;
    mb_compile_report r;
    return lower_modernbert_compile(&o, &r, err);
}

/* The gate on fixture `name` for a bundle compiled with `lo`: the CPU
 * engine on the folder against the bundle's mil engine, as nectar parity. */
static nc_status gate(const char *name, const mb_lower_options *lo, engine_parity_report *rep,
                      nc_error *err) {
    char bundle[256], dir[256];
    snprintf(dir, sizeof dir, FIX "%s", name);
    fixture f = {0};
    NC_TRY(load_fixture(name, &f, err));
    engine *cpu = NULL, *mil = NULL;
    engine_options eo = {0};
    eo.n_threads = 1;
    nc_status st = compile(name, lo, 1, bundle, sizeof bundle, err);
    if (!st) st = engine_open("modernbert-cpu", dir, &eo, &cpu, err);
    if (!st) st = engine_open("modernbert-mil", bundle, &eo, &mil, err);
    if (!st) st = engine_parity_run(cpu, mil, f.ids, f.mask, f.n, f.seq, 2, rep, err);
    engine_close(mil);
    engine_close(cpu);
    lower_remove_tree(bundle);
    fixture_free(&f);
    return st;
}

static void check_passes(const char *name) {
    nc_error err = {0};
    engine_parity_report rep;
    CHECK_OK(gate(name, NULL, &rep, &err), &err);
    if (!rep.passed) engine_parity_print(&rep, stdout);
    CHECKF(rep.passed, "%s: %s", name, rep.why);
    CHECK(rep.is_finite && rep.is_deterministic);
    CHECK(rep.n_agree == rep.n_decisions);
    CHECK(rep.max_prob_drift <= ENGINE_PARITY_MAX_DRIFT);
    /* the hidden states stay within 1% of their scale at every layer */
    for (int l = 0; l < rep.n_hidden; l++)
        CHECKF(rep.layer_max[l] <= 0.01 * rep.layer_ref_max[l] + 1e-6,
               "layer %d: max error %g, "
               "scale %g",
               l, rep.layer_max[l], rep.layer_ref_max[l]);
    engine_parity_report_free(&rep);
}

static void test_fp16_interpreter_passes_gate_on_modernbert_mlm(void) {
    check_passes("mb_mlm");
}
static void test_fp16_interpreter_passes_gate_on_mmbert_classifier(void) {
    check_passes("mm_cls");
}
static void test_fp16_interpreter_passes_gate_on_modernbert_embeddings(void) {
    check_passes("mb_base");
}

/* The wrong transform must fail the gate, and the per-layer report must
 * point at layer 1 (the first layer's output) as where the error appears. */
static void check_caught(const char *name, const mb_lower_options *lo) {
    nc_error err = {0};
    engine_parity_report rep;
    CHECK_OK(gate(name, lo, &rep, &err), &err);
    CHECKF(!rep.passed, "%s: the gate passed a wrong transform", name);
    CHECK(rep.n_agree < rep.n_decisions || rep.max_prob_drift > ENGINE_PARITY_MAX_DRIFT);
    CHECK(rep.layer_max[0] == 0); /* the embeddings are the host's: identical */
    CHECKF(rep.layer_max[1] > 0.05 * rep.layer_ref_max[1], "layer 1 error %g", rep.layer_max[1]);
    engine_parity_report_free(&rep);
}

static void test_gate_catches_softmax_over_query_axis(void) {
    mb_lower_options lo = {0};
    lo.wrong_softmax_axis = 1;
    check_caught("mb_mlm", &lo);
    check_caught("mm_cls", &lo);
}

static void test_gate_catches_rope_halves_across_all_heads(void) {
    mb_lower_options lo = {0};
    lo.wrong_rope_across_heads = 1;
    check_caught("mb_mlm", &lo);
    check_caught("mm_cls", &lo);
}

/* The concat switch: Wo per head, summed, is the same function (the gate
 * passes) and the program holds no concat. */
static void test_concat_free_variant_passes_gate(void) {
    mb_lower_options lo = {0};
    lo.no_concat = 1;
    nc_error err = {0};
    char bundle[256], path[512];
    CHECK_OK(compile("mm_cls", &lo, 1, bundle, sizeof bundle, &err), &err);
    snprintf(path, sizeof path, "%s/encoder/model.mil", bundle);
    mil_program *prog = NULL;
    CHECK_OK(mil_parse_file(path, &prog, &err), &err);
    int n_concat = 0, n_conv = 0;
    for (int f = 0; f < prog->n_functions; f++)
        for (int k = 0; k < prog->functions[f]->n_ops; k++) {
            n_concat += !strcmp(prog->functions[f]->ops[k]->type, "concat");
            n_conv += !strcmp(prog->functions[f]->ops[k]->type, "conv");
        }
    mil_program_free(prog);
    lower_remove_tree(bundle);
    CHECK(n_concat == 0 && n_conv > 0);
    engine_parity_report rep;
    CHECK_OK(gate("mm_cls", &lo, &rep, &err), &err);
    CHECKF(rep.passed, "%s", rep.why);
    engine_parity_report_free(&rep);
    CHECK_OK(gate("mb_mlm", &lo, &rep, &err), &err);
    CHECKF(rep.passed, "%s", rep.why);
    engine_parity_report_free(&rep);
}

/* The encoder on the ANE path (modernbert-ane: the ane_host runner on the
 * fake device) gives the mil backend's last hidden states and logits bit
 * for bit (both are the fp16 interpreter, behind fp16 surfaces here), over
 * the default plan (3 buckets x 2 batches: the runner binds the six
 * functions by name, mm_cls's with mask_local); every layer's states are
 * refused in one line (the device returns the last layer only). */
static void check_ane_fake_equals_mil(const char *bundle, const fixture *f, const float *last,
                                      size_t n_last, const float *logits, size_t n_logits) {
    nc_error err = {0};
    engine_options eo = {.n_threads = 1, .ane_device = ENGINE_ANE_FAKE};
    engine *e = NULL;
    long opened = ane_fake_models_opened();
    CHECK_OK(engine_open("modernbert-ane", bundle, &eo, &e, &err), &err);
    CHECK(ane_fake_models_opened() == opened + 1); /* the program went to the device */
    float *l2 = calloc(n_last, sizeof *l2), *g2 = calloc(n_logits, sizeof *g2);
    float *hidden = calloc(n_last * (size_t)(e->n_layers + 1), sizeof *hidden);
    modernbert_io io = {0};
    io.ids = f->ids;
    io.mask = f->mask;
    io.batch = f->n;
    io.seq = f->seq;
    io.pooling = -1;
    io.last = l2;
    if (e->encoder->head == MODERNBERT_HEAD_MLM)
        io.mlm_logits = g2;
    else
        io.cls_logits = g2;
    CHECK_OK(engine_encode(e, &io, &err), &err);
    CHECKF(!memcmp(last, l2, n_last * sizeof *l2), "%s: last hidden states differ", bundle);
    CHECKF(!memcmp(logits, g2, n_logits * sizeof *g2), "%s: logits differ", bundle);
    io.hidden = hidden;
    CHECK(engine_encode(e, &io, &err) == NC_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "last layer only") && !strchr(err.msg, '\n'));
    free(hidden);
    free(l2);
    free(g2);
    engine_close(e);
}

/* The mil backend against HF itself (not the CPU engine): hidden states at
 * real positions and the head's logits, within fp16 tolerance (2% of the
 * largest |value| of the reference); the ANE path on the fake device gives
 * the same. */
static void test_mil_and_ane_fake_backends_match_hf_outputs(void) {
    const char *names[] = {"mb_mlm", "mm_cls"};
    for (int k = 0; k < 2; k++) {
        nc_error err = {0};
        fixture f = {0};
        char bundle[256], p[512];
        CHECK_OK(load_fixture(names[k], &f, &err), &err);
        CHECK_OK(compile(names[k], NULL, 0, bundle, sizeof bundle, &err), &err);
        mb_run *mil = NULL;
        CHECK_OK(mb_run_open(bundle, 1, &mil, &err), &err);
        const modernbert_config *c = mb_run_config(mil);
        int D = c->hidden_size, NL = c->num_hidden_layers + 1;
        size_t rows = (size_t)f.n * f.seq;
        int is_mlm = c->head == MODERNBERT_HEAD_MLM;
        size_t n_logits = is_mlm ? rows * c->vocab_size : (size_t)f.n * c->num_labels;
        float *hidden = calloc((size_t)NL * rows * D, sizeof *hidden);
        float *logits = calloc(n_logits, sizeof *logits);
        modernbert_io io = {0};
        io.ids = f.ids;
        io.mask = f.mask;
        io.batch = f.n;
        io.seq = f.seq;
        io.hidden = hidden;
        io.pooling = -1;
        if (is_mlm)
            io.mlm_logits = logits;
        else
            io.cls_logits = logits;
        CHECK_OK(mb_run_forward(mil, &io, &err), &err);
        nc_npy hr = {0}, lr = {0};
        snprintf(p, sizeof p, FIX "%s/ref/hidden.npy", names[k]);
        CHECK_OK(nc_npy_read(p, &hr, &err), &err);
        snprintf(p, sizeof p, FIX "%s/ref/logits.npy", names[k]);
        CHECK_OK(nc_npy_read(p, &lr, &err), &err);
        CHECK(hr.count == (size_t)NL * rows * D && lr.count == n_logits);
        const float *h = hr.data, *lg = lr.data;
        for (int l = 0; l < NL; l++) {
            double mx = 0, ref = 0;
            for (size_t r = 0; r < rows; r++) {
                if (!f.mask[r]) continue;
                for (int d = 0; d < D; d++) {
                    size_t i = ((size_t)l * rows + r) * D + d;
                    mx = nc_worse(mx, fabs((double)h[i] - hidden[i]));
                    ref = fmax(ref, fabs(h[i]));
                }
            }
            CHECKF(mx <= 0.02 * ref, "%s layer %d: max error %g, scale %g", names[k], l, mx, ref);
        }
        double mx = 0, ref = 0;
        for (size_t r = 0; r < (is_mlm ? rows : (size_t)f.n); r++) {
            if (is_mlm && !f.mask[r]) continue;
            int w = is_mlm ? c->vocab_size : c->num_labels;
            for (int v = 0; v < w; v++) {
                size_t i = r * w + v;
                mx = nc_worse(mx, fabs((double)lg[i] - logits[i]));
                ref = fmax(ref, fabs(lg[i]));
            }
        }
        CHECKF(mx <= 0.02 * ref, "%s logits: max error %g, scale %g", names[k], mx, ref);
        check_ane_fake_equals_mil(bundle, &f, hidden + (size_t)(NL - 1) * rows * D, rows * D,
                                  logits, n_logits);
        nc_npy_free(&hr);
        nc_npy_free(&lr);
        free(hidden);
        free(logits);
        mb_run_free(mil);
        lower_remove_tree(bundle);
        fixture_free(&f);
    }
}

static int is_forbidden(const char *type) {
    static const char *const bad[] = {"scatter",
                                      "scatter_along_axis",
                                      "scatter_nd",
                                      "slice_update",
                                      "read_state",
                                      "write_state",
                                      "scaled_dot_product_attention",
                                      "gather",
                                      "gather_along_axis",
                                      "gelu",
                                      "reduce_mean",
                                      "tile",
                                      "layer_norm",
                                      NULL};
    for (int i = 0; bad[i]; i++)
        if (!strcmp(type, bad[i])) return 1;
    return 0;
}

/* Default plan (buckets 64/96/128 x batches 1/3): six functions in one
 * program, zero ANE-rule errors, no forbidden op, every I/O fp16 with a last
 * axis that is a multiple of 32, the manifest naming each function. */
static void test_bundle_programs_pass_ane_rules(void) {
    nc_error err = {0};
    char bundle[256], path[512];
    CHECK_OK(compile("mm_cls", NULL, 0, bundle, sizeof bundle, &err), &err);
    mb_manifest man;
    CHECK_OK(mb_manifest_read(bundle, &man, &err), &err);
    CHECK(man.n_seqs == 3 && man.seqs[0] == 64 && man.seqs[2] == 128);
    CHECK(man.n_batches == 2 && man.batches[0] == 1 && man.batches[1] == 3);
    CHECK(man.program.n_fns == 6);
    CHECK(mb_manifest_is_encoder(bundle));
    snprintf(path, sizeof path, "%s/%s", bundle, man.program.path);
    mil_program *prog = NULL;
    CHECK_OK(mil_parse_file(path, &prog, &err), &err);
    mil_check_options co = {1, NULL, NULL};
    mil_diagnostics d = {0};
    CHECK_OK(mil_check_program(prog, &co, &d, &err), &err);
    int n_err = d.n_errors;
    mil_diagnostics_free(&d);
    CHECKF(n_err == 0, "%d ANE-rule errors", n_err);
    CHECK(prog->n_functions == 6);
    for (int f = 0; f < prog->n_functions; f++) {
        const mil_function *fn = prog->functions[f];
        for (int k = 0; k < fn->n_ops; k++)
            CHECKF(!is_forbidden(fn->ops[k]->type), "%s: op %s", fn->name, fn->ops[k]->type);
        for (int io = 0; io < fn->n_inputs + fn->n_outputs; io++) {
            const mil_var *v = io < fn->n_inputs ? fn->inputs[io] : fn->outputs[io - fn->n_inputs];
            const mil_type *t = v->type;
            CHECK(t->dtype == MIL_DT_FP16 && t->rank == 4);
            int64_t w = t->dims[t->rank - 1];
            CHECKF(w >= 32 && w % 32 == 0, "%s: %s last axis %lld", fn->name, v->name,
                   (long long)w);
        }
        /* mm_cls has local layers and a window of 16: every bucket needs the band */
        CHECK(fn->n_inputs == 3 && fn->n_outputs == 1);
    }
    mil_program_free(prog);
    lower_remove_tree(bundle);
}

/* One compiled batch of 1 forces three chunks; the result is the same
 * function of each row as the batch-3 program's (bitwise: each column is
 * computed alone). Longer inputs than the largest bucket are refused. */
static void test_batches_chunk_and_buckets_bound_the_input(void) {
    nc_error err = {0};
    fixture f = {0};
    CHECK_OK(load_fixture("mb_mlm", &f, &err), &err);
    char b3[256], b1[256];
    CHECK_OK(compile("mb_mlm", NULL, 1, b3, sizeof b3, &err), &err);
    mb_compile_options o;
    memset(&o, 0, sizeof o);
    o.model_dir = FIX "mb_mlm";
    snprintf(b1, sizeof b1, "%s.b1", b3);
    o.out_dir = b1;
    o.n_seqs = 1;
    o.seqs[0] = 32;
    o.n_batches = 1;
    o.batches[0] = 1;
    mb_compile_report r;
    CHECK_OK(lower_modernbert_compile(&o, &r, &err), &err);
    mb_run *m3 = NULL, *m1 = NULL;
    CHECK_OK(mb_run_open(b3, 1, &m3, &err), &err);
    CHECK_OK(mb_run_open(b1, 1, &m1, &err), &err);
    int D = mb_run_config(m3)->hidden_size;
    size_t n = (size_t)f.n * f.seq * D;
    float *l3 = calloc(n, sizeof *l3), *l1 = calloc(n, sizeof *l1);
    modernbert_io io = {0};
    io.ids = f.ids;
    io.mask = f.mask;
    io.batch = f.n;
    io.seq = f.seq;
    io.pooling = -1;
    io.last = l3;
    CHECK_OK(mb_run_forward(m3, &io, &err), &err);
    CHECK(mb_run_crossings(m3) == 4); /* x, mask_global, mask_local in; hidden out */
    io.last = l1;
    CHECK_OK(mb_run_forward(m1, &io, &err), &err);
    CHECK(mb_run_crossings(m1) == 12);
    CHECK(!memcmp(l1, l3, n * sizeof *l1));
    /* 33 tokens do not fit the 32 bucket */
    int32_t ids[33], mask[33];
    for (int i = 0; i < 33; i++)
        ids[i] = f.ids[i % f.seq], mask[i] = 1;
    float *big = calloc((size_t)33 * D, sizeof *big);
    io.ids = ids;
    io.mask = mask;
    io.batch = 1;
    io.seq = 33;
    io.last = big;
    CHECK(mb_run_forward(m1, &io, &err) == NC_ERR_RANGE);
    CHECK(strstr(err.msg, "bucket") != NULL);
    /* a row of padding only is refused, as by the CPU engine */
    memset(mask, 0, sizeof mask);
    io.seq = 32;
    CHECK(mb_run_forward(m1, &io, &err) == NC_ERR_INVALID);
    free(big);
    free(l1);
    free(l3);
    mb_run_free(m1);
    mb_run_free(m3);
    lower_remove_tree(b1);
    lower_remove_tree(b3);
    fixture_free(&f);
}

/* Bad compile requests fail with one line and leave no bundle. */
static void test_compile_errors_leave_nothing(void) {
    nc_error err = {0};
    mb_compile_options o;
    memset(&o, 0, sizeof o);
    o.model_dir = FIX "mb_mlm";
    char out[256];
    snprintf(out, sizeof out, "/tmp/nectar_test_enc_bad_%ld.ane", (long)getpid());
    o.out_dir = out;
    o.n_seqs = 1;
    o.seqs[0] = 48;
    mb_compile_report r;
    CHECK(lower_modernbert_compile(&o, &r, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "multiple of 32") != NULL);
    CHECK(access(out, F_OK) != 0);
    o.seqs[0] = 1024; /* above max_position_embeddings 512 */
    CHECK(lower_modernbert_compile(&o, &r, &err) == NC_ERR_INVALID);
    CHECK(access(out, F_OK) != 0);
    o.n_seqs = 0;
    o.model_dir = FIX "no_such_model";
    CHECK(lower_modernbert_compile(&o, &r, &err) != NC_OK);
    CHECK(access(out, F_OK) != 0);
}

/* The manifest reader refuses what it cannot trust. */
static void test_manifest_rejects_bad_input(void) {
    nc_error err = {0};
    mb_manifest m;
    const char *bad[] = {
        "{}",
        "{\"format\":\"nectar-ane-bundle\",\"format_version\":1,\"model\":{\"model_type\":"
        "\"qwen3\"}}",
        "{\"format\":\"nectar-ane-bundle\",\"format_version\":2}",
        "[1,2]",
        "{\"format\":\"nectar-ane-bundle\",\"format_version\":1,\"model\":{\"model_type\":"
        "\"modernbert\","
        "\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":2,\"head_dim\":32,"
        "\"vocab_size\":10},\"checkpoint\":{\"dir\":\"/"
        "x\"},\"plan\":{\"buckets\":[48],\"batches\":[1],"
        "\"crossings_per_call\":3},\"programs\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECKF(mb_manifest_parse(bad[i], strlen(bad[i]), "m.json", &m, &err) != NC_OK, "case %zu",
               i);
        CHECK(strstr(err.msg, "m.json") != NULL);
    }
}

int main(void) {
    RUN(test_bundle_programs_pass_ane_rules);
    RUN(test_fp16_interpreter_passes_gate_on_modernbert_mlm);
    RUN(test_fp16_interpreter_passes_gate_on_mmbert_classifier);
    RUN(test_fp16_interpreter_passes_gate_on_modernbert_embeddings);
    RUN(test_gate_catches_softmax_over_query_axis);
    RUN(test_gate_catches_rope_halves_across_all_heads);
    RUN(test_concat_free_variant_passes_gate);
    RUN(test_mil_and_ane_fake_backends_match_hf_outputs);
    RUN(test_batches_chunk_and_buckets_bound_the_input);
    RUN(test_compile_errors_leave_nothing);
    RUN(test_manifest_rejects_bad_input);
    return nc_test_exit_code();
}
