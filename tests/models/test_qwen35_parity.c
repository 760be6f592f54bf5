/* Qwen3.5 CPU forward pass against Hugging Face transformers: the fixtures
 * in tests/fixtures/qwen35/ (tools/make_qwen35_fixtures.py) hold HF's fp32
 * logits at chosen prompt positions and HF's 32-step greedy continuation,
 * for both checkpoint layouts. Checked: the whole prompt at once (the long
 * prompt spans more than 3 chunks of the chunked delta rule), the greedy
 * continuation (recurrent decoding), a prompt fed in pieces and one token at
 * a time (state carried between calls), truncation (replay from the
 * snapshot or from the start), several sequences in one batch, and the
 * recurrent and chunked kernels against a double-precision reference. The
 * same binary runs on narrower kernel tables from test_qwen35_tables.sh. */
#include <math.h>

#include "../test.h"
#include "base/json.h"
#include "cpu/cpu_delta.h"
#include "cpu/cpu_kernels.h"
#include "io/npy.h"
#include "models/qwen35.h"

#define FIX "tests/fixtures/qwen35/"
#define MAX_PROMPTS 4
#define MAX_IDS 512
#define TOL 1e-4
#define TEST_THREADS 2

typedef struct prompt_ref {
    int32_t ids[MAX_IDS], greedy[MAX_IDS];
    int pos[MAX_IDS]; /* positions whose logits are stored */
    int n_ids, n_greedy, n_pos;
    float *logits; /* [n_pos, vocab] */
    int vocab;
} prompt_ref;

typedef struct fixture {
    char dir[256];
    prompt_ref p[MAX_PROMPTS];
    int n_prompts;
} fixture;

static void fixture_free(fixture *f) {
    for (int i = 0; i < f->n_prompts; i++)
        free(f->p[i].logits);
    f->n_prompts = 0;
}

static int read_ints(const json_t *arr, int32_t *out, int cap) {
    if (!json_is_array(arr) || (int)json_array_size(arr) > cap) return -1;
    for (size_t i = 0; i < json_array_size(arr); i++)
        out[i] = (int32_t)json_integer_value(json_array_get(arr, i));
    return (int)json_array_size(arr);
}

static int fixture_load(const char *name, fixture *f, nc_error *err) {
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, FIX "%s", name);
    char path[512];
    snprintf(path, sizeof path, "%s/reference.json", f->dir);
    json_t *root;
    if (nc_json_load_file(path, &root, err) != NC_OK) return -1;
    json_t *prompts = json_object_get(root, "prompts");
    for (size_t i = 0; i < json_array_size(prompts) && i < MAX_PROMPTS; i++) {
        json_t *p = json_array_get(prompts, i);
        prompt_ref *r = &f->p[f->n_prompts];
        int32_t pos[MAX_IDS];
        r->n_ids = read_ints(json_object_get(p, "ids"), r->ids, MAX_IDS);
        r->n_greedy = read_ints(json_object_get(p, "greedy_ids"), r->greedy, MAX_IDS);
        r->n_pos = read_ints(json_object_get(p, "logit_positions"), pos, MAX_IDS);
        for (int k = 0; k < r->n_pos; k++)
            r->pos[k] = pos[k];
        const char *lf = NULL;
        nc_json_str(p, "logits_file", &lf, 1, path, err);
        int ok = r->n_ids > 0 && r->n_greedy > 0 && r->n_pos > 0 && lf &&
                 r->pos[r->n_pos - 1] == r->n_ids - 1;
        nc_npy a = {0};
        if (ok) {
            char lp[512];
            snprintf(lp, sizeof lp, "%s/%s", f->dir, lf);
            ok = nc_npy_read(lp, &a, err) == NC_OK && a.ndim == 2 && a.shape[0] == r->n_pos &&
                 nc_npy_to_f32(&a, &r->logits, err) == NC_OK;
            r->vocab = ok ? (int)a.shape[1] : 0;
            nc_npy_free(&a);
        }
        if (!ok) {
            json_decref(root);
            fixture_free(f);
            nc_fail(err, NC_ERR_FORMAT, "%s: prompt %zu is malformed", path, i);
            return -1;
        }
        f->n_prompts++;
    }
    json_decref(root);
    return f->n_prompts > 0 ? 0 : -1;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d; /* NaN propagates as a failure */
    }
    return m;
}

/* all: [n_ids, V] logits of every position; compared at the stored ones. */
static double prompt_error(const prompt_ref *r, const float *all, int V) {
    double worst = 0;
    for (int k = 0; k < r->n_pos; k++) {
        double d = max_abs_diff(all + (size_t)r->pos[k] * V, r->logits + (size_t)k * V, (size_t)V);
        worst = d > worst || isnan(d) ? d : worst;
    }
    return worst;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Every prompt at once, then the greedy continuation one token at a time. */
static void check_fixture(const char *name) {
    fixture f;
    nc_error err;
    if (fixture_load(name, &f, &err) != 0) SKIP("%s", err.msg);
    qwen35_model *m = NULL;
    nc_status st = qwen35_load(f.dir, TEST_THREADS, &m, &err);
    if (st != NC_OK) {
        fixture_free(&f);
        CHECK_OK(st, &err);
    }
    int V = qwen35_model_config(m)->vocab_size;
    double worst = 0;
    int ok = 1, greedy_ok = 1;
    float *all = malloc(sizeof(float) * MAX_IDS * (size_t)V), *last = malloc(sizeof(float) * V);
    for (int i = 0; i < f.n_prompts && ok; i++) {
        prompt_ref *r = &f.p[i];
        qwen35_state *s;
        ok = r->vocab == V && qwen35_state_new(m, 512, &s, &err) == NC_OK;
        if (!ok) break;
        ok = qwen35_forward(m, s, r->ids, r->n_ids, last, all, &err) == NC_OK;
        double d = ok ? prompt_error(r, all, V) : 1e9;
        double dl =
            ok ? max_abs_diff(last, r->logits + (size_t)(r->n_pos - 1) * V, (size_t)V) : 1e9;
        worst = d > worst ? d : worst;
        if (!(d <= TOL) || !(dl <= TOL)) {
            printf("  %s prompt %d (%d tokens): max abs logit error %.3g > %.0e\n", name, i,
                   r->n_ids, d, TOL);
            ok = 0;
        }
        int32_t tok = argmax(last, V);
        for (int g = 0; g < r->n_greedy && ok; g++) {
            if (tok != r->greedy[g]) {
                printf("  %s prompt %d: greedy step %d: got %d, HF %d\n", name, i, g, (int)tok,
                       (int)r->greedy[g]);
                greedy_ok = 0;
                break;
            }
            if (qwen35_forward(m, s, &tok, 1, last, NULL, &err) != NC_OK) ok = 0;
            tok = argmax(last, V);
        }
        qwen35_state_free(s);
    }
    printf("  %s (%s kernels): max abs logit error vs HF %.3g over prompts of %d..%d tokens\n",
           name, cpu_kernels_get()->name, worst, f.p[0].n_ids, f.p[f.n_prompts - 1].n_ids);
    free(all);
    free(last);
    qwen35_free(m);
    fixture_free(&f);
    CHECKF(ok, "%s", err.msg);
    CHECK(greedy_ok);
}

static void test_text_layout_untied_matches_hf(void) {
    check_fixture("tiny_text_untied");
}
static void test_hub_layout_tied_matches_hf(void) {
    check_fixture("tiny_vl_tied");
}

/* The long prompt in uneven pieces (the state carried between calls, chunks
 * no longer aligned with HF's), one token at a time, then truncated: back
 * to a position after the snapshot (replayed from it) and to one before it
 * (replayed from the start). */
static void check_pieces_and_truncation(const char *name) {
    fixture f;
    nc_error err;
    if (fixture_load(name, &f, &err) != 0) SKIP("%s", err.msg);
    prompt_ref *r = &f.p[f.n_prompts - 1];
    qwen35_model *m;
    qwen35_state *s;
    CHECK_OK(qwen35_load(f.dir, TEST_THREADS, &m, &err), &err);
    int V = qwen35_model_config(m)->vocab_size, T = r->n_ids;
    CHECK_OK(qwen35_state_new(m, 512, &s, &err), &err);
    float *lg = malloc(sizeof(float) * (size_t)T * V);
    int cuts[] = {0, 5, 70, 71, 150, T};
    for (int c = 0; c + 1 < 6; c++)
        qwen35_forward(m, s, r->ids + cuts[c], cuts[c + 1] - cuts[c], NULL,
                       lg + (size_t)cuts[c] * V, &err);
    double d_pieces = prompt_error(r, lg, V);
    qwen35_state_truncate(s, 0);
    for (int t = 0; t < T; t++)
        qwen35_forward(m, s, r->ids + t, 1, lg + (size_t)t * V, NULL, &err);
    double d_steps = prompt_error(r, lg, V);
    /* snapshot after the 120-token call; truncate to 130 and 100 */
    qwen35_state_truncate(s, 0);
    qwen35_forward(m, s, r->ids, 120, NULL, lg, &err);
    qwen35_forward(m, s, r->ids + 120, T - 120, NULL, lg + (size_t)120 * V, &err);
    int kept1 = qwen35_state_truncate(s, 130);
    qwen35_forward(m, s, r->ids + 130, T - 130, NULL, lg + (size_t)130 * V, &err);
    double d_trunc1 = prompt_error(r, lg, V);
    int kept2 = qwen35_state_truncate(s, 100);
    qwen35_forward(m, s, r->ids + 100, T - 100, NULL, lg + (size_t)100 * V, &err);
    double d_trunc2 = prompt_error(r, lg, V);
    printf("  %s: pieces %.3g, one at a time %.3g, truncate to 130 %.3g, to 100 %.3g\n", name,
           d_pieces, d_steps, d_trunc1, d_trunc2);
    int pos = qwen35_state_pos(s);
    free(lg);
    qwen35_state_free(s);
    qwen35_free(m);
    fixture_free(&f);
    CHECK(kept1 == 130 && kept2 == 100 && pos == T);
    CHECK(d_pieces <= TOL && d_steps <= TOL && d_trunc1 <= TOL && d_trunc2 <= TOL);
}

static void test_pieces_steps_and_truncation_match_hf(void) {
    check_pieces_and_truncation("tiny_text_untied");
    if (nc_test_failed_) return;
    check_pieces_and_truncation("tiny_vl_tied");
}

/* Three sequences in one batch: the long prompt, the chat prompt continued
 * from a cached prefix, one decoding step; each must match its HF logits
 * (or the same step run alone). A state copy continues like the original. */
static void test_batch_of_sequences_and_state_copy(void) {
    fixture f;
    nc_error err;
    if (fixture_load("tiny_vl_tied", &f, &err) != 0) SKIP("%s", err.msg);
    qwen35_model *m;
    CHECK_OK(qwen35_load(f.dir, TEST_THREADS, &m, &err), &err);
    int V = qwen35_model_config(m)->vocab_size;
    prompt_ref *pa = &f.p[2], *pb = &f.p[1], *pc = &f.p[0];
    qwen35_state *sa, *sb, *sc, *sd, *se;
    CHECK_OK(qwen35_state_new(m, 512, &sa, &err), &err);
    CHECK_OK(qwen35_state_new(m, 512, &sb, &err), &err);
    CHECK_OK(qwen35_state_new(m, 512, &sc, &err), &err);
    CHECK_OK(qwen35_state_new(m, 512, &sd, &err), &err);
    /* a copy into a longer context: each KV head starts elsewhere */
    CHECK_OK(qwen35_state_new(m, 640, &se, &err), &err);
    int kb = pb->n_ids / 2;
    float *la = malloc(sizeof(float) * (size_t)pa->n_ids * V);
    float *lb = malloc(sizeof(float) * (size_t)pb->n_ids * V);
    float *lc = malloc(sizeof(float) * V), *ld = malloc(sizeof(float) * V),
          *le = malloc(sizeof(float) * V);
    qwen35_forward(m, sb, pb->ids, kb, NULL, NULL, &err);
    qwen35_forward(m, sc, pc->ids, pc->n_ids, NULL, NULL, &err);
    qwen35_forward(m, sd, pc->ids, pc->n_ids, NULL, NULL, &err);
    nc_status st_copy = qwen35_state_copy(se, sd, &err);
    int32_t next = pc->greedy[0];
    qwen35_forward(m, sd, &next, 1, ld, NULL, &err);
    qwen35_forward(m, se, &next, 1, le, NULL, &err);
    qwen35_batch_item items[3] = {{sa, pa->ids, pa->n_ids, NULL, la},
                                  {sb, pb->ids + kb, pb->n_ids - kb, NULL, lb},
                                  {sc, &next, 1, lc, NULL}};
    nc_status st = qwen35_forward_batch(m, items, 3, &err);
    double da = prompt_error(pa, la, V);
    /* lb holds positions kb.. of prompt b */
    double db = 0;
    for (int k = 0; k < pb->n_pos; k++)
        if (pb->pos[k] >= kb) {
            double d = max_abs_diff(lb + (size_t)(pb->pos[k] - kb) * V, pb->logits + (size_t)k * V,
                                    (size_t)V);
            db = d > db ? d : db;
        }
    double dc = max_abs_diff(lc, ld, (size_t)V), de = max_abs_diff(le, ld, (size_t)V);
    printf("  batch: prompt %.3g, continued prompt %.3g, decode step vs alone %.3g, copy %.3g\n",
           da, db, dc, de);
    int pos_ok = qwen35_state_pos(sa) == pa->n_ids && qwen35_state_pos(sb) == pb->n_ids &&
                 qwen35_state_pos(sc) == pc->n_ids + 1;
    free(la);
    free(lb);
    free(lc);
    free(ld);
    free(le);
    qwen35_state_free(sa);
    qwen35_state_free(sb);
    qwen35_state_free(sc);
    qwen35_state_free(sd);
    qwen35_state_free(se);
    qwen35_free(m);
    fixture_free(&f);
    CHECK(st == NC_OK && st_copy == NC_OK && pos_ok);
    CHECK(da <= TOL && db <= TOL && dc <= 1e-5 && de == 0.0);
}

/* The delta rule in double precision, token by token, straight from the
 * recurrence; the recurrent and chunked forms must both match it with every
 * ISA's product kernel (DV = 20: the masked and scalar column tails). */
static void test_delta_rule_kernels_match_double_reference(void) {
    enum { T = 150, DK = 12, DV = 20 };
    static float q[T][DK], k[T][DK], v[T][DV], g[T], beta[T], out_r[T][DV], out_c[T][DV];
    static double S[DK][DV], ref[T][DV];
    unsigned x = 12345;
#define RND() ((x = x * 1103515245u + 12345u), ((float)((x >> 8) & 0xffff) / 65536.0f - 0.5f))
    for (int t = 0; t < T; t++) {
        for (int a = 0; a < DK; a++)
            q[t][a] = RND(), k[t][a] = RND();
        for (int j = 0; j < DV; j++)
            v[t][j] = RND() * 4;
        cpu_l2norm_scale(q[t], DK, 1e-6f, 1.0f / sqrtf(DK));
        cpu_l2norm_scale(k[t], DK, 1e-6f, 1.0f);
        g[t] = -0.3f * (RND() + 0.5f);
        beta[t] = RND() + 0.5f;
    }
    memset(S, 0, sizeof S);
    for (int t = 0; t < T; t++) {
        double kv[DV] = {0};
        for (int a = 0; a < DK; a++)
            for (int j = 0; j < DV; j++) {
                S[a][j] *= exp((double)g[t]);
                kv[j] += S[a][j] * k[t][a];
            }
        for (int a = 0; a < DK; a++)
            for (int j = 0; j < DV; j++)
                S[a][j] += k[t][a] * (v[t][j] - kv[j]) * beta[t];
        for (int j = 0; j < DV; j++) {
            ref[t][j] = 0;
            for (int a = 0; a < DK; a++)
                ref[t][j] += S[a][j] * q[t][a];
        }
    }
    /* every ISA's product kernel this CPU has */
    const cpu_kernels *tables[8];
    int nt = cpu_kernels_available(tables, 8), ok = 1;
    float *scratch = malloc(cpu_delta_scratch_floats(64, DK, DV) * sizeof(float));
    for (int ti = 0; ti < nt; ti++) {
        if (!tables[ti]->name) continue; /* listed but not set up (NECTAR_NO_SIMD) */
        cpu_gemm_acc_fn gemm = cpu_delta_gemm_for(tables[ti]);
        float Sr[DK * DV] = {0}, Sc[DK * DV] = {0};
        cpu_delta_head h = {q[0], k[0], v[0], g, beta, DK, DV, 1, DV, out_r[0], Sr, T, DK, DV};
        cpu_delta_recurrent(&h, gemm);
        h.out = out_c[0];
        h.state = Sc;
        h.n = 70; /* 64 + 6, then the rest: the state carried between calls */
        cpu_delta_chunked(&h, 64, scratch, gemm);
        h.q = q[70], h.k = k[70], h.v = v[70], h.g = g + 70, h.beta = beta + 70;
        h.out = out_c[70], h.n = T - 70;
        cpu_delta_chunked(&h, 64, scratch, gemm);
        double er = 0, ec = 0, es = 0;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < DV; j++) {
                er = nc_worse(er, fabs(out_r[t][j] - ref[t][j]));
                ec = nc_worse(ec, fabs(out_c[t][j] - ref[t][j]));
            }
        for (int a = 0; a < DK; a++)
            for (int j = 0; j < DV; j++)
                es = nc_worse(es, fabs(Sc[a * DV + j] - S[a][j]) + fabs(Sr[a * DV + j] - S[a][j]));
        printf("  %s: vs double: recurrent %.3g, chunked %.3g, final states %.3g\n",
               tables[ti]->name, er, ec, es);
        ok &= er <= 1e-5 && ec <= 1e-5 && es <= 1e-5;
    }
    free(scratch);
    CHECK(ok);
}

int main(void) {
    RUN(test_text_layout_untied_matches_hf);
    RUN(test_hub_layout_tied_matches_hf);
    RUN(test_pieces_steps_and_truncation_match_hf);
    RUN(test_batch_of_sequences_and_state_copy);
    RUN(test_delta_rule_kernels_match_double_reference);
    return nc_test_exit_code();
}
