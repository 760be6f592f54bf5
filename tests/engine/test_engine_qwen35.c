/* The engine seam over a Qwen3.5 bundle (tests/fixtures/qwen35/tiny_vl_tied,
 * lowered here): qwen35-ane on the fake device runs the same fp16 programs
 * as qwen35-mil, through the ane_host plan (surfaces, gather/scatter,
 * recurrent states in surfaces) instead of the interpreter's named
 * buffers, so every logit is the same bit for bit; the greedy ids of both
 * are HF transformers' (reference.json, independent of nectar). Two
 * sequences share each step; a truncation resets the recurrent states and
 * replays, giving the first pass's logits again; the bundle's programs are
 * opened once per engine. Both prefill forms (chunked, unrolled). */
#include <stdlib.h>
#include <string.h>

#include "../common/bundle_ref.h"
#include "../test.h"
#include "ane_host/ane_fake.h"
#include "engine/engine.h"
#include "bundle/manifest.h"
#include "lower/qwen35_lower.h"

#define FIXTURE "tests/fixtures/qwen35/tiny_vl_tied"
#define N_GREEDY 12

/* per prefill form (lower_q35_prefill_form: chunked, unrolled) */
static char bundles[2][256], tmp_root[256];
static const char *bundle = bundles[0];

static int compile_bundle_form(int form) {
    return bundles[form][0] ||
           nc_test_compile_bundle(tmp_root, sizeof tmp_root, "engine35", FIXTURE,
                                  form ? "unrolled" : "chunked", bundles[form],
                                  sizeof bundles[form], 128, 4, 0, form);
}

static int compile_bundle(void) {
    return compile_bundle_form(LOWER_Q35_PREFILL_CHUNKED);
}

typedef struct prompt_ref {
    int n_ids, ids[64], greedy[N_GREEDY];
} prompt_ref;

static int load_prompt(int which, prompt_ref *p) {
    return nc_test_load_prompt(FIXTURE, which, (int)(sizeof p->ids / sizeof p->ids[0]), N_GREEDY,
                               p->ids, &p->n_ids, p->greedy);
}

/* Prompts 1 (33 tokens) and 0 (4) in one engine, one step for both, then
 * N_GREEDY - 1 greedy tokens each, both per step; all logits into out
 * ([N_GREEDY][2][V]), the greedy ids into gen. Then sequence 0 is cut 5
 * tokens back and given them again: the replay must give out's first row
 * bit for bit (into redo). */
static int run_engine(const char *kind, const char *dir, const prompt_ref p[2], float *out,
                      float *redo, int gen[2][N_GREEDY], int *V_out) {
    nc_error err = {0};
    engine_options opt = {.n_threads = 1, .ane_device = ENGINE_ANE_FAKE};
    engine *e = NULL;
    if (engine_open(kind, dir, &opt, &e, &err)) {
        printf("  %s: %s\n", kind, err.msg);
        return 0;
    }
    int V = *V_out = e->n_vocab, ok = 1;
    engine_seq *s[2] = {NULL, NULL};
    for (int i = 0; i < 2 && ok; i++)
        ok = engine_seq_new(e, 0, &s[i], &err) == NC_OK;
    engine_step_item items[2];
    int32_t next[2];
    for (int i = 0; ok && i < 2; i++)
        items[i] =
            (engine_step_item){s[i], (const int32_t *)p[i].ids, p[i].n_ids, NULL, NC_OK, {0}, 0};
    for (int t = 0; ok && t < N_GREEDY; t++) {
        for (int i = 0; i < 2; i++)
            items[i].logits = out + ((size_t)t * 2 + (size_t)i) * V;
        ok = engine_step(e, items, 2, &err) == NC_OK;
        for (int i = 0; ok && i < 2; i++) {
            if (items[i].status != NC_OK) {
                err = items[i].err;
                ok = 0;
                break;
            }
            gen[i][t] = next[i] = nc_test_argmax(items[i].logits, V);
            items[i].tokens = &next[i];
            items[i].n = 1;
        }
    }
    if (ok) {
        int keep = p[0].n_ids - 5;
        ok = engine_seq_truncate(e, s[0], keep) == keep && engine_seq_pos(e, s[0]) == keep &&
             engine_forward(e, s[0], (const int32_t *)p[0].ids + keep, 5, redo, &err) == NC_OK;
    }
    if (!ok) printf("  %s: %s\n", kind, err.msg);
    for (int i = 0; i < 2; i++)
        if (s[i]) engine_seq_free(e, s[i]);
    engine_close(e);
    return ok;
}

/* dir: a bundle with either prefill form (the plan picks the chunk mixer by
 * its I/O names, whatever its internal form) */
static void ane_equals_mil(const char *dir) {
    prompt_ref p[2];
    CHECK(load_prompt(1, &p[0]) && load_prompt(0, &p[1]));
    size_t cap = (size_t)N_GREEDY * 2 * 512;
    float *l[2] = {calloc(cap, sizeof(float)), calloc(cap, sizeof(float))};
    float *redo[2] = {calloc(512, sizeof(float)), calloc(512, sizeof(float))};
    int gen[2][2][N_GREEDY], V[2] = {0, 0};
    CHECK(l[0] && l[1] && redo[0] && redo[1]);
    static const char *const kinds[2] = {"qwen35-mil", "qwen35-ane"};
    for (int k = 0; k < 2; k++)
        CHECK(run_engine(kinds[k], dir, p, l[k], redo[k], gen[k], &V[k]));
    CHECK(V[0] == V[1] && V[0] > 0 && V[0] <= 512);
    size_t n = (size_t)N_GREEDY * 2 * V[0];
    size_t differ = 0;
    for (size_t i = 0; i < n; i++)
        differ += memcmp(&l[0][i], &l[1][i], sizeof(float)) != 0;
    CHECKF(differ == 0, "%zu of %zu logits differ between mil and ane", differ, n);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 2; i++)
            for (int t = 0; t < N_GREEDY; t++)
                CHECKF(gen[k][i][t] == p[i].greedy[t], "%s prompt %d step %d: %d, HF %d", kinds[k],
                       i, t, gen[k][i][t], p[i].greedy[t]);
        /* reset + replay of the kept 28 and the 5 again: one chunk of 33,
         * as the first pass ran it */
        CHECKF(memcmp(redo[k], l[k], (size_t)V[0] * sizeof(float)) == 0,
               "%s: the replay after a truncation differs", kinds[k]);
    }
    for (int k = 0; k < 2; k++) {
        free(l[k]);
        free(redo[k]);
    }
}

static void test_qwen35_ane_fake_equals_mil_bit_for_bit_and_hf(void) {
    for (int form = 0; form < 2; form++) {
        CHECK(compile_bundle_form(form));
        ane_equals_mil(bundles[form]);
        if (nc_test_failed_) printf("  with prefill form %d\n", form);
    }
}

/* The programs are opened (compiled and loaded, on a real ANE) once per
 * engine: sequences open nothing more. */
static void test_qwen35_ane_sequences_share_the_loaded_bundle(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    const char *kind = NULL;
    CHECK_OK(engine_kind_for("ane", bundle, &kind, &err), &err);
    CHECK(!strcmp(kind, "qwen35-ane"));
    engine_options opt = {.n_threads = 1, .ane_device = ENGINE_ANE_FAKE};
    engine *e = NULL;
    long before = ane_fake_models_opened();
    CHECK_OK(engine_open(kind, bundle, &opt, &e, &err), &err);
    CHECK(!strcmp(e->kind, "qwen35-ane (fake device)"));
    long opened = ane_fake_models_opened() - before;
    lower_manifest man;
    CHECK_OK(lower_manifest_read(bundle, &man, &err), &err);
    CHECKF(opened == man.n_programs, "engine_open opened %ld programs, the bundle has %d", opened,
           man.n_programs);
    engine_seq *s[3] = {NULL, NULL, NULL};
    float *logits = malloc((size_t)e->n_vocab * sizeof *logits);
    int32_t tok[2] = {1, 2};
    for (int i = 0; i < 3 && logits; i++) {
        CHECK_OK(engine_seq_new(e, 0, &s[i], &err), &err);
        CHECK_OK(engine_forward(e, s[i], tok, 1 + i % 2, logits, &err), &err);
    }
    CHECKF(ane_fake_models_opened() - before == opened, "3 sequences opened %ld more programs",
           ane_fake_models_opened() - before - opened);
    free(logits);
    for (int i = 0; i < 3; i++)
        engine_seq_free(e, s[i]);
    engine_close(e);
    lower_manifest_free(&man);
}

int main(void) {
    RUN(test_qwen35_ane_fake_equals_mil_bit_for_bit_and_hf);
    RUN(test_qwen35_ane_sequences_share_the_loaded_bundle);
    nc_test_remove_root(tmp_root);
    return nc_test_exit_code();
}
