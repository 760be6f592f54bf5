/* The decision model's CPU engine against the PyTorch reference
 * (tools/decision_ref.py): tests/fixtures/decision/{dm_multi,dm_compact,dm_k3}
 * were written by tools/make_decision_fixtures.py from the models reloaded
 * from disk (fp32, eager attention). Three shapes: a multilingual-style
 * vocabulary of 2048 rows with bf16 encoder weights and H = 2 post-norm head
 * layers; a compact one with H = 1 pre-norm and one repeated marker token;
 * K = 3 with 3 heads of 8, 6 actions and CLS features first. Checked: the
 * marker positions and type ids the engine derives, marker logits, raw and
 * calibrated marker probabilities and action probabilities within 1e-4; the
 * C tokenizer's ids for the fixture texts equal HF's; one row alone equals
 * its row in the batch (within 1e-5).
 *
 * The same fixtures through a compiled bundle (decision_compile at B = 1, 3
 * and L = 64, 96; the NE region in the interpreter's fp16 mode): the fp16
 * gate of docs/decision.md, every argmax (marker and action) equal to the
 * reference's and raw, calibrated and action probabilities within 0.02;
 * and the bytes crossing engines as the shapes say. */
#include <math.h>
#include <unistd.h>

#include "../test.h"
#include "decide/decision.h"
#include "decide/decision_bundle.h"
#include "decide/decision_lower.h"
#include "bundle/bundle_io.h"
#include "io/npy.h"
#include "text/tokenizer.h"

#define FIX "tests/fixtures/decision/"
#define TOL 1e-4

typedef struct ref {
    nc_npy ids, mask, markers, types, logits, probs, cal, act;
} ref;

static void ref_free(ref *r) {
    nc_npy *all[] = {&r->ids, &r->mask, &r->markers, &r->types,
                     &r->logits, &r->probs, &r->cal, &r->act};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        nc_npy_free(all[i]);
}

static nc_status ref_load(const char *name, ref *r, nc_error *err) {
    memset(r, 0, sizeof *r);
    const char *files[] = {"input_ids",  "attention_mask", "markers",    "type_ids",
                           "marker_logits", "marker_probs", "calibrated", "action_probs"};
    nc_npy *dst[] = {&r->ids, &r->mask, &r->markers, &r->types,
                     &r->logits, &r->probs, &r->cal, &r->act};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[512];
        snprintf(p, sizeof p, FIX "%s/ref/%s.npy", name, files[i]);
        NC_TRY(nc_npy_read(p, dst[i], err));
    }
    return NC_OK;
}

static double max_err(const float *a, const float *b, size_t n) {
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= e)) e = isnan(d) ? INFINITY : d;
    }
    return e;
}

#define FP16_GATE 0.02

static int argmax(const float *v, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

/* Rows whose argmax over n values differs between a and b. */
static int argmax_misses(const float *a, const float *b, int rows, int n) {
    int miss = 0;
    for (int r = 0; r < rows; r++)
        miss += argmax(a + (size_t)r * n, n) != argmax(b + (size_t)r * n, n);
    return miss;
}

/* Fixture `name` compiled into a fresh bundle at path (cap bytes) and
 * opened; bundle[0] is empty when nothing was written. */
static nc_status open_bundle(const char *dir, char *path, size_t cap, decision_model **m,
                             nc_error *err) {
    static int counter;
    snprintf(path, cap, "/tmp/nectar_test_decision_%ld_%d.ane", (long)getpid(), counter++);
    mb_compile_options o;
    memset(&o, 0, sizeof o);
    o.model_dir = dir;
    o.out_dir = path;
    o.n_threads = 1;
    o.n_seqs = 2;
    o.seqs[0] = 64;
    o.seqs[1] = 96;
    o.n_batches = 2;
    o.batches[0] = 1;
    o.batches[1] = 3;
    mb_compile_report rep;
    nc_status st = decision_compile(&o, &rep, err);
    if (st) {
        path[0] = '\0';
        return st;
    }
    return decision_bundle_open(path, 2, NULL, m, err);
}

static void check_fixture_on(const char *name, int bundle) {
    nc_error err = {0};
    ref r;
    if (ref_load(name, &r, &err) != NC_OK) {
        ref_free(&r);
        CHECKF(0, "%s", err.msg);
    }
    char dir[256];
    snprintf(dir, sizeof dir, FIX "%s", name);
    decision_model *m = NULL;
    char bpath[256] = "";
    if ((bundle ? open_bundle(dir, bpath, sizeof bpath, &m, &err)
                : decision_load(dir, 2, &m, &err)) != NC_OK) {
        ref_free(&r);
        if (bpath[0]) lower_remove_tree(bpath);
        CHECKF(0, "%s", err.msg);
    }
    const decision_config *c = decision_model_config(m);
    int B = (int)r.ids.shape[0], L = (int)r.ids.shape[1], K = c->num_markers, A = c->num_actions;
    const int32_t *ids = r.ids.data, *mask = r.mask.data;
    /* the derived markers and type ids */
    int ok = 1;
    for (int b = 0; b < B && ok; b++) {
        int32_t mk[DECISION_MAX_MARKERS], *ty = malloc((size_t)L * sizeof *ty);
        ok = ty && decision_find_markers(c, ids + b * L, mask + b * L, L, mk, &err) == NC_OK;
        for (int k = 0; ok && k < K; k++)
            ok = mk[k] == ((int32_t *)r.markers.data)[b * K + k];
        if (ok) decision_type_ids(c, mk, mask + b * L, L, ty);
        for (int t = 0; ok && t < L; t++)
            ok = ty[t] == ((int32_t *)r.types.data)[b * L + t];
        free(ty);
    }
    float *z = malloc((size_t)B * K * sizeof *z), *p = malloc((size_t)B * K * sizeof *p);
    float *cal = malloc((size_t)B * K * sizeof *cal), *act = malloc((size_t)B * A * sizeof *act);
    decision_io io = {.ids = ids, .mask = mask, .batch = B, .seq = L, .marker_logits = z,
                      .marker_probs = p, .calibrated = cal, .action_probs = act};
    nc_status st = ok ? decision_forward(m, &io, &err) : NC_ERR_INVALID;
    double ez = 0, ep = 0, ec = 0, ea = 0;
    if (st == NC_OK) {
        ez = max_err(z, r.logits.data, (size_t)B * K);
        ep = max_err(p, r.probs.data, (size_t)B * K);
        ec = max_err(cal, r.cal.data, (size_t)B * K);
        ea = max_err(act, r.act.data, (size_t)B * A);
        printf("  %s%s: max err logits %.2e, marker probs %.2e, calibrated %.2e, actions %.2e\n",
               name, bundle ? " (bundle, fp16 region)" : "", ez, ep, ec, ea);
    }
    int misses = st == NC_OK ? argmax_misses(p, r.probs.data, B, K) +
                                   argmax_misses(cal, r.cal.data, B, K) +
                                   argmax_misses(act, r.act.data, B, A)
                             : 0;
    /* a call of function (3, 64): x, the masks (the local one where the
     * window bites) and the one-hot types in, hidden out, at fp16 */
    int D = c->hidden_size, T = c->type_vocab_size;
    int masks = 1 + mb_lower_needs_local_mask(modernbert_model_config(decision_model_encoder(m)), 64);
    long long want_in = 2LL * (3 * D * 64 + masks * 3 * 64 * 64 + 3 * T * 64),
              want_out = 2LL * 3 * D * 64;
    /* the last row alone (its own shorter length) equals its row in the batch */
    double e1 = 0;
    if (st == NC_OK) {
        int b = B - 1, n = 0;
        while (n < L && mask[b * L + n])
            n++;
        float a1[64];
        decision_io one = {.ids = ids + b * L, .batch = 1, .seq = n, .action_probs = a1};
        st = A <= 64 ? decision_forward(m, &one, &err) : NC_ERR_INVALID;
        if (st == NC_OK) e1 = max_err(a1, act + (size_t)b * A, (size_t)A);
    }
    /* then one of function (1, 64): a third of each */
    decision_crossings x = decision_bundle_crossings(m);
    if (bpath[0]) lower_remove_tree(bpath);
    free(z);
    free(p);
    free(cal);
    free(act);
    decision_free(m);
    ref_free(&r);
    CHECKF(ok, "%s: derived markers or type ids differ from the reference (%s)", name, err.msg);
    CHECKF(st == NC_OK, "%s: %s", name, err.msg);
    if (!bundle) {
        CHECK(ez <= TOL && ep <= TOL && ec <= TOL && ea <= TOL);
        CHECKF(e1 <= 1e-5, "%s: one row alone differs by %g", name, e1);
        return;
    }
    CHECKF(misses == 0, "%s: %d argmaxes differ from the reference", name, misses);
    CHECKF(ep <= FP16_GATE && ec <= FP16_GATE && ea <= FP16_GATE,
           "%s: probabilities drift past %g", name, FP16_GATE);
    /* the one-row call runs function (1, 64) in fp16 as well: same gate */
    CHECKF(e1 <= FP16_GATE, "%s: one row alone differs by %g", name, e1);
    CHECKF(L <= 64 && x.calls == 2 && x.bytes_in == want_in + want_in / 3 &&
               x.bytes_out == want_out + want_out / 3,
           "%s: %ld calls, %lld bytes in, %lld out; want 2, %lld, %lld", name, x.calls,
           x.bytes_in, x.bytes_out, want_in + want_in / 3, want_out + want_out / 3);
}

static void check_fixture(const char *name) { check_fixture_on(name, 0); }

static void test_multi_h2_post(void) { check_fixture("dm_multi"); }
static void test_compact_h1_pre(void) { check_fixture("dm_compact"); }
static void test_k3_h2_pre(void) { check_fixture("dm_k3"); }
static void test_bundle_multi_h2_post(void) { check_fixture_on("dm_multi", 1); }
static void test_bundle_compact_h1_pre(void) { check_fixture_on("dm_compact", 1); }
static void test_bundle_k3_h2_pre(void) { check_fixture_on("dm_k3", 1); }

/* A bundle without partition.json (an encoder's) is refused by name. */
static void test_bundle_open_refuses_encoder_bundle(void) {
    nc_error err = {0};
    decision_model *m = NULL;
    nc_status st = decision_bundle_open(FIX "dm_k3", 1, NULL, &m, &err);
    CHECKF(st == NC_ERR_FORMAT && m == NULL && strstr(err.msg, "partition.json"), "%s", err.msg);
}

/* The C tokenizer gives HF's ids for the fixture texts (markers included). */
static void test_tokenizer_ids(void) {
    const char *names[] = {"dm_multi", "dm_compact", "dm_k3"};
    for (int f = 0; f < 3; f++) {
        nc_error err = {0};
        char dir[256], path[300];
        snprintf(dir, sizeof dir, FIX "%s", names[f]);
        snprintf(path, sizeof path, "%s/ref/input_ids.npy", dir);
        nc_npy ids = {0}, mask = {0};
        tok_tokenizer *tok = NULL;
        CHECK_OK(nc_npy_read(path, &ids, &err), &err);
        snprintf(path, sizeof path, "%s/ref/attention_mask.npy", dir);
        CHECK_OK(nc_npy_read(path, &mask, &err), &err);
        CHECK_OK(tok_load(dir, &tok, &err), &err);
        snprintf(path, sizeof path, "%s/ref/texts.txt", dir);
        FILE *fp = fopen(path, "r");
        char line[1024];
        int L = (int)ids.shape[1], b = 0, same = fp != NULL;
        while (same && fgets(line, sizeof line, fp)) {
            line[strcspn(line, "\n")] = '\0';
            int32_t *got = NULL;
            size_t n = 0;
            same = tok_encode_special(tok, line, strlen(line), &got, &n, &err) == NC_OK;
            const int32_t *want = (const int32_t *)ids.data + b * L;
            const int32_t *wm = (const int32_t *)mask.data + b * L;
            for (int t = 0; same && t < L; t++)
                same = wm[t] ? (size_t)t < n && got[t] == want[t] : (size_t)t >= n;
            free(got);
            b++;
        }
        if (fp) fclose(fp);
        tok_free(tok);
        nc_npy_free(&ids);
        nc_npy_free(&mask);
        CHECKF(same && b == 3, "%s: row %d: ids differ from HF's", names[f], b);
    }
}

/* The CPU tail alone refuses a marker outside the sequence (no read past x). */
static void test_tail_checks_markers(void) {
    nc_error err = {0};
    decision_model *m = NULL;
    CHECK_OK(decision_load(FIX "dm_compact", 1, &m, &err), &err);
    int d = decision_model_config(m)->hidden_size;
    float *x = calloc((size_t)8 * d, sizeof *x), act[4];
    int32_t markers[4] = {1, 2, 3, 8};
    decision_io io = {.markers = markers, .batch = 1, .seq = 8, .action_probs = act};
    nc_status bad = x ? decision_tail(m, x, &io, &err) : NC_ERR_NOMEM;
    markers[3] = 7;
    nc_error err2 = {0};
    nc_status good = x ? decision_tail(m, x, &io, &err2) : NC_ERR_NOMEM;
    free(x);
    decision_free(m);
    CHECKF(bad == NC_ERR_INVALID && strstr(err.msg, "marker 4 at position 8 is outside [0, 8)"),
           "%s", err.msg);
    CHECKF(good == NC_OK, "%s", err2.msg);
    CHECK_NEAR(act[0] + act[1] + act[2] + act[3], 1.0, 1e-6);
}

int main(void) {
    RUN(test_multi_h2_post);
    RUN(test_compact_h1_pre);
    RUN(test_k3_h2_pre);
    RUN(test_bundle_multi_h2_post);
    RUN(test_bundle_compact_h1_pre);
    RUN(test_bundle_k3_h2_pre);
    RUN(test_bundle_open_refuses_encoder_bundle);
    RUN(test_tokenizer_ids);
    RUN(test_tail_checks_markers);
    return nc_test_exit_code();
}
