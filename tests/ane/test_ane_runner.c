/* The whole ANE request path on Linux: a tiny HF Qwen3 fixture is lowered
 * to a bundle, opened on the fake device (the MIL interpreter behind the
 * ANE's interface: symbols reordered, 64-byte-row surfaces, completion on
 * its own thread), and run token by token through the per-token plan --
 * bind by name, pad, run, unpad. The logits are compared with HF's float32
 * logits for every prompt position (logits_1.npy) and the greedy
 * continuation with HF's greedy ids (reference.json): both independent of
 * nectar. Also: the plan's order and KV aliasing, the async wait, and that
 * a failed token leaves the KV cache as it was. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/bundle_ref.h"
#include "../test.h"
/* NECTAR_ANE_SYNTAX_CHECK: tests/ane/test_ane_syntax.sh compiles the macOS
 * branch on Linux (-fsyntax-only). */
#if defined(__APPLE__) || defined(NECTAR_ANE_SYNTAX_CHECK)
#include "ane/ane_apple.h"
#endif
#include "ane_host/ane_fake.h"
#include "ane_host/ane_runner.h"
#include "ane_host/ane_wait.h"
#include "base/half.h"
#include "base/json.h"
#include "base/mmap.h"
#include "io/hf_weights.h"
#include "io/npy.h"
#include "bundle/bundle_io.h"
#include "lower/qwen3_compile.h"

#define FIXTURE "tests/fixtures/qwen3/tiny_gqa2"
#define CTX 64
#define S 32     /* the decode bucket */
#define S_MAX 64 /* the prompt bucket */
#define N_GREEDY 8
#define LOGIT_MAX_REL 0.02 /* as tests/lower: fp16 rounding of every op */

static char bundle[256];
static char tmp_root[256];

static char bundle_cpu_head[256];

static int compile_kpl(char *out, size_t cap, const char *name, int lm_head_on_cpu, int kpl) {
    return out[0] || nc_test_compile_bundle(tmp_root, sizeof tmp_root, "ane", FIXTURE, name, out,
                                            cap, CTX, kpl, lm_head_on_cpu, 0);
}

static int compile_into(char *out, size_t cap, const char *name, int lm_head_on_cpu) {
    return compile_kpl(out, cap, name, lm_head_on_cpu, 4);
}

static int compile_bundle(void) {
    return compile_into(bundle, sizeof bundle, "bundle", 0);
}

/* --- the wait ------------------------------------------------------------- */

typedef struct {
    ane_wait *w;
    int n, fail_at;
} completer;

static void *complete_some(void *arg) {
    completer *c = arg;
    for (int i = 0; i < c->n; i++)
        ane_wait_done(c->w, i == c->fail_at ? NC_ERR_IO : NC_OK,
                      i == c->fail_at ? "request 7 failed" : NULL);
    return NULL;
}

static void test_wait_counts_completions_from_other_threads(void) {
    ane_wait w;
    nc_error err = {0};
    for (int round = 0; round < 2; round++) {
        ane_wait_init(&w);
        ane_wait_add(&w, 4 * 2000);
        pthread_t t[4];
        completer c[4];
        for (int i = 0; i < 4; i++) {
            c[i] = (completer){&w, 2000, round == 1 && i == 2 ? 7 : -1};
            CHECK(pthread_create(&t[i], NULL, complete_some, &c[i]) == 0);
        }
        nc_status st = ane_wait_all(&w, round ? 0 : 30.0, &err);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        CHECK(atomic_load(&w.pending) == 0);
        if (round == 0)
            CHECK(st == NC_OK);
        else
            CHECK(st == NC_ERR_IO && strcmp(err.msg, "request 7 failed") == 0);
    }
    /* a request that never completes: the bounded wait gives up */
    ane_wait_init(&w);
    ane_wait_add(&w, 1);
    CHECK(ane_wait_all(&w, 0.05, &err) == NC_ERR_IO && strstr(err.msg, "did not complete") != NULL);
}

/* --- the plan ------------------------------------------------------------- */

static int entry(const ane_plan *p, const int *entries, const char *name) {
    int b = ane_plan_find_buf(p, name);
    return b >= 0 && entries[b];
}

static void test_plan_orders_kernels_and_ping_pongs_the_cache(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    lower_manifest m;
    CHECK_OK(lower_manifest_read(bundle, &m, &err), &err);
    int L = m.cfg.num_hidden_layers;
    static const char *kern[] = {"qkv_s32", "kv_s32", "attn_s32", "mlp_s32"};
    for (int parity = 0; parity < 2; parity++) {
        ane_plan p;
        CHECK_OK(ane_plan_qwen3(&m, S, ANE_FORM_CHUNK, parity, &p, &err), &err);
        CHECK(p.n_requests == m.kernels_per_token && p.n_requests == 4 * L + 1);
        CHECK(p.n_steps == 4 * L + 2);
        const char cur = parity ? 'b' : 'a', nxt = parity ? 'a' : 'b';
        for (int l = 0; l < L; l++)
            for (int k = 0; k < 4; k++) {
                const ane_plan_step *s = &p.steps[4 * l + k];
                CHECK(s->kind == ANE_STEP_KERNEL && s->layer == l && strcmp(s->fn, kern[k]) == 0);
                CHECK(strcmp(m.programs[s->program].path + strlen(m.programs[s->program].path) - 9,
                             "model.mil") == 0);
            }
        /* layer 1's kv step: reads .cur, writes .nxt; attn reads .nxt */
        const ane_plan_step *kv = &p.steps[4 + 1], *attn = &p.steps[4 + 2];
        char want[64];
        for (int i = 0; i < kv->n_in; i++)
            if (strcmp(kv->in[i].name, "k_cache") == 0) {
                snprintf(want, sizeof want, "k_cache.1.%c", cur);
                CHECK(strcmp(p.bufs[kv->in[i].buf].name, want) == 0);
            }
        for (int i = 0; i < kv->n_out; i++)
            if (strcmp(kv->out[i].name, "v_cache_out") == 0) {
                snprintf(want, sizeof want, "v_cache.1.%c", nxt);
                CHECK(strcmp(p.bufs[kv->out[i].buf].name, want) == 0);
            }
        for (int i = 0; i < attn->n_in; i++)
            if (strcmp(attn->in[i].name, "v_cache") == 0) {
                snprintf(want, sizeof want, "v_cache.1.%c", nxt);
                CHECK(strcmp(p.bufs[attn->in[i].buf].name, want) == 0);
            }
        CHECK(p.steps[4 * L].kind == ANE_STEP_HEAD_COLUMN);
        CHECK(strcmp(p.steps[4 * L + 1].fn, "head_s32") == 0 && p.steps[4 * L + 1].layer == -1);
        /* entries: what the host writes plus the carried cache, nothing else */
        int *entries = calloc((size_t)p.n_bufs, sizeof *entries);
        CHECK(entries);
        CHECK_OK(ane_plan_entries(&p, entries, &err), &err);
        int n_entries = 0;
        for (int i = 0; i < p.n_bufs; i++)
            n_entries += entries[i];
        CHECK(entry(&p, entries, "x@s32") && entry(&p, entries, "rope_cos@s32") &&
              entry(&p, entries, "rope_sin@s32") && entry(&p, entries, "attn_mask@s32") &&
              entry(&p, entries, "kv_write"));
        for (int l = 0; l < L; l++) {
            char kc[32], vc[32], kn[32];
            snprintf(kc, sizeof kc, "k_cache.%d.%c", l, cur);
            snprintf(vc, sizeof vc, "v_cache.%d.%c", l, cur);
            snprintf(kn, sizeof kn, "k_cache.%d.%c", l, nxt);
            CHECK(entry(&p, entries, kc) && entry(&p, entries, vc) && !entry(&p, entries, kn));
        }
        CHECK(!entry(&p, entries, "head_x") && !entry(&p, entries, "q@s32"));
        CHECKF(n_entries == 5 + 2 * L, "%d entries", n_entries);
        free(entries);
        ane_plan_free(&p);
    }
    ane_plan p;
    CHECK(ane_plan_qwen3(&m, 48, ANE_FORM_CHUNK, 0, &p, &err) == NC_ERR_INVALID);
    lower_manifest_free(&m);
}

/* --lm-head cpu: the plan ends with the last layer's mlp, and the runner
 * runs a token without a head column. */
static void test_plan_without_the_ane_head(void) {
    CHECK(compile_into(bundle_cpu_head, sizeof bundle_cpu_head, "bundle_cpu_head", 1));
    nc_error err = {0};
    lower_manifest m;
    CHECK_OK(lower_manifest_read(bundle_cpu_head, &m, &err), &err);
    int L = m.cfg.num_hidden_layers;
    ane_plan p;
    CHECK_OK(ane_plan_qwen3(&m, S, ANE_FORM_CHUNK, 0, &p, &err), &err);
    CHECK(!m.lm_head_on_ane && p.n_requests == 4 * L && p.n_requests == m.kernels_per_token);
    CHECK(p.n_steps == 4 * L && strcmp(p.steps[p.n_steps - 1].fn, "mlp_s32") == 0);
    CHECK(ane_plan_find_buf(&p, "head_x") < 0);
    ane_plan_free(&p);
    lower_manifest_free(&m);
    ane_device dev;
    CHECK_OK(ane_fake_new(&dev, &err), &err);
    ane_runner *r = NULL;
    CHECK_OK(ane_runner_open(&dev, bundle_cpu_head, &r, &err), &err);
    CHECK_OK(ane_runner_run(r, 1, S, -1, ANE_RUN_ASYNC, &err), &err);
    CHECK(ane_runner_requests_issued(r) == 4 * L);
    ane_runner_free(r);
    ane_fake_free(&dev);
}

/* --- the fake device on its own ------------------------------------------- */

static void test_fake_device_reorders_symbols_and_checks_requests(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    ane_device dev;
    CHECK_OK(ane_fake_new(&dev, &err), &err);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/layer_00", bundle);
    ane_model *model = NULL;
    CHECK_OK(dev.ops->model_open(dev.impl, dir, &model, &err), &err);
    const char *json;
    size_t len;
    CHECK_OK(dev.ops->model_attrs(model, &json, &len, &err), &err);
    ane_attrs a;
    CHECK_OK(ane_attrs_parse(json, len, "fake", &a, &err), &err);
    const ane_attr_proc *p = ane_attrs_proc(&a, "kv_s32");
    CHECK(p && p->n_in == 5);
    /* symbols are not in declaration order: k_cache is declared first */
    const ane_attr_io *kc = ane_attrs_io(p, "k_cache", 0), *vn = ane_attrs_io(p, "v_new", 0);
    CHECK(kc && vn && vn->symbol < kc->symbol);
    /* a request that binds a symbol of another procedure is refused */
    ane_surface *s = NULL;
    CHECK_OK(dev.ops->surface_new(dev.impl, 1 << 20, &s, &err), &err);
    ane_surface *ins[5] = {s, s, s, s, s}, *outs[2] = {s, s};
    int in_idx[5], out_idx[2] = {p->out[0].symbol, p->out[1].symbol};
    for (int i = 0; i < 5; i++)
        in_idx[i] = p->in[i].symbol;
    in_idx[4] = a.n_in_symbols + 3;
    ane_request *r = NULL;
    CHECK_OK(dev.ops->request_new(model, p->id, 5, ins, in_idx, 2, outs, out_idx, &r, &err), &err);
    CHECK(dev.ops->evaluate(r, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "has no input symbol") != NULL);
    dev.ops->request_free(r);
    CHECK_OK(dev.ops->request_new(model, p->id, 4, ins, in_idx, 2, outs, out_idx, &r, &err), &err);
    CHECK(dev.ops->evaluate(r, &err) == NC_ERR_INVALID &&
          strstr(err.msg, "takes 5 inputs") != NULL);
    dev.ops->request_free(r);
    /* every symbol bound, but one surface for everything */
    in_idx[4] = p->in[4].symbol;
    CHECK_OK(dev.ops->request_new(model, p->id, 5, ins, in_idx, 2, outs, out_idx, &r, &err), &err);
    CHECK(dev.ops->evaluate(r, &err) == NC_ERR_INVALID);
    CHECKF(strstr(err.msg, "reads and writes one surface") != NULL, "%s", err.msg);
    dev.ops->request_free(r);
    /* a request run while the host still holds a lock is refused */
    ane_surface *s2 = NULL;
    CHECK_OK(dev.ops->surface_new(dev.impl, 1 << 20, &s2, &err), &err);
    ane_surface *outs2[2] = {s2, s2};
    CHECK_OK(dev.ops->request_new(model, p->id, 5, ins, in_idx, 2, outs2, out_idx, &r, &err), &err);
    CHECK(dev.ops->surface_lock(s, 0, &err) != NULL);
    CHECK(dev.ops->evaluate(r, &err) == NC_ERR_INVALID && strstr(err.msg, "surface lock") != NULL);
    dev.ops->surface_unlock(s, 0);
    dev.ops->request_free(r);
    dev.ops->surface_free(s2);
    dev.ops->surface_free(s);
    ane_attrs_free(&a);
    dev.ops->model_close(model);
    ane_fake_free(&dev);
}

/* --- a model through the runner ------------------------------------------- */

typedef nc_test_host host;

static int host_open(host *h, const ane_runner *r) {
    return nc_test_host_open(h, r, ane_runner_manifest(r)->cfg.head_dim);
}

/* Tokens toks[0..n) at positions pos.. through bucket `seq` (the host's
 * side as bundle_ref.h writes it), the logits of the last one; the column
 * reads are checked against whole unpadded surfaces. */
static nc_status chunk(host *h, ane_runner *r, int seq, const int32_t *toks, int n, int pos,
                       ane_run_mode mode, nc_error *err) {
    NC_TRY(nc_test_host_write(h, r, seq, toks, n, pos, err));
    NC_TRY(ane_runner_run(r, 1, seq, (pos + n - 1) % seq, mode, err));
    NC_TRY(nc_test_host_logits(h, r, seq, err));
    int off = 0, W = LOWER_HEAD_SEQ;
    nc_status st = NC_OK;
    for (int c = 0; c < h->m.n_head_chunks && !st; c++) {
        char name[32];
        snprintf(name, sizeof name, "logits_%d", c);
        int rows = (int)h->m.head_rows[c];
        float *whole = malloc((size_t)rows * W * sizeof(float));
        if (!whole) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
        /* the same values as column 0 of the whole unpadded surface */
        st = ane_runner_read(r, 1, seq, name, whole, (size_t)rows * W, err);
        for (int i = 0; i < rows && !st; i++)
            if (whole[(size_t)i * W] != h->logits[off + i])
                st = nc_fail(err, NC_ERR_INTERNAL, "%s row %d: column read differs", name, i);
        free(whole);
        off += rows;
    }
    return st;
}

static nc_status step(host *h, ane_runner *r, int32_t tok, int pos, ane_run_mode mode,
                      nc_error *err) {
    return chunk(h, r, S, &tok, 1, pos, mode, err);
}

typedef struct prompt_ref {
    int n_ids, ids[32], greedy[N_GREEDY];
} prompt_ref;

static int load_prompt(int which, prompt_ref *p) {
    return nc_test_load_prompt(FIXTURE, which, (int)(sizeof p->ids / sizeof p->ids[0]), N_GREEDY,
                               p->ids, &p->n_ids, p->greedy);
}

/* Runs prompt 1 then N_GREEDY greedy tokens; keeps every step's logits. */
static void run_sequence(host *h, ane_runner *r, const prompt_ref *p, ane_run_mode mode, float *all,
                         int32_t *gen, nc_error *err) {
    CHECK_OK(ane_runner_reset(r, err), err);
    int32_t tok = p->ids[0];
    for (int pos = 0; pos < p->n_ids + N_GREEDY - 1; pos++) {
        CHECK_OK(step(h, r, tok, pos, mode, err), err);
        memcpy(all + (size_t)pos * h->V, h->logits, (size_t)h->V * sizeof(float));
        int next = nc_test_argmax(h->logits, h->V);
        if (pos + 1 >= p->n_ids) gen[pos + 1 - p->n_ids] = next;
        tok = pos + 1 < p->n_ids ? p->ids[pos + 1] : next;
    }
}

/* The sequence on `dev`: every prompt position within tolerance of HF,
 * greedy ids = HF's, async = sync bit for bit. With `split`, the device
 * refuses multi-output functions, which the outputs rung runs as a
 * request per output: n_out - 1 more requests per such function. */
static void runs_the_bundle_like_hf_split(const ane_device *dev, int is_fake, int split) {
    nc_error err = {0};
    prompt_ref p;
    CHECK(load_prompt(1, &p));
    nc_npy ref;
    CHECK_OK(nc_npy_read(FIXTURE "/logits_1.npy", &ref, &err), &err);
    ane_runner *r = NULL;
    CHECK_OK(ane_runner_open(dev, bundle, &r, &err), &err);
    host h;
    CHECK(host_open(&h, r));
    int T = p.n_ids + N_GREEDY - 1;
    float *sync_l = malloc((size_t)T * h.V * sizeof(float)),
          *async_l = malloc((size_t)T * h.V * sizeof(float)),
          *event_l = malloc((size_t)T * h.V * sizeof(float));
    int32_t gen_sync[N_GREEDY], gen_async[N_GREEDY], gen_event[N_GREEDY];
    CHECK(sync_l && async_l && event_l && ref.dtype == NC_NPY_F32 && ref.shape[0] == p.n_ids &&
          ref.shape[1] == h.V);
    run_sequence(&h, r, &p, ANE_RUN_SYNC, sync_l, gen_sync, &err);
    long issued = ane_runner_requests_issued(r), per_token = h.m.kernels_per_token;
    for (int i = 0; split && i < h.m.n_programs; i++)
        for (int f = 0; h.m.programs[i].layer >= 0 && f < h.m.programs[i].n_fns; f++)
            if (h.m.programs[i].fns[f].seq == S) per_token += h.m.programs[i].fns[f].n_out - 1;
    CHECKF(issued == (long)T * per_token, "%ld requests, want %ld", issued, (long)T * per_token);
    if (is_fake) CHECK(ane_fake_evaluations(dev) == issued);
    run_sequence(&h, r, &p, ANE_RUN_ASYNC, async_l, gen_async, &err);
    run_sequence(&h, r, &p, ANE_RUN_ASYNC_EVENTS, event_l, gen_event, &err);
    /* every prompt position against HF's float32 logits */
    const float *hf = ref.data;
    double worst = 0;
    for (int t = 0; t < p.n_ids; t++) {
        double mx = 0, dmax = 0;
        for (int v = 0; v < h.V; v++) {
            double a = fabs(hf[(size_t)t * h.V + v]),
                   d = fabs(sync_l[(size_t)t * h.V + v] - hf[(size_t)t * h.V + v]);
            if (a > mx) mx = a;
            if (d > dmax) dmax = d;
        }
        CHECKF(dmax <= LOGIT_MAX_REL * mx, "position %d: max abs %.4f, largest |logit| %.3f", t,
               dmax, mx);
        if (dmax / mx > worst) worst = dmax / mx;
    }
    printf("  %s: worst logit error vs HF: %.4f of the largest |logit|\n", dev->ops->name, worst);
    for (int i = 0; i < N_GREEDY; i++)
        CHECKF(gen_sync[i] == p.greedy[i], "greedy step %d: %d, HF %d", i, gen_sync[i],
               p.greedy[i]);
    /* asynchronous submission, with and without events, computes the same bits */
    CHECK(memcmp(sync_l, async_l, (size_t)T * h.V * sizeof(float)) == 0);
    CHECK(memcmp(gen_sync, gen_async, sizeof gen_sync) == 0);
    CHECK(memcmp(sync_l, event_l, (size_t)T * h.V * sizeof(float)) == 0);
    CHECK(memcmp(gen_sync, gen_event, sizeof gen_sync) == 0);
    free(sync_l);
    free(async_l);
    free(event_l);
    nc_test_host_close(&h);
    ane_runner_free(r);
    nc_npy_free(&ref);
}

static void runs_the_bundle_like_hf(const ane_device *dev, int is_fake) {
    runs_the_bundle_like_hf_split(dev, is_fake, 0);
}

/* The outputs rung: under reject=multi-output, qkv and kv run as one
 * program per output, sync, async and with events, still like HF. */
static void test_fake_device_splits_multi_output_functions(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    ane_device dev;
    ane_fake_options o = {ANE_SURFACE_POLICY_DEFAULT, ANE_MAX_IN_FLIGHT, 0, {0}};
    o.behave.reject = ANE_REJECT_MULTI_OUTPUT;
    CHECK_OK(ane_fake_new_with(&o, &dev, &err), &err);
    runs_the_bundle_like_hf_split(&dev, 1, 1);
    ane_fake_free(&dev);
}

static void test_fake_device_runs_the_bundle_like_hf(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    ane_device dev;
    CHECK_OK(ane_fake_new(&dev, &err), &err);
    runs_the_bundle_like_hf(&dev, 1);
    ane_fake_free(&dev);
}

/* One kernel per layer: the plan follows the manifest's functions, each
 * layer's x_out goes to the other activation buffer (x@S, x2@S, x@S, ...),
 * the head takes the last layer's, no request reads what it writes, and
 * the bundle still gives HF's logits on the fake device, sync and async. */
static char bundle_kpl1[256];
static void test_plan_follows_one_kernel_per_layer(void) {
    CHECK(compile_kpl(bundle_kpl1, sizeof bundle_kpl1, "kpl1", 0, 1));
    nc_error err = {0};
    lower_manifest m;
    CHECK_OK(lower_manifest_read(bundle_kpl1, &m, &err), &err);
    int L = m.cfg.num_hidden_layers;
    CHECK(m.kernels_per_layer == 1 && m.kernels_per_token == L + 1);
    ane_plan p;
    CHECK_OK(ane_plan_qwen3(&m, S, ANE_FORM_CHUNK, 1, &p, &err), &err);
    CHECK(p.n_requests == L + 1 && p.n_steps == L + 2);
    int *entries = calloc((size_t)p.n_bufs + 1, sizeof *entries);
    CHECK(entries);
    CHECK_OK(ane_plan_entries(&p, entries, &err), &err);
    free(entries);
    char name[64];
    for (int l = 0; l < L; l++) {
        const ane_plan_step *s = &p.steps[l];
        CHECK(s->layer == l && !strcmp(s->fn, "layer_s32"));
        const ane_plan_io *xo = NULL;
        for (int j = 0; j < s->n_out; j++)
            if (!strcmp(s->out[j].name, "x_out")) xo = &s->out[j];
        snprintf(name, sizeof name, l % 2 ? "x@s%d" : "x2@s%d", S);
        CHECK(xo && !strcmp(p.bufs[xo->buf].name, name));
        for (int j = 0; j < s->n_out; j++)
            if (!strcmp(s->out[j].name, "k_cache_out")) {
                snprintf(name, sizeof name, "k_cache.%d.a", l); /* parity 1 writes .a */
                CHECK(!strcmp(p.bufs[s->out[j].buf].name, name));
            }
    }
    snprintf(name, sizeof name, L % 2 ? "x2@s%d" : "x@s%d", S);
    CHECK(p.steps[L].kind == ANE_STEP_HEAD_COLUMN &&
          !strcmp(p.bufs[p.steps[L].in[0].buf].name, name));
    ane_plan_free(&p);
    lower_manifest_free(&m);
    ane_device dev;
    CHECK_OK(ane_fake_new(&dev, &err), &err);
    char keep[256];
    snprintf(keep, sizeof keep, "%s", bundle);
    snprintf(bundle, sizeof bundle, "%s", bundle_kpl1);
    runs_the_bundle_like_hf(&dev, 1);
    snprintf(bundle, sizeof bundle, "%s", keep);
    ane_fake_free(&dev);
}

/* Each surface policy, enforced by the fake device: the runner allocates
 * what the policy asks and the bundle still gives HF's logits, sync and
 * async; with one request in flight at most, too. */
static void test_each_surface_policy_runs_like_hf(void) {
    CHECK(compile_bundle());
    /* the last two make submissions overlap (500 us each), so a runner
     * that did not wait between models, or kept more than max outstanding,
     * would be refused */
    static const ane_fake_options opts[4] = {{{0, 0}, 2, 0, {0}},
                                             {{1, 0}, 2, 0, {0}},
                                             {{0, ANE_REPORTED_MIN_SURFACE_BYTES}, 1, 500, {0}},
                                             {{1, 4 << 20}, 2, 500, {0}}};
    for (int i = 0; i < 4; i++) {
        nc_error err = {0};
        ane_device dev;
        CHECK_OK(ane_fake_new_with(&opts[i], &dev, &err), &err);
        runs_the_bundle_like_hf(&dev, 1);
        ane_fake_free(&dev);
        if (nc_test_failed_) printf("  with policy %d\n", i);
    }
}

/* A host that allocates against another policy than the device's is
 * refused at the first request, as the ANE's status 0x1d would. */
static void test_fake_enforces_the_surface_policy(void) {
    CHECK(compile_bundle());
    static const struct {
        ane_surface_policy device, host;
        const char *says;
    } cases[2] = {{{1, 0}, {0, 0}, "differ in allocation size"},
                  {{0, ANE_REPORTED_MIN_SURFACE_BYTES}, {0, 0}, "below the 49152-byte minimum"}};
    for (int i = 0; i < 2; i++) {
        nc_error err = {0};
        ane_fake_options o = {cases[i].device, 2, 0, {0}};
        ane_device dev;
        CHECK_OK(ane_fake_new_with(&o, &dev, &err), &err);
        dev.surfaces = cases[i].host; /* the host told the wrong policy */
        ane_runner *r = NULL;
        CHECK_OK(ane_runner_open(&dev, bundle, &r, &err), &err);
        CHECK(ane_runner_run(r, 1, S, 0, ANE_RUN_SYNC, &err) != NC_OK);
        CHECKF(strstr(err.msg, "status 0x1d") && strstr(err.msg, cases[i].says), "%s", err.msg);
        ane_runner_free(r);
        ane_fake_free(&dev);
    }
}

/* The 64-byte-row size of a plan buffer, written out here. */
static size_t rule_bytes(const ane_plan_buf *b) {
    int64_t rows = 1;
    for (int i = 0; i < b->rank - 1; i++)
        rows *= b->shape[i];
    int64_t w = b->shape[b->rank - 1] < 32 ? 32 : b->shape[b->rank - 1];
    return (size_t)(rows * ((w * 2 + 63) / 64 * 64));
}

static void test_surface_sizes_follow_the_policy(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    lower_manifest m;
    CHECK_OK(lower_manifest_read(bundle, &m, &err), &err);
    ane_plan pl[4];
    const ane_plan *all[4];
    for (int i = 0; i < 4; i++) {
        CHECK_OK(ane_plan_qwen3(&m, m.seqs[i / 2], ANE_FORM_CHUNK, i % 2, &pl[i], &err), &err);
        all[i] = &pl[i];
    }
    static const ane_surface_policy pols[3] = {{0, 0}, {0, 49152}, {1, 0}};
    for (int k = 0; k < 3; k++) {
        ane_surface_sizes sz;
        CHECK_OK(ane_plan_surface_sizes(all, 4, &pols[k], &sz, &err), &err);
        for (int i = 0; i < 4; i++)
            for (int b = 0; b < pl[i].n_bufs; b++) {
                const ane_plan_buf *pb = &pl[i].bufs[b];
                size_t got = ane_surface_size(&sz, pb->name, 0), need = rule_bytes(pb);
                if (!pols[k].uniform)
                    CHECKF(got == (need > pols[k].min_bytes ? need : pols[k].min_bytes), "%s: %zu",
                           pb->name, got);
                else
                    CHECK(got >= need);
            }
        /* uniform: every request's buffers share one size, the largest of
         * its group; all layer kernels form one group (x links them) */
        size_t layer_max = 0;
        for (int i = 0; i < 4; i++)
            for (int t = 0; t < pl[i].n_steps; t++) {
                const ane_plan_step *st = &pl[i].steps[t];
                for (int j = 0; st->layer >= 0 && j < st->n_in + st->n_out; j++) {
                    const ane_plan_io *io = j < st->n_in ? &st->in[j] : &st->out[j - st->n_in];
                    size_t b = rule_bytes(&pl[i].bufs[io->buf]);
                    if (b > layer_max) layer_max = b;
                }
            }
        for (int i = 0; pols[k].uniform && i < 4; i++)
            for (int t = 0; t < pl[i].n_steps; t++) {
                const ane_plan_step *st = &pl[i].steps[t];
                if (st->kind != ANE_STEP_KERNEL) continue;
                size_t first = ane_surface_size(&sz, pl[i].bufs[st->in[0].buf].name, 0);
                for (int j = 0; j < st->n_out; j++)
                    CHECK(ane_surface_size(&sz, pl[i].bufs[st->out[j].buf].name, 0) == first);
                for (int j = 0; j < st->n_in; j++)
                    CHECK(ane_surface_size(&sz, pl[i].bufs[st->in[j].buf].name, 0) == first);
                if (st->layer >= 0) CHECKF(first == layer_max, "%s: %zu", st->fn, first);
            }
        ane_surface_sizes_free(&sz);
    }
    for (int i = 0; i < 4; i++)
        ane_plan_free(&pl[i]);
    lower_manifest_free(&m);
}

/* Submissions the framework gives no guarantee for are refused by the fake:
 * a third outstanding request, and a plain submit while another model's
 * request is in flight; an event chain that is never met fails. */
static void test_fake_refuses_unordered_or_excess_submissions(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    ane_fake_options o = {{0, 0}, 2, 0, {0}};
    ane_device dev;
    CHECK_OK(ane_fake_new_with(&o, &dev, &err), &err);
    ane_model *ma = NULL, *mb = NULL;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/layer_00", bundle);
    CHECK_OK(dev.ops->model_open(dev.impl, dir, &ma, &err), &err);
    snprintf(dir, sizeof dir, "%s/layer_01", bundle);
    CHECK_OK(dev.ops->model_open(dev.impl, dir, &mb, &err), &err);
    /* mlp_s32: one input, one output; the results do not matter here */
    ane_request *ra = NULL, *rb = NULL;
    ane_surface *s[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++)
        CHECK_OK(dev.ops->surface_new(dev.impl, 1 << 20, &s[i], &err), &err);
    ane_model *mods[2] = {ma, mb};
    ane_request **reqs[2] = {&ra, &rb};
    for (int i = 0; i < 2; i++) {
        const char *json;
        size_t len;
        ane_attrs a;
        CHECK_OK(dev.ops->model_attrs(mods[i], &json, &len, &err), &err);
        CHECK_OK(ane_attrs_parse(json, len, "fake", &a, &err), &err);
        const ane_attr_proc *p = ane_attrs_proc(&a, "mlp_s32");
        CHECK(p && p->n_in == 1 && p->n_out == 1);
        int in = p->in[0].symbol, out = p->out[0].symbol;
        CHECK_OK(dev.ops->request_new(mods[i], p->id, 1, &s[0], &in, 1, &s[1], &out, reqs[i], &err),
                 &err);
        ane_attrs_free(&a);
    }
    ane_wait w;
    ane_wait_init(&w);
    ane_fake_pause(&dev, 1);
    ane_wait_add(&w, 1);
    CHECK_OK(dev.ops->submit(ra, ane_wait_done, &w, &err), &err);
    CHECK(dev.ops->submit(rb, ane_wait_done, &w, &err) != NC_OK);
    CHECKF(strstr(err.msg, "another model's requests are in flight"), "%s", err.msg);
    ane_wait_add(&w, 1);
    CHECK_OK(dev.ops->submit(ra, ane_wait_done, &w, &err), &err); /* same model: fine */
    CHECK(dev.ops->submit(ra, ane_wait_done, &w, &err) != NC_OK);
    CHECKF(strstr(err.msg, "2 requests are outstanding"), "%s", err.msg);
    ane_fake_pause(&dev, 0);
    CHECK_OK(ane_wait_all(&w, 10, &err), &err);
    /* with an event the other model may follow at once; a wait that no
     * request signals fails instead of hanging */
    ane_event *ev = NULL;
    CHECK_OK(dev.ops->event_new(dev.impl, &ev, &err), &err);
    ane_fake_pause(&dev, 1);
    ane_wait_add(&w, 2);
    CHECK_OK(dev.ops->submit_event(ra, ev, 0, 1, ane_wait_done, &w, &err), &err);
    CHECK_OK(dev.ops->submit_event(rb, ev, 1, 2, ane_wait_done, &w, &err), &err);
    ane_fake_pause(&dev, 0);
    CHECK_OK(ane_wait_all(&w, 10, &err), &err);
    ane_wait_add(&w, 1);
    CHECK_OK(dev.ops->submit_event(ra, ev, 5, 6, ane_wait_done, &w, &err), &err);
    CHECK(ane_wait_all(&w, 10, &err) != NC_OK && strstr(err.msg, "waits for event value 5"));
    dev.ops->event_free(ev);
    dev.ops->request_free(ra);
    dev.ops->request_free(rb);
    for (int i = 0; i < 2; i++)
        dev.ops->surface_free(s[i]);
    dev.ops->model_close(ma);
    dev.ops->model_close(mb);
    ane_fake_free(&dev);
}

#if defined(__APPLE__) || defined(NECTAR_ANE_SYNTAX_CHECK)
/* With NECTAR_ANE_ATTRS_DIR set: each program's modelAttributes JSON as
 * the device reported it (future fixtures for tests/fixtures/ane/) and the
 * bindings made from it, for a first run on new hardware. */
static void dump_device_view(const ane_device *dev) {
    const char *dir = getenv("NECTAR_ANE_ATTRS_DIR");
    if (!dir) return;
    nc_error err = {0};
    ane_runner *r = NULL;
    if (ane_runner_open(dev, bundle, &r, &err)) {
        printf("  dump: %s\n", err.msg);
        return;
    }
    for (int i = 0; i < ane_runner_manifest(r)->n_programs; i++) {
        const char *json;
        size_t len;
        char path[512];
        snprintf(path, sizeof path, "%s/attrs_%02d.json", dir, i);
        if (!ane_runner_model_attrs(r, i, &json, &len, &err))
            nc_write_file_atomic(path, json, len, &err);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/bindings.txt", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        ane_runner_describe(r, f);
        fclose(f);
    }
    ane_runner_free(r);
}
#endif

/* The same on the Neural Engine itself: macOS on Apple silicon, opt-in with
 * NECTAR_ANE_DEVICE=1 (then every failure is a FAIL). Never run by this
 * project so far: no Apple hardware was reachable. */
static void test_real_ane_runs_the_bundle_like_hf(void) {
#if defined(__APPLE__) || defined(NECTAR_ANE_SYNTAX_CHECK)
    const char *on = getenv("NECTAR_ANE_DEVICE");
    if (!on || strcmp(on, "1") != 0)
        SKIP("set NECTAR_ANE_DEVICE=1 to run the bundle on the Neural Engine");
    CHECK(compile_bundle());
    nc_error err = {0};
    ane_apple_options opt = {0};
    ane_surface_policy pol = ANE_SURFACE_POLICY_DEFAULT;
    const char *min = getenv("NECTAR_ANE_MIN_SURFACE_BYTES"), *uni = getenv("NECTAR_ANE_UNIFORM");
    if (min) pol.min_bytes = (size_t)strtoull(min, NULL, 10);
    if (uni) pol.uniform = strcmp(uni, "0") != 0;
    opt.surfaces = &pol;
    ane_device dev;
    CHECK_OK(ane_apple_open(&opt, &dev, &err), &err);
    dump_device_view(&dev);
    runs_the_bundle_like_hf(&dev, 0);
    ane_apple_close(&dev);
#else
    SKIP("no Neural Engine: the ANE bridge (src/ane) is built only on macOS");
#endif
}

/* The prompt as one chunk in the 64-wide bucket, then greedy decoding in
 * the 32-wide one: the buckets share the KV cache surfaces and the parity,
 * and the result is still HF's (last prompt position, greedy ids). */
static void test_prompt_chunk_then_decode_share_the_cache(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    prompt_ref p;
    CHECK(load_prompt(1, &p));
    nc_npy ref;
    CHECK_OK(nc_npy_read(FIXTURE "/logits_1.npy", &ref, &err), &err);
    ane_device dev;
    CHECK_OK(ane_fake_new(&dev, &err), &err);
    ane_runner *r = NULL;
    CHECK_OK(ane_runner_open(&dev, bundle, &r, &err), &err);
    char *text = NULL;
    size_t text_len = 0;
    FILE *f = open_memstream(&text, &text_len);
    CHECK(f);
    ane_runner_describe(r, f);
    fclose(f);
    int described = strstr(text, "kv_s64: procedure") && strstr(text, "in  kv_write     symbol") &&
                    strstr(text, "out logits_0");
    const char *json = NULL;
    size_t json_len = 0;
    CHECK_OK(ane_runner_model_attrs(r, 0, &json, &json_len, &err), &err);
    int has_attrs = json_len > 0 && strstr(json, "kANEFModelProcedureNameToIDMapKey") != NULL;
    free(text);
    CHECK(described && has_attrs);
    CHECK(ane_runner_model_attrs(r, 99, &json, &json_len, &err) == NC_ERR_RANGE);
    host h;
    CHECK(host_open(&h, r));
    int32_t ids[32];
    for (int i = 0; i < p.n_ids; i++)
        ids[i] = p.ids[i];
    CHECK_OK(chunk(&h, r, S_MAX, ids, p.n_ids, 0, ANE_RUN_ASYNC, &err), &err);
    const float *hf = (const float *)ref.data + (size_t)(p.n_ids - 1) * h.V;
    double mx = 0, dmax = 0;
    for (int v = 0; v < h.V; v++) {
        if (fabs(hf[v]) > mx) mx = fabs(hf[v]);
        if (fabs(h.logits[v] - hf[v]) > dmax) dmax = fabs(h.logits[v] - hf[v]);
    }
    CHECKF(dmax <= LOGIT_MAX_REL * mx, "last prompt position: max abs %.4f, largest |logit| %.3f",
           dmax, mx);
    int32_t tok = nc_test_argmax(h.logits, h.V);
    for (int i = 0; i < N_GREEDY; i++) {
        CHECKF(tok == p.greedy[i], "greedy step %d: %d, HF %d", i, tok, p.greedy[i]);
        if (i + 1 < N_GREEDY) {
            CHECK_OK(step(&h, r, tok, p.n_ids + i, ANE_RUN_ASYNC, &err), &err);
            tok = nc_test_argmax(h.logits, h.V);
        }
    }
    nc_test_host_close(&h);
    ane_runner_free(r);
    ane_fake_free(&dev);
    nc_npy_free(&ref);
}

/* A request that fails mid-token: the error names the function and the
 * device's message, and retrying the token gives the same logits as a run
 * that never failed (the current KV buffers were not written). */
static void test_failed_token_leaves_the_cache_as_it_was(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    prompt_ref p;
    CHECK(load_prompt(1, &p));
    ane_device dev;
    CHECK_OK(ane_fake_new(&dev, &err), &err);
    ane_runner *r = NULL;
    CHECK_OK(ane_runner_open(&dev, bundle, &r, &err), &err);
    host h;
    CHECK(host_open(&h, r));
    float *clean = malloc((size_t)h.V * sizeof(float));
    CHECK(clean);
    for (int mode = 0; mode < 2; mode++) {
        ane_run_mode md = mode ? ANE_RUN_ASYNC : ANE_RUN_SYNC;
        CHECK_OK(ane_runner_reset(r, &err), &err);
        CHECK_OK(step(&h, r, p.ids[0], 0, md, &err), &err);
        CHECK_OK(step(&h, r, p.ids[1], 1, md, &err), &err);
        memcpy(clean, h.logits, (size_t)h.V * sizeof(float));
        CHECK_OK(ane_runner_reset(r, &err), &err);
        CHECK_OK(step(&h, r, p.ids[0], 0, md, &err), &err);
        ane_fake_fail_at(&dev, 6); /* layer 1's kv kernel */
        nc_status st = step(&h, r, p.ids[1], 1, md, &err);
        CHECK(st == NC_ERR_IO);
        CHECKF(strstr(err.msg, "kv_s32") && strstr(err.msg, "injected"), "%s", err.msg);
        ane_fake_fail_at(&dev, 0);
        CHECK_OK(step(&h, r, p.ids[1], 1, md, &err), &err);
        CHECK(memcmp(clean, h.logits, (size_t)h.V * sizeof(float)) == 0);
    }
    free(clean);
    nc_test_host_close(&h);
    ane_runner_free(r);
    ane_fake_free(&dev);
}

static void test_runner_refuses_a_missing_bundle(void) {
    nc_error err = {0};
    ane_device dev;
    CHECK_OK(ane_fake_new(&dev, &err), &err);
    ane_runner *r = NULL;
    CHECK(ane_runner_open(&dev, "/nonexistent/bundle", &r, &err) != NC_OK);
    CHECK(strstr(err.msg, "/nonexistent/bundle") != NULL && r == NULL);
    ane_fake_free(&dev);
}

int main(void) {
    RUN(test_wait_counts_completions_from_other_threads);
    RUN(test_plan_orders_kernels_and_ping_pongs_the_cache);
    RUN(test_plan_without_the_ane_head);
    RUN(test_fake_device_reorders_symbols_and_checks_requests);
    RUN(test_fake_device_runs_the_bundle_like_hf);
    RUN(test_fake_device_splits_multi_output_functions);
    RUN(test_plan_follows_one_kernel_per_layer);
    RUN(test_each_surface_policy_runs_like_hf);
    RUN(test_fake_enforces_the_surface_policy);
    RUN(test_surface_sizes_follow_the_policy);
    RUN(test_fake_refuses_unordered_or_excess_submissions);
    RUN(test_real_ane_runs_the_bundle_like_hf);
    RUN(test_prompt_chunk_then_decode_share_the_cache);
    RUN(test_failed_token_leaves_the_cache_as_it_was);
    RUN(test_runner_refuses_a_missing_bundle);
    if (tmp_root[0]) lower_remove_tree(tmp_root);
    return nc_test_exit_code();
}
