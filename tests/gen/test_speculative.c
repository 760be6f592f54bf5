/* Speculative decoding (src/gen/speculative.c). The acceptance rule on a
 * small synthetic pair of distributions: the output frequencies of many
 * seeded draws against the target's p (chi-square), the acceptance rate
 * against sum(min(p, q)), and a control showing the same statistic rejects
 * the draft's own q. Greedy decoding with a draft gives the target's greedy
 * tokens exactly: on models/demo with a q8 and a q4 copy of itself as the
 * draft, and on Qwen3.5 fixtures (a q8 copy, and another model of the same
 * tokenizer that rejects nearly every proposal, so the recurrent state is
 * rolled back at almost every step), each against HF's greedy ids from the
 * folder's reference.json and against the same pipeline without a draft;
 * and with the draft on the fake ANE device (a bundle of the same model).
 * Qwen3.5's checkpoint itself: where the snapshot lands, how far a
 * truncation replays, and the logits after it against a fresh state's. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/bundle_ref.h"
#include "../test.h"
#include "gen/generate.h"
#include "gen/model.h"
#include "gen/rng.h"
#include "gen/speculative.h"
#include "models/quant_write.h"
#include "models/qwen35_impl.h"

#define DEMO "models/demo"
#define Q35_A "tests/fixtures/qwen35/tiny_text_untied"
#define Q35_B "tests/fixtures/qwen35/tiny_vl_tied"
#define Q3 "tests/fixtures/qwen3/tiny_gqa2"
#define MAX_OUT 128

static char tmp_root[256];

static const char *tmp_dir(void) {
    if (!tmp_root[0]) {
        snprintf(tmp_root, sizeof tmp_root, "/tmp/nectar_spec_XXXXXX");
        if (!mkdtemp(tmp_root)) tmp_root[0] = '\0';
    }
    return tmp_root;
}

/* A q8/q4 copy of src under the temporary directory (made once). */
static const char *quant_copy(const char *src, const char *name, cpu_wtype type, char *out,
                              size_t cap) {
    snprintf(out, cap, "%s/%s", tmp_dir(), name);
    char probe[600];
    snprintf(probe, sizeof probe, "%s/model.safetensors", out);
    struct stat sb;
    if (stat(probe, &sb) == 0) return out;
    nc_error err = {0};
    quant_write_stats qs;
    if (quant_write_model(src, out, type, &qs, &err) != NC_OK) {
        printf("  quantize %s: %s\n", src, err.msg);
        return NULL;
    }
    return out;
}

/* ---- the rule --------------------------------------------------------------- */

#define NV 6
static const float P[NV] = {0.30f, 0.25f, 0.20f, 0.15f, 0.10f, 0.0f};
static const float Q[NV] = {0.10f, 0.40f, 0.20f, 0.0f, 0.05f, 0.25f};

static int draw_from(const float *w, gen_rng *r) {
    double u = gen_rng_uniform(r), c = 0;
    for (int i = 0; i < NV; i++) {
        c += w[i];
        if (u < c) return i;
    }
    return NV - 1;
}

/* sum (observed - expected)^2 / expected over tokens with p > 0; tokens
 * with p == 0 must never come out (*impossible counts them). */
static double chi_square(const long *count, long n, const float *p, long *impossible) {
    double x2 = 0;
    *impossible = 0;
    for (int i = 0; i < NV; i++) {
        if (p[i] == 0.0f) {
            *impossible += count[i];
            continue;
        }
        double e = (double)n * p[i];
        x2 += (count[i] - e) * (count[i] - e) / e;
    }
    return x2;
}

static void test_rejection_rule_gives_the_target_distribution(void) {
    const long N = 200000;
    long out[NV] = {0}, drafted[NV] = {0}, n_acc = 0;
    gen_rng rd, rr;
    gen_rng_seed(&rd, 12345);
    gen_rng_seed(&rr, 67890);
    for (long t = 0; t < N; t++) {
        int d = draw_from(Q, &rd), acc = 0;
        int32_t o = gen_spec_accept(P, Q, NV, d, &rr, &acc);
        CHECK(o >= 0 && o < NV);
        CHECK(!acc || o == d);
        out[o]++;
        drafted[d]++;
        n_acc += acc;
    }
    long bad;
    double x2 = chi_square(out, N, P, &bad);
    /* 4 degrees of freedom: P(X2 > 25) ~ 5e-5 */
    CHECKF(x2 < 25.0 && bad == 0, "chi-square %.2f against p (%ld impossible tokens)", x2, bad);
    double rate = (double)n_acc / N, expect = 0;
    for (int i = 0; i < NV; i++)
        expect += P[i] < Q[i] ? P[i] : Q[i];
    CHECKF(fabs(rate - expect) < 0.006, "acceptance %.4f, sum(min(p, q)) = %.4f", rate, expect);
    /* the control: the proposals themselves are far from p */
    double x2q = chi_square(drafted, N, P, &bad);
    CHECKF(x2q > 1000.0 || bad > 0, "control chi-square %.1f", x2q);
}

static void test_rejection_rule_edge_cases(void) {
    gen_rng r;
    gen_rng_seed(&r, 1);
    float p[3] = {0.0f, 1.0f, 0.0f}, q[3] = {1.0f, 0.0f, 0.0f};
    int acc = 1;
    /* q one-hot on a token p excludes: always the target's token */
    for (int t = 0; t < 100; t++) {
        CHECK(gen_spec_accept(p, q, 3, 0, &r, &acc) == 1);
        CHECK(!acc);
    }
    /* p == q: always accepted */
    float e[3] = {0.2f, 0.3f, 0.5f};
    for (int t = 0; t < 100; t++) {
        CHECK(gen_spec_accept(e, e, 3, t % 3, &r, &acc) == t % 3);
        CHECK(acc);
    }
}

/* ---- generation ---------------------------------------------------------------- */

typedef struct collect {
    int32_t ids[MAX_OUT];
    int n;
} collect;

static int on_token(void *user, int32_t tok, const float *logits) {
    (void)logits;
    collect *c = user;
    if (c->n < MAX_OUT) c->ids[c->n++] = tok;
    return 0;
}

typedef struct run_cfg {
    const char *target, *draft, *draft_backend;
    int draft_max;
    int ctx;
    gen_sampler_params sp;
} run_cfg;

/* Generates max_new tokens after each prompt on one sequence (so later
 * requests reuse the cache), into out[i]; res sums the figures. */
static nc_status run(const run_cfg *c, const int32_t *const *prompts, const int *n_prompts,
                     int n_req, int max_new, collect *out, gen_result *sum, nc_error *err) {
    engine_options eo = {.n_threads = 1, .ane_device = ENGINE_ANE_FAKE};
    gen_model *m = NULL;
    gen_seq *s = NULL;
    memset(sum, 0, sizeof *sum);
    NC_TRY(gen_model_open("cpu", c->target, &eo, &m, err));
    nc_status st = NC_OK;
    if (c->draft) {
        gen_spec_options so = {c->draft_max, 0, 0.0f};
        engine_options deo = eo;
        if (c->draft_backend && strcmp(c->draft_backend, "cpu")) deo.ctx = 0;
        st = gen_spec_attach(m, c->draft_backend ? c->draft_backend : "cpu", c->draft, &deo, &so,
                             err);
    }
    if (st == NC_OK) st = gen_seq_new(m, c->ctx, &s, err);
    for (int r = 0; st == NC_OK && r < n_req; r++) {
        gen_request req = {0};
        req.sampling = c->sp;
        req.max_new_tokens = max_new;
        out[r].n = 0;
        gen_callbacks cb = {on_token, NULL, &out[r]};
        gen_result res;
        st = gen_generate(s, prompts[r], n_prompts[r], &req, &cb, &res, err);
        sum->n_generated += res.n_generated;
        sum->n_drafted += res.n_drafted;
        sum->n_accepted += res.n_accepted;
        sum->n_draft_steps += res.n_draft_steps;
    }
    gen_seq_free(s);
    gen_model_close(m);
    return st;
}

static int same_ids(const collect *a, const collect *b) {
    return a->n == b->n && !memcmp(a->ids, b->ids, (size_t)a->n * sizeof *a->ids);
}

static int first_diff(const collect *a, const collect *b) {
    int k = 0;
    while (k < a->n && k < b->n && a->ids[k] == b->ids[k])
        k++;
    return k;
}

/* HF's greedy ids as far as the pipeline went (it stops at an eos, which
 * on_token does not see). */
static int matches_hf(const collect *c, const int *greedy, int n_greedy) {
    for (int i = 0; i < c->n && i < n_greedy; i++)
        if (c->ids[i] != greedy[i]) return 0;
    return 1;
}

/* Greedy with the draft equals greedy without it and HF's, for each prompt
 * of the target's reference.json, and again with a second request on the
 * same sequence that continues the first (the draft's prefix reuse). */
static void greedy_equal(const char *target, const char *draft, const char *draft_backend,
                         int draft_max, int n_new, int ctx, int expect_rejections) {
    int ids[3][64], n_ids[3], greedy[3][64];
    int n_prompts = 0;
    for (int i = 0; i < 3 && nc_test_load_prompt(target, i, 64, n_new, ids[i], &n_ids[i], greedy[i]);
         i++)
        n_prompts++;
    CHECKF(n_prompts > 0, "%s/reference.json: no prompt with %d greedy ids", target, n_new);
    nc_error err = {0};
    gen_result sum_all = {0};
    for (int i = 0; i < n_prompts; i++) {
        int32_t p0[64], p1[256];
        for (int j = 0; j < n_ids[i]; j++)
            p0[j] = ids[i][j];
        run_cfg plain = {target, NULL, NULL, 0, ctx, gen_sampler_defaults_greedy()};
        run_cfg spec = {target, draft, draft_backend, draft_max, ctx, gen_sampler_defaults_greedy()};
        collect a[2], b[2];
        gen_result ra, rb;
        /* request 2: the prompt, the first reply's tokens, the prompt again */
        const int32_t *ps[2] = {p0, p1};
        int ns[2] = {n_ids[i], 0};
        CHECK_OK(run(&plain, ps, ns, 1, n_new, a, &ra, &err), &err);
        int n1 = 0;
        for (int j = 0; j < n_ids[i]; j++)
            p1[n1++] = p0[j];
        for (int j = 0; j < a[0].n; j++)
            p1[n1++] = a[0].ids[j];
        for (int j = 0; j < n_ids[i]; j++)
            p1[n1++] = p0[j];
        ns[1] = n1;
        CHECK_OK(run(&plain, ps, ns, 2, n_new, a, &ra, &err), &err);
        CHECK_OK(run(&spec, ps, ns, 2, n_new, b, &rb, &err), &err);
        CHECKF(matches_hf(&a[0], greedy[i], n_new), "%s prompt %d: nectar's greedy ids differ from "
               "HF's", target, i);
        for (int r = 0; r < 2; r++)
            CHECKF(same_ids(&a[r], &b[r]),
                   "%s prompt %d request %d: %d tokens with draft %s, %d without; first "
                   "difference at %d",
                   target, i, r, b[r].n, draft, a[r].n, first_diff(&a[r], &b[r]));
        sum_all.n_drafted += rb.n_drafted;
        sum_all.n_accepted += rb.n_accepted;
        sum_all.n_draft_steps += rb.n_draft_steps;
    }
    printf("  %s <- %s%s%s: %d drafted, %d accepted, %d verification steps\n", target, draft,
           draft_backend ? " on " : "", draft_backend ? draft_backend : "", sum_all.n_drafted,
           sum_all.n_accepted, sum_all.n_draft_steps);
    CHECK(sum_all.n_draft_steps > 0 && sum_all.n_drafted > 0);
    if (expect_rejections)
        CHECKF(sum_all.n_accepted < sum_all.n_drafted, "no proposal was rejected: the rollback "
               "went untested");
}

static void test_greedy_demo_q8_draft(void) {
    char d[512];
    CHECK(quant_copy(DEMO, "demo_q8", CPU_W_Q8, d, sizeof d));
    greedy_equal(DEMO, d, NULL, 8, 64, 512, 0);
}

static void test_greedy_demo_q4_draft_max_1_and_16(void) {
    char d[512];
    CHECK(quant_copy(DEMO, "demo_q4", CPU_W_Q4, d, sizeof d));
    greedy_equal(DEMO, d, NULL, 1, 48, 512, 0);
    greedy_equal(DEMO, d, NULL, 16, 48, 512, 0);
}

static void test_greedy_qwen35_q8_draft(void) {
    char d[512];
    CHECK(quant_copy(Q35_A, "q35_q8", CPU_W_Q8, d, sizeof d));
    greedy_equal(Q35_A, d, NULL, 4, 32, 512, 0);
}

/* A draft of other weights: nearly every proposal is rejected, and the
 * target's recurrent state goes back to its checkpoint each time. */
static void test_greedy_qwen35_disagreeing_draft(void) {
    greedy_equal(Q35_B, Q35_A, NULL, 6, 32, 512, 1);
}

/* The checkpoint under the rollback (models/qwen35_state.c): a verification
 * forward keeps the snapshot at the checkpoint instead of its own end, so
 * truncating into the verified tokens replays only those; a checkpoint
 * while a replay is pending is taken by the next forward after its replay
 * rows. The logits after it equal a fresh state's over the same tokens. */
static void test_qwen35_checkpoint_keeps_rollbacks_short(void) {
    nc_error err = {0};
    qwen35_model *m = NULL;
    qwen35_state *s = NULL, *f = NULL;
    CHECK_OK(qwen35_load(Q35_A, 1, &m, &err), &err);
    int V = qwen35_model_config(m)->vocab_size;
    float *rows = malloc((size_t)8 * V * sizeof *rows), *ref = malloc((size_t)V * sizeof *ref);
    int ok = rows && ref && qwen35_state_new(m, 64, &s, &err) == NC_OK &&
             qwen35_state_new(m, 64, &f, &err) == NC_OK;
    const int32_t t[12] = {39, 68, 340, 78, 12, 200, 7, 150, 99, 3, 250, 61};
    ok = ok && qwen35_forward(m, s, t, 5, NULL, NULL, &err) == NC_OK; /* pos 5 */
    qwen35_state_checkpoint(s);
    ok = ok && qwen35_forward(m, s, t + 5, 4, NULL, rows, &err) == NC_OK; /* pos 9 */
    int snap_after_verify = s->snap_pos;
    int kept = ok ? qwen35_state_truncate(s, 7) : -1; /* 2 of 4 verified tokens kept */
    int lin_after_truncate = s->lin_pos;
    qwen35_state_checkpoint(s); /* a replay of 5..7 pending */
    ok = ok && qwen35_forward(m, s, t + 7, 3, NULL, rows, &err) == NC_OK; /* pos 10 */
    int snap_after_second = s->snap_pos;
    ok = ok && qwen35_forward(m, f, t, 10, ref, NULL, &err) == NC_OK;
    double diff = 0;
    for (int v = 0; ok && v < V; v++)
        diff = fmax(diff, fabs((double)rows[2 * (size_t)V + v] - ref[v]));
    qwen35_state_free(s);
    qwen35_state_free(f);
    qwen35_free(m);
    free(rows);
    free(ref);
    CHECKF(ok, "%s", err.msg);
    CHECKF(snap_after_verify == 5, "snapshot at %d after the verification, not the checkpoint's 5",
           snap_after_verify);
    CHECKF(kept == 7 && lin_after_truncate == 5, "truncate kept %d, replay from %d (want 7, 5)",
           kept, lin_after_truncate);
    CHECKF(snap_after_second == 7, "pending-replay checkpoint snapshot at %d, want 7",
           snap_after_second);
    CHECKF(diff < 1e-4, "last logits differ from a fresh state's by %g", diff);
}

static char bundle[512], bundle_root[256];

/* The draft on the fake ANE device (a bundle of the target, fp16), the
 * target on the CPU. */
static void test_greedy_draft_on_fake_ane(void) {
    CHECK(bundle[0] || nc_test_compile_bundle(bundle_root, sizeof bundle_root, "spec", Q3,
                                              "bundle", bundle, sizeof bundle, 64, 4, 0, 0));
    greedy_equal(Q3, bundle, "ane", 4, 16, 256, 0);
}

static void test_sampled_generation_is_seeded(void) {
    char d[512];
    CHECK(quant_copy(DEMO, "demo_q4", CPU_W_Q4, d, sizeof d));
    gen_sampler_params sp = gen_sampler_defaults_greedy();
    sp.temperature = 0.9f;
    sp.top_k = 40;
    sp.seed = 7;
    run_cfg c = {DEMO, d, NULL, 6, 512, sp};
    int32_t p[3] = {1147, 258, 2084};
    const int32_t *ps[1] = {p};
    int ns[1] = {3};
    collect a[1], b[1];
    gen_result ra, rb;
    nc_error err = {0};
    CHECK_OK(run(&c, ps, ns, 1, 40, a, &ra, &err), &err);
    CHECK_OK(run(&c, ps, ns, 1, 40, b, &rb, &err), &err);
    CHECK(a[0].n > 0 && same_ids(&a[0], &b[0]));
    CHECK(ra.n_drafted > 0 && ra.n_accepted <= ra.n_drafted);
    for (int i = 0; i < a[0].n; i++)
        CHECK(a[0].ids[i] >= 0 && a[0].ids[i] < 4096);
}

static void test_draft_with_another_tokenizer_is_refused(void) {
    engine_options eo = {.n_threads = 1};
    gen_model *m = NULL;
    nc_error err = {0};
    CHECK_OK(gen_model_open("cpu", DEMO, &eo, &m, &err), &err);
    gen_spec_options so = {4, 0, 0.0f};
    nc_status st = gen_spec_attach(m, "cpu", Q35_A, &eo, &so, &err);
    gen_model_close(m);
    CHECK(st == NC_ERR_INVALID);
    CHECKF(strstr(err.msg, "share the target's tokenizer") && strstr(err.msg, "tiny_text_untied"),
           "%s", err.msg);
    so.draft_max = 0;
    CHECK(gen_spec_check_options(&so, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "draft_max 0"));
}

int main(void) {
    RUN(test_rejection_rule_gives_the_target_distribution);
    RUN(test_rejection_rule_edge_cases);
    RUN(test_draft_with_another_tokenizer_is_refused);
    RUN(test_greedy_demo_q8_draft);
    RUN(test_greedy_demo_q4_draft_max_1_and_16);
    RUN(test_greedy_qwen35_q8_draft);
    RUN(test_greedy_qwen35_disagreeing_draft);
    RUN(test_qwen35_checkpoint_keeps_rollbacks_short);
    RUN(test_greedy_draft_on_fake_ane);
    RUN(test_sampled_generation_is_seeded);
    if (tmp_root[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
        if (system(cmd) != 0) printf("  could not remove %s\n", tmp_root);
    }
    nc_test_remove_root(bundle_root);
    return nc_test_exit_code();
}
