/* Decision models through the public API (include/nectar.h): nc_decide on
 * the fixture texts of tests/fixtures/decision (one padded batch) against
 * the PyTorch reference (tools/decision_ref.py) within 1e-4, and against
 * what `nectar decide` computes (decision_forward on one unpadded row at a
 * time) within 1e-5; nc_decide_tokens on the reference's own ids and marker
 * positions; a bundle from nc_compile through "mil" and the fake ANE within
 * the fp16 gate (0.02, every argmax equal); bad calls fail with one line. */
#include <math.h>
#include <unistd.h>

#include "../test.h"
#include "decide/decision.h"
#include "io/npy.h"
#include "nectar.h"
#include "text/tokenizer.h"

#define FIX "tests/fixtures/decision/"
#define MAX_ROWS 8

typedef struct texts {
    char buf[4096];
    const char *row[MAX_ROWS];
    int n;
} texts;

static int read_texts(const char *name, texts *t) {
    char path[256];
    snprintf(path, sizeof path, FIX "%s/ref/texts.txt", name);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t len = fread(t->buf, 1, sizeof t->buf - 1, f);
    fclose(f);
    t->buf[len] = '\0';
    t->n = 0;
    for (char *p = t->buf; *p && t->n < MAX_ROWS;) {
        char *e = strchr(p, '\n');
        if (e) *e = '\0';
        if (*p) t->row[t->n++] = p;
        if (!e) break;
        p = e + 1;
    }
    return t->n;
}

static double max_diff(const float *a, const float *b, size_t n) {
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= e)) e = isnan(d) ? INFINITY : d;
    }
    return e;
}

static int argmax_misses(const float *a, const float *b, int rows, int n) {
    int miss = 0;
    for (int r = 0; r < rows; r++) {
        int ia = 0, ib = 0;
        for (int i = 1; i < n; i++) {
            if (a[r * n + i] > a[r * n + ia]) ia = i;
            if (b[r * n + i] > b[r * n + ib]) ib = i;
        }
        miss += ia != ib;
    }
    return miss;
}

typedef struct outs {
    float probs[MAX_ROWS * DECISION_MAX_MARKERS], cal[MAX_ROWS * DECISION_MAX_MARKERS];
    float act[MAX_ROWS * 16];
} outs;

/* The reference's arrays, as floats, and their shapes. */
typedef struct ref {
    float *probs, *cal, *act, *ids, *mask, *markers;
    int rows, K, A, seq;
} ref;

static void ref_free(ref *r) {
    float *all[] = {r->probs, r->cal, r->act, r->ids, r->mask, r->markers};
    for (int i = 0; i < 6; i++)
        free(all[i]);
}

static int ref_load(const char *name, ref *r) {
    const char *files[] = {"marker_probs", "calibrated", "action_probs",
                           "input_ids",    "attention_mask", "markers"};
    float **dst[] = {&r->probs, &r->cal, &r->act, &r->ids, &r->mask, &r->markers};
    memset(r, 0, sizeof *r);
    nc_error err;
    for (int i = 0; i < 6; i++) {
        char p[256];
        nc_npy a;
        snprintf(p, sizeof p, FIX "%s/ref/%s.npy", name, files[i]);
        nc_status st = nc_npy_read(p, &a, &err);
        if (st == NC_OK) st = nc_npy_to_f32(&a, dst[i], &err);
        if (st == NC_OK && i == 0) r->rows = (int)a.shape[0], r->K = (int)a.shape[1];
        if (st == NC_OK && i == 2) r->A = (int)a.shape[1];
        if (st == NC_OK && i == 3) r->seq = (int)a.shape[1];
        nc_npy_free(&a);
        if (st != NC_OK) {
            printf("  %s\n", err.msg);
            return 0;
        }
    }
    return 1;
}

/* The three outputs against the reference: the largest difference. */
static double vs_ref(const outs *o, const ref *r, int n, int K, int A) {
    double e = max_diff(o->probs, r->probs, (size_t)n * K);
    double c = max_diff(o->cal, r->cal, (size_t)n * K);
    double a = max_diff(o->act, r->act, (size_t)n * A);
    return fmax(e, fmax(c, a));
}

/* What `nectar decide -f texts.txt` computes: each text tokenized alone and
 * run by decision_forward as a batch of one, no padding. */
static double vs_cli_path(const char *dir, const texts *t, const outs *o, nc_error *err) {
    decision_model *m = NULL;
    tok_tokenizer *tok = NULL;
    double worst = INFINITY;
    if (decision_load(dir, 1, &m, err) != NC_OK || tok_load(dir, &tok, err) != NC_OK) goto done;
    const decision_config *c = decision_model_config(m);
    int K = c->num_markers, A = c->num_actions;
    worst = 0;
    for (int i = 0; i < t->n; i++) {
        int32_t *ids = NULL;
        size_t n = 0;
        if (tok_encode_special(tok, t->row[i], strlen(t->row[i]), &ids, &n, err) != NC_OK) {
            worst = INFINITY;
            break;
        }
        float p[DECISION_MAX_MARKERS], q[DECISION_MAX_MARKERS], a[16];
        decision_io io = {.ids = ids, .batch = 1, .seq = (int)n, .marker_probs = p,
                          .calibrated = q, .action_probs = a};
        nc_status st = decision_forward(m, &io, err);
        free(ids);
        if (st != NC_OK) {
            worst = INFINITY;
            break;
        }
        worst = fmax(worst, max_diff(p, o->probs + i * K, (size_t)K));
        worst = fmax(worst, max_diff(q, o->cal + i * K, (size_t)K));
        worst = fmax(worst, max_diff(a, o->act + i * A, (size_t)A));
    }
done:
    if (tok) tok_free(tok);
    decision_free(m);
    return worst;
}

static void check_fixture(const char *name) {
    char dir[256];
    snprintf(dir, sizeof dir, FIX "%s", name);
    texts t;
    ref r;
    CHECKF(read_texts(name, &t) > 0, "%s: no texts", name);
    if (!ref_load(name, &r)) {
        ref_free(&r);
        CHECKF(0, "%s: reference", name);
    }
    const char *opts[] = {"threads=2", NULL};
    nc_decision_model *d = NULL;
    nc_error err = {0};
    CHECK_OK(nc_decision_open(dir, "cpu", opts, &d, &err), &err);
    int K = nc_decision_num_markers(d), A = nc_decision_num_actions(d);
    CHECK(K == r.K && A == r.A && t.n == r.rows);
    outs o;
    CHECK_OK(nc_decide(d, t.row, (size_t)t.n, o.probs, o.cal, o.act, &err), &err);
    double e_ref = vs_ref(&o, &r, t.n, K, A);
    double e_cli = vs_cli_path(dir, &t, &o, &err);
    printf("  %s: nc_decide vs PyTorch %.2e, vs nectar decide's path %.2e\n", name, e_ref, e_cli);
    CHECKF(e_ref <= 1e-4, "%s: %.3g from the reference", name, e_ref);
    CHECKF(e_cli <= 1e-5, "%s: %.3g from decide's path (%s)", name, e_cli, err.msg);

    /* the reference's padded ids, cut at each row's mask, and its markers */
    int seq = r.seq;
    const int32_t *rows[MAX_ROWS];
    size_t lens[MAX_ROWS];
    int32_t mk[MAX_ROWS * DECISION_MAX_MARKERS];
    int32_t *ids32 = malloc((size_t)t.n * seq * sizeof *ids32);
    CHECK(ids32 != NULL);
    for (int i = 0; i < t.n; i++) {
        lens[i] = 0;
        for (int s = 0; s < seq; s++) {
            ids32[i * seq + s] = (int32_t)r.ids[i * seq + s];
            lens[i] += r.mask[i * seq + s] != 0;
        }
        rows[i] = ids32 + i * seq;
        for (int k = 0; k < K; k++)
            mk[i * K + k] = (int32_t)r.markers[i * K + k];
    }
    outs o2;
    CHECK_OK(nc_decide_tokens(d, rows, lens, mk, (size_t)t.n, o2.probs, o2.cal, o2.act, &err),
             &err);
    double e_tok = vs_ref(&o2, &r, t.n, K, A);
    printf("  %s: nc_decide_tokens vs PyTorch %.2e\n", name, e_tok);
    CHECKF(e_tok <= 1e-4, "%s: tokens %.3g", name, e_tok);
    /* markers found by their token ids give the same */
    CHECK_OK(nc_decide_tokens(d, rows, lens, NULL, (size_t)t.n, o2.probs, NULL, NULL, &err), &err);
    CHECK(max_diff(o2.probs, o.probs, (size_t)t.n * K) <= 1e-5);
    free(ids32);
    nc_decision_free(d);
    ref_free(&r);
}

static void test_fixtures_match_reference_and_cli(void) {
    check_fixture("dm_multi");
    check_fixture("dm_compact");
    check_fixture("dm_k3");
}

static void test_labels_and_sizes(void) {
    nc_decision_model *d = NULL;
    nc_error err;
    CHECK_OK(nc_decision_open(FIX "dm_multi", NULL, NULL, &d, &err), &err);
    const char *l0 = nc_decision_action_label(d, 0);
    CHECK(l0 != NULL && nc_decision_action_label(d, nc_decision_num_actions(d)) == NULL);
    nc_decision_free(d);
    CHECK_OK(nc_decision_open(FIX "dm_compact", "cpu", NULL, &d, &err), &err);
    CHECK(nc_decision_action_label(d, 0) == NULL); /* no action_labels there */
    nc_decision_free(d);
}

/* A bundle from nc_compile, through the interpreter and the fake ANE. */
static void test_bundle_backends_pass_the_fp16_gate(void) {
    char out[128];
    snprintf(out, sizeof out, "/tmp/nectar_test_decision_api_%ld.ane", (long)getpid());
    const char *copts[] = {"seqs=64", "batches=1,3", "threads=1", NULL};
    nc_error err;
    CHECK_OK(nc_compile(FIX "dm_k3", out, copts, &err), &err);
    texts t;
    ref r;
    CHECK(read_texts("dm_k3", &t) > 0);
    CHECK(ref_load("dm_k3", &r));
    const char *backends[] = {"mil", "ane"};
    const char *opts[] = {"threads=2", "ane_device=fake", NULL};
    for (int b = 0; b < 2; b++) {
        nc_decision_model *d = NULL;
        CHECK_OK(nc_decision_open(out, backends[b], opts, &d, &err), &err);
        int K = nc_decision_num_markers(d), A = nc_decision_num_actions(d);
        outs o;
        CHECK_OK(nc_decide(d, t.row, (size_t)t.n, o.probs, o.cal, o.act, &err), &err);
        double e = vs_ref(&o, &r, t.n, K, A);
        int miss = argmax_misses(o.probs, r.probs, t.n, K) +
                   argmax_misses(o.act, r.act, t.n, A);
        printf("  dm_k3 via %s: fp16 drift %.2e, %d argmax misses\n", backends[b], e, miss);
        CHECKF(e <= 0.02 && miss == 0, "%s: drift %.3g, %d misses", backends[b], e, miss);
        nc_decision_free(d);
    }
    ref_free(&r);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", out);
    CHECK(system(cmd) == 0);
}

static void test_bad_calls_fail_in_one_line(void) {
    nc_decision_model *d = NULL;
    nc_error err;
    const char *bad_opt[] = {"colour=red", NULL};
    CHECK(nc_decision_open(FIX "dm_k3", "cpu", bad_opt, &d, &err) == NC_ERR_INVALID);
    CHECKF(strstr(err.msg, "nc_decision_open: unknown option 'colour'") != NULL, "%s", err.msg);
    CHECK(d == NULL);
    CHECK(nc_decision_open(FIX "dm_k3", "gpu", NULL, &d, &err) == NC_ERR_INVALID);
    CHECKF(strstr(err.msg, "nc_decision_open: backend gpu") != NULL, "%s", err.msg);
    const char *bad_dev[] = {"ane_device=quantum", NULL};
    CHECK(nc_decision_open(FIX "dm_k3", "ane", bad_dev, &d, &err) != NC_OK);
    CHECKF(strstr(err.msg, "option ane_device") != NULL, "%s", err.msg);
    CHECK(nc_decision_open("tests/fixtures/modernbert/mb_base", "cpu", NULL, &d, &err) != NC_OK);
    CHECKF(strstr(err.msg, "decision.json") != NULL, "%s", err.msg);
    CHECK(nc_decision_open(FIX "dm_k3", "mil", NULL, &d, &err) != NC_OK); /* not a bundle */
    CHECKF(strstr(err.msg, "not a decision bundle") != NULL, "%s", err.msg);

    CHECK_OK(nc_decision_open(FIX "dm_compact", "cpu", NULL, &d, &err), &err);
    const char *texts[] = {"[OPT] a [OPT] b [OPT] c [OPT] d", "only [OPT] two [OPT]"};
    float p[8];
    CHECK(nc_decide(d, texts, 2, p, NULL, NULL, &err) == NC_ERR_INVALID);
    CHECKF(strstr(err.msg, "nc_decide: row 2: marker 3") != NULL, "%s", err.msg);
    CHECK(nc_decide(d, texts, 2, p, NULL, NULL, NULL) == NC_ERR_INVALID); /* err may be NULL */
    CHECK(nc_decide(d, texts, 0, p, NULL, NULL, &err) == NC_ERR_INVALID);
    CHECK(nc_decide(d, NULL, 1, p, NULL, NULL, &err) == NC_ERR_INVALID);
    const int32_t row[] = {1, 99999, 3, 4, 5};
    const int32_t *rows[] = {row};
    size_t len = 5;
    const int32_t mk[] = {0, 1, 2, 3};
    CHECK(nc_decide_tokens(d, rows, &len, mk, 1, p, NULL, NULL, &err) != NC_OK);
    CHECKF(strstr(err.msg, "99999") != NULL, "%s", err.msg);
    nc_decision_free(d);
    nc_decision_free(NULL);
}

int main(void) {
    RUN(test_fixtures_match_reference_and_cli);
    RUN(test_labels_and_sizes);
    RUN(test_bundle_backends_pass_the_fp16_gate);
    RUN(test_bad_calls_fail_in_one_line);
    return nc_test_exit_code();
}
