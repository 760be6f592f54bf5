/* The ANE request path for a Qwen3.5 bundle: the tiny HF fixture
 * tests/fixtures/qwen35/tiny_vl_tied (linear, full, linear layers) is
 * lowered here, its plans checked (each linear layer's mixer between a
 * gather and a scatter host step, its conv and delta states ping-ponged
 * with the KV parity, the one-token and chunk forms told apart by their
 * I/O names), then run on the fake device under each surface policy, sync
 * and async, with the host's side written here from docs/qwen35.md and
 * docs/lowering.md: the prompt in two chunks (the second wraps past the
 * bucket's last column), then greedy tokens one at a time. The prompt's
 * last logits are compared with HF's float32 logits (logits_1.npy) and the
 * greedy ids with HF's (reference.json), both independent of nectar. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/bundle_ref.h"
#include "../test.h"
#include "ane_host/ane_fake.h"
#include "ane_host/ane_runner.h"
#include "io/npy.h"
#include "lower/qwen35_lower.h"
#include "models/qwen35.h"

#define FIXTURE "tests/fixtures/qwen35/tiny_vl_tied"
#define CTX 128
#define N_GREEDY 8
#define LOGIT_MAX_REL 0.02 /* as tests/ane/test_ane_runner.c: fp16 rounding of every op */

static char bundle[256], tmp_root[256];

static int compile_bundle(void) {
    return bundle[0] || nc_test_compile_bundle(tmp_root, sizeof tmp_root, "ane35", FIXTURE,
                                               "bundle", bundle, sizeof bundle, CTX, 4, 0, 0);
}

/* --- the plans ------------------------------------------------------------- */

static const char *buf_of(const ane_plan *p, const ane_plan_step *s, const char *io, int out) {
    int n = out ? s->n_out : s->n_in;
    for (int i = 0; i < n; i++) {
        const ane_plan_io *x = out ? &s->out[i] : &s->in[i];
        if (!strcmp(x->name, io)) return p->bufs[x->buf].name;
    }
    return "";
}

/* Layer 0 (linear) of the plan: gather, the mixer, scatter, the MLP. */
static void check_linear_layer(const ane_plan *p, const char *mixer, const char *xs) {
    char x[32], x2[32], xs2[32], a[32], b[32];
    snprintf(x, sizeof x, "x@s%d", p->seq);
    snprintf(x2, sizeof x2, "x2@s%d", p->seq);
    snprintf(xs2, sizeof xs2, "xs2%s", strchr(xs, '@'));
    CHECK(p->n_steps >= 4);
    const ane_plan_step *g = &p->steps[0], *m = &p->steps[1], *sc = &p->steps[2],
                        *mlp = &p->steps[3];
    CHECK(g->kind == ANE_STEP_GATHER && !strcmp(buf_of(p, g, "x", 0), x) &&
          !strcmp(buf_of(p, g, "x", 1), xs));
    CHECKF(m->kind == ANE_STEP_KERNEL && !strcmp(m->fn, mixer), "%s", m->fn);
    CHECK(!strcmp(buf_of(p, m, "x", 0), xs) && !strcmp(buf_of(p, m, "x_out", 1), xs2));
    const char *in = p->parity ? "b" : "a", *out = p->parity ? "a" : "b";
    for (int k = 0; k < 2; k++) {
        const char *st = k ? "delta_state" : "conv_state";
        char st_out[32];
        snprintf(st_out, sizeof st_out, "%s_out", st);
        snprintf(a, sizeof a, "%s.0.%s", st, in);
        snprintf(b, sizeof b, "%s.0.%s", st, out);
        CHECKF(!strcmp(buf_of(p, m, st, 0), a) && !strcmp(buf_of(p, m, st_out, 1), b),
               "%s: %s -> %s", st, buf_of(p, m, st, 0), buf_of(p, m, st_out, 1));
    }
    CHECK(sc->kind == ANE_STEP_SCATTER && !strcmp(buf_of(p, sc, "x", 0), xs2) &&
          !strcmp(buf_of(p, sc, "x", 1), x));
    snprintf(a, sizeof a, "mlp_s%d", p->seq);
    CHECK(mlp->kind == ANE_STEP_KERNEL && !strcmp(mlp->fn, a) &&
          !strcmp(buf_of(p, mlp, "x", 0), x) && !strcmp(buf_of(p, mlp, "x_out", 1), x2));
}

static void test_plan_runs_each_linear_layer_mixer_between_gather_and_scatter(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    lower_manifest m;
    CHECK_OK(lower_manifest_read(bundle, &m, &err), &err);
    CHECK(ane_plan_n_forms(&m) == 2);
    for (int parity = 0; parity < 2; parity++) {
        ane_plan tok, ch;
        CHECK_OK(ane_plan_qwen3(&m, 64, ANE_FORM_TOKEN, parity, &tok, &err), &err);
        CHECK_OK(ane_plan_qwen3(&m, 64, ANE_FORM_CHUNK, parity, &ch, &err), &err);
        check_linear_layer(&tok, "step_s32", "xs@s32");
        check_linear_layer(&ch, "prefill_s64", "xs@s64");
        const ane_plan_step *pf = &ch.steps[1];
        CHECK(!strcmp(buf_of(&ch, pf, "valid", 0), "valid@s64") &&
              !strcmp(buf_of(&ch, pf, "conv_pick_new", 0), "conv_pick_new@s64"));
        /* one request per kernel, as the manifest counts them per token */
        CHECK(tok.n_requests == m.kernels_per_token && ch.n_requests == m.kernels_per_token);
        for (int f = 0; f < 2; f++) {
            const ane_plan *p = f ? &ch : &tok;
            int *entries = calloc((size_t)p->n_bufs + 1, sizeof *entries);
            CHECK_OK(ane_plan_entries(p, entries, &err), &err);
            /* the states come in from the previous token (or a reset) */
            char st[32];
            snprintf(st, sizeof st, "delta_state.2.%c", parity ? 'b' : 'a');
            int b = ane_plan_find_buf(p, st);
            CHECKF(b >= 0 && entries[b], "%s", st);
            free(entries);
            CHECK(ane_plan_is_carried(st) && ane_plan_is_carried("k_cache.1.a") &&
                  !ane_plan_is_carried("xs@s32"));
        }
        ane_plan_free(&tok);
        ane_plan_free(&ch);
    }
    /* the forms are told apart by I/O names: a second chunk mixer for a
     * bucket, or no one-token mixer, is refused in one line */
    lower_program_info *pi = &m.programs[0];
    int k = -1;
    for (int i = 0; i < pi->n_fns; i++)
        if (!strcmp(pi->fns[i].name, "prefill_s32")) k = i;
    CHECK(k >= 0 && pi->n_fns < LOWER_MAX_FUNCS);
    ane_plan p;
    pi->fns[pi->n_fns] = pi->fns[k];
    snprintf(pi->fns[pi->n_fns].name, sizeof pi->fns[0].name, "chunked_s32");
    pi->n_fns++;
    CHECK(ane_plan_qwen3(&m, 32, ANE_FORM_CHUNK, 0, &p, &err) == NC_ERR_FORMAT);
    CHECKF(strstr(err.msg, "two chunk functions") && strstr(err.msg, "chunked_s32"), "%s", err.msg);
    pi->n_fns--;
    for (int i = 0; i < pi->n_fns; i++)
        if (!strcmp(pi->fns[i].name, "step_s32")) k = i;
    pi->fns[k] = pi->fns[--pi->n_fns]; /* drop the one-token mixer */
    CHECK(ane_plan_qwen3(&m, 32, ANE_FORM_TOKEN, 0, &p, &err) == NC_ERR_NOT_FOUND);
    CHECKF(strstr(err.msg, "no one-token function"), "%s", err.msg);
    lower_manifest_free(&m);
}

/* --- a sequence through the runner ----------------------------------------- */

/* The Qwen3.5 inputs beyond the shared host's (bundle_ref.h). */
typedef struct host {
    nc_test_host t;
    qwen35_config cfg;
    int K;
    float *valid, *pick_state, *pick_new;
} host;

static int host_open(host *h, const ane_runner *r) {
    memset(h, 0, sizeof *h);
    nc_error err = {0};
    if (qwen35_config_load(FIXTURE, &h->cfg, &err)) return 0;
    h->K = h->cfg.linear_conv_kernel_dim;
    size_t S = 64;
    h->valid = malloc(S * sizeof(float));
    h->pick_state = malloc(32 * 32 * sizeof(float));
    h->pick_new = malloc(S * 32 * sizeof(float));
    return nc_test_host_open(&h->t, r, h->cfg.rotary_dim) && h->valid && h->pick_state &&
           h->pick_new;
}

static void host_close(host *h) {
    nc_test_host_close(&h->t);
    free(h->valid);
    free(h->pick_state);
    free(h->pick_new);
}

/* A chunk of toks[0..n) at pos.. through bucket seq (bundle_ref.h), and
 * for n > 1 the linear layers' `valid` (its n tokens, in order from column
 * 0) and the conv window picks (the last K-1 conv inputs: of the chunk, or
 * of the state for the first K-1-n); the logits of the last token. */
static nc_status chunk(host *h, ane_runner *r, int seq, const int32_t *toks, int n, int pos,
                       ane_run_mode mode, nc_error *err) {
    NC_TRY(nc_test_host_write(&h->t, r, seq, toks, n, pos, err));
    if (n > 1) {
        memset(h->pick_state, 0, 32 * 32 * sizeof(float));
        memset(h->pick_new, 0, (size_t)seq * 32 * sizeof(float));
        for (int i = 0; i < seq; i++)
            h->valid[i] = i < n;
        /* window column j (oldest first) holds input n - (K-1) + j of the chunk */
        for (int j = 0; j < h->K - 1; j++) {
            int src = n - (h->K - 1) + j;
            if (src >= 0)
                h->pick_new[src * 32 + j] = 1.0f;
            else /* still in the old window, at column K-1 + src */
                h->pick_state[(h->K - 1 + src) * 32 + j] = 1.0f;
        }
        NC_TRY(ane_runner_write(r, 1, seq, "valid", h->valid, (size_t)seq, err));
        NC_TRY(ane_runner_write(r, 1, seq, "conv_pick_state", h->pick_state, 32 * 32, err));
        NC_TRY(ane_runner_write(r, 1, seq, "conv_pick_new", h->pick_new, (size_t)seq * 32, err));
    }
    NC_TRY(ane_runner_run_chunk(r, seq, n, pos, (pos + n - 1) % seq, mode, err));
    return nc_test_host_logits(&h->t, r, seq, err);
}

typedef struct prompt_ref {
    int n_ids, ids[64], greedy[N_GREEDY];
} prompt_ref;

/* The prompt as a chunk of 20 (bucket 32, columns 0..19) and the rest
 * (bucket 32: columns 20..31 then 0..: the gather wraps), then N_GREEDY - 1
 * greedy tokens one at a time. out: the prompt's last logits, then each
 * token's: N_GREEDY rows. */
static void run_sequence(host *h, ane_runner *r, const prompt_ref *p, ane_run_mode mode, float *out,
                         int32_t *gen, nc_error *err) {
    CHECK_OK(ane_runner_reset(r, err), err);
    CHECK_OK(chunk(h, r, 32, p->ids, 20, 0, mode, err), err);
    CHECK_OK(chunk(h, r, 32, p->ids + 20, p->n_ids - 20, 20, mode, err), err);
    for (int t = 0; t < N_GREEDY; t++) {
        memcpy(out + (size_t)t * h->t.V, h->t.logits, (size_t)h->t.V * sizeof(float));
        gen[t] = nc_test_argmax(h->t.logits, h->t.V);
        if (t + 1 < N_GREEDY) CHECK_OK(chunk(h, r, 32, &gen[t], 1, p->n_ids + t, mode, err), err);
    }
}

/* Sync, async and async with events on dev: bit for bit the same; the
 * prompt's last logits within LOGIT_MAX_REL of HF's; greedy ids HF's. */
static void runs_like_hf(const ane_device *dev) {
    nc_error err = {0};
    prompt_ref p;
    CHECK(nc_test_load_prompt(FIXTURE, 1, 64, N_GREEDY, p.ids, &p.n_ids, p.greedy) &&
          p.n_ids > 20 && p.n_ids <= 52);
    nc_npy ref;
    CHECK_OK(nc_npy_read(FIXTURE "/logits_1.npy", &ref, &err), &err);
    ane_runner *r = NULL;
    CHECK_OK(ane_runner_open(dev, bundle, &r, &err), &err);
    host h;
    CHECK(host_open(&h, r));
    size_t n = (size_t)N_GREEDY * h.t.V;
    float *l[3] = {malloc(n * sizeof(float)), malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    int32_t gen[3][N_GREEDY];
    CHECK(l[0] && l[1] && l[2] && ref.dtype == NC_NPY_F32 && ref.shape[0] == p.n_ids &&
          ref.shape[1] == h.t.V);
    static const ane_run_mode modes[3] = {ANE_RUN_SYNC, ANE_RUN_ASYNC, ANE_RUN_ASYNC_EVENTS};
    for (int i = 0; i < 3; i++)
        run_sequence(&h, r, &p, modes[i], l[i], gen[i], &err);
    /* 2 chunks + N_GREEDY - 1 tokens per mode, every kernel once */
    long runs = 3L * (2 + N_GREEDY - 1);
    CHECKF(ane_runner_requests_issued(r) == runs * h.t.m.kernels_per_token, "%ld requests",
           ane_runner_requests_issued(r));
    CHECK(ane_fake_evaluations(dev) == ane_runner_requests_issued(r));
    const float *hf = (const float *)ref.data + (size_t)(p.n_ids - 1) * h.t.V;
    double mx = 0, dmax = 0;
    for (int v = 0; v < h.t.V; v++) {
        if (fabs(hf[v]) > mx) mx = fabs(hf[v]);
        if (fabs(l[0][v] - hf[v]) > dmax) dmax = fabs(l[0][v] - hf[v]);
    }
    CHECKF(dmax <= LOGIT_MAX_REL * mx, "last prompt position: max abs %.4f, largest |logit| %.3f",
           dmax, mx);
    printf("  logit error vs HF at the prompt's end: %.4f of the largest |logit|\n", dmax / mx);
    for (int t = 0; t < N_GREEDY; t++)
        CHECKF(gen[0][t] == p.greedy[t], "greedy step %d: %d, HF %d", t, gen[0][t], p.greedy[t]);
    for (int i = 1; i < 3; i++) {
        CHECK(memcmp(l[0], l[i], n * sizeof(float)) == 0);
        CHECK(memcmp(gen[0], gen[i], sizeof gen[0]) == 0);
    }
    for (int i = 0; i < 3; i++)
        free(l[i]);
    host_close(&h);
    ane_runner_free(r);
    nc_npy_free(&ref);
}

/* Each surface policy, enforced by the fake device (uniform allocation
 * sizes per request -- the states share requests with x, so every buffer of
 * a layer gets the delta state's size --, a minimum size, one request in
 * flight, overlapping submissions) */
static void test_each_surface_policy_runs_like_hf(void) {
    CHECK(compile_bundle());
    static const ane_fake_options opts[4] = {{{0, 0}, 2, 0, {0}},
                                             {{1, 0}, 2, 0, {0}},
                                             {{0, ANE_REPORTED_MIN_SURFACE_BYTES}, 1, 200, {0}},
                                             {{1, ANE_REPORTED_MIN_SURFACE_BYTES}, 2, 200, {0}}};
    for (int i = 0; i < 4; i++) {
        nc_error err = {0};
        ane_device dev;
        CHECK_OK(ane_fake_new_with(&opts[i], &dev, &err), &err);
        runs_like_hf(&dev);
        ane_fake_free(&dev);
        if (nc_test_failed_) printf("  with policy %d\n", i);
    }
}

int main(void) {
    RUN(test_plan_runs_each_linear_layer_mixer_between_gather_and_scatter);
    RUN(test_each_surface_policy_runs_like_hf);
    nc_test_remove_root(tmp_root);
    return nc_test_exit_code();
}
