/* The engine seam over every model family on every backend: for each row
 * of the family table (models/family.h) and each backend of the engine
 * table, a fixture of that family (on mil and ane: the bundle compiled
 * here from it) is given the kind engine_kind_for picks, and a decoder
 * driven token by token through engine_step gives HF transformers' greedy
 * ids (reference.json, independent of nectar); the ane kinds on the fake
 * device. Also: several sequences in one step, prefix truncation,
 * engine_kind_for's table, and that a real device on Linux is refused in
 * one line. */
#include <stdlib.h>
#include <string.h>

#include "../common/bundle_ref.h"
#include "../test.h"
#include "ane_host/ane_fake.h"
#include "engine/engine.h"
#include "engine/engine_options.h"
#include "bundle/manifest.h"

#define FIXTURE "tests/fixtures/qwen3/tiny_gqa2"
#define N_GREEDY 16

static char bundle[256], tmp_root[256];

static int compile_bundle(void) {
    return bundle[0] || nc_test_compile_bundle(tmp_root, sizeof tmp_root, "engine", FIXTURE,
                                               "bundle", bundle, sizeof bundle, 64, 4, 0, 0);
}

typedef struct prompt_ref {
    int n_ids, ids[64], greedy[N_GREEDY];
} prompt_ref;

static int load_prompt(const char *fixture, int which, prompt_ref *p) {
    return nc_test_load_prompt(fixture, which, (int)(sizeof p->ids / sizeof p->ids[0]), N_GREEDY,
                               p->ids, &p->n_ids, p->greedy);
}

/* Two prompts of `fixture` in one engine opened on dir, one step per
 * token for both: greedy ids of each equal HF's. The first is then
 * truncated by one token and redone, and must give the same. */
static void greedy_matches_hf_on(const char *kind, const char *dir, const char *fixture) {
    prompt_ref p[2];
    CHECK(load_prompt(fixture, 0, &p[0]) && load_prompt(fixture, 1, &p[1]));
    nc_error err = {0};
    engine_options opt = {0};
    opt.n_threads = 1;
    opt.ane_device = ENGINE_ANE_FAKE;
    engine *e = NULL;
    CHECK_OK(engine_open(kind, dir, &opt, &e, &err), &err);
    CHECK(e->family == engine_kind_family(kind));
    int V = e->n_vocab;
    float *logits = malloc(2 * (size_t)V * sizeof(float));
    engine_seq *s[2] = {NULL, NULL};
    nc_status st = NC_OK;
    for (int i = 0; i < 2 && st == NC_OK; i++)
        st = engine_seq_new(e, 64, &s[i], &err);
    int32_t next[2];
    int gen[2][N_GREEDY], ok = logits && st == NC_OK;
    engine_step_item items[2];
    for (int i = 0; ok && i < 2; i++)
        items[i] = (engine_step_item){
            s[i], (const int32_t *)p[i].ids, p[i].n_ids, logits + (size_t)i * V, NC_OK, {0}, 0};
    for (int t = 0; ok && t < N_GREEDY; t++) {
        ok = engine_step(e, items, 2, &err) == NC_OK;
        for (int i = 0; ok && i < 2; i++) {
            if (items[i].status != NC_OK) {
                err = items[i].err;
                ok = 0;
                break;
            }
            gen[i][t] = next[i] = nc_test_argmax(logits + (size_t)i * V, V);
            items[i].tokens = &next[i];
            items[i].n = 1;
        }
    }
    if (!ok) printf("  %s: %s\n", kind, err.msg);
    for (int i = 0; ok && i < 2; i++)
        for (int t = 0; t < N_GREEDY; t++)
            if (gen[i][t] != p[i].greedy[t]) {
                printf("  %s prompt %d step %d: %d, HF %d\n", kind, i, t, gen[i][t],
                       p[i].greedy[t]);
                ok = 0;
                break;
            }
    /* rewind sequence 0 to its prompt minus one token and redo the first step */
    if (ok) {
        int kept = engine_seq_truncate(e, s[0], p[0].n_ids - 1);
        ok = kept == p[0].n_ids - 1 && engine_seq_pos(e, s[0]) == kept &&
             engine_forward(e, s[0], (const int32_t *)&p[0].ids[kept], 1, logits, &err) == NC_OK &&
             nc_test_argmax(logits, V) == p[0].greedy[0];
        if (!ok) printf("  %s: truncate and redo: %s\n", kind, err.msg);
    }
    engine_seq_free(e, s[0]);
    engine_seq_free(e, s[1]);
    free(logits);
    engine_close(e);
    CHECK(ok);
}

/* A fixture of each family (HF folders with reference.json for decoders). */
static const struct {
    const char *family, *dir;
} family_fixtures[] = {
    {"qwen3", FIXTURE},
    {"qwen35", "tests/fixtures/qwen35/tiny_text_untied"},
    {"llama", "tests/fixtures/llama/tiny_llama3"},
    {"gemma3", "tests/fixtures/gemma3/tiny_gemma3_text"},
    {"modernbert", "tests/fixtures/modernbert/mb_base"},
};

static const char *fixture_of(const model_family_row *f) {
    for (size_t i = 0; i < sizeof family_fixtures / sizeof family_fixtures[0]; i++)
        if (!strcmp(family_fixtures[i].family, f->name)) return family_fixtures[i].dir;
    return NULL;
}

/* The bundle of family f's fixture (compiled once, into the test's root). */
static const char *bundle_of(const model_family_row *f, const char *fixture) {
    static char dirs[8][256];
    static const model_family_row *of[8];
    if (!strcmp(fixture, FIXTURE)) return compile_bundle() ? bundle : NULL;
    int i = 0;
    while (i < 8 && of[i] && of[i] != f)
        i++;
    if (i == 8) return NULL;
    if (!of[i] && !nc_test_compile_bundle(tmp_root, sizeof tmp_root, "engine", fixture, f->name,
                                          dirs[i], sizeof dirs[i], 64, 4, 0, 0))
        return NULL;
    of[i] = f;
    return dirs[i];
}

/* Every family of the table on every backend: its folder (or its bundle)
 * gets the kind of its family on that backend, the engine says which
 * family it is (its template and end tokens), and a decoder's greedy ids
 * equal HF's. A family added to the table without a fixture here fails,
 * as does one with a lowering but no bundle kind. */
static void test_every_family_on_every_backend(void) {
    int n = 0;
    for (const model_family_row *f; (f = model_family_at(n)); n++) {
        const char *fixture = fixture_of(f);
        CHECKF(fixture, "family %s has no fixture in test_engine.c", f->name);
        for (int b = 0; fixture && engine_backend_at(b); b++) {
            const char *backend = engine_backend_at(b), *kind = engine_family_kind(f, backend);
            int on_bundle = strcmp(backend, "cpu") != 0;
            CHECKF(kind || (on_bundle && !f->compiles), "family %s has no %s kind", f->name,
                   backend);
            if (!kind) continue;
            CHECKF(engine_kind_family(kind) == f, "%s: kind %s", f->name, kind);
            /* an encoder's bundle kinds: engine_kind_for reads the folder's
             * model_type (its bundles are opened in the encoder tests) */
            const char *dir = on_bundle && !f->is_encoder ? bundle_of(f, fixture) : fixture;
            CHECKF(dir, "%s: no bundle of %s", f->name, fixture);
            const char *picked = NULL;
            nc_error err = {0};
            if (dir) CHECK_OK(engine_kind_for(backend, dir, &picked, &err), &err);
            CHECKF(picked == kind, "%s on %s: engine_kind_for picks %s, the table has %s", f->name,
                   backend, picked ? picked : "none", kind);
            if (dir && !f->is_encoder) greedy_matches_hf_on(kind, dir, fixture);
            if (f->is_encoder && !on_bundle) {
                engine *e = NULL;
                CHECK_OK(engine_open(kind, dir, NULL, &e, &err), &err);
                CHECK(e && e->is_encoder && e->family == f && e->encoder);
                engine_close(e);
            }
            printf("  %s on %s: %s\n", f->name, backend, kind);
        }
    }
    CHECK(n >= 4);
    CHECK(!model_family_of_kind("script") &&
          engine_kind_family("script") == model_family_named("qwen3"));
    CHECK(!engine_kind_family("no-such-kind") && !engine_kind_family(NULL));
}

/* The kinds are exactly what the two tables make: every family on the cpu
 * backend, the families with a lowering on each bundle backend, and the
 * script kind, each once; the family count the kind table is sized by
 * (MODEL_FAMILY_ROWS) is the family table's. */
static void test_kinds_are_families_times_backends(void) {
    int families = 0, want = 1; /* + "script" */
    for (const model_family_row *f; (f = model_family_at(families)); families++)
        for (int b = 0; engine_backend_at(b); b++)
            want += f->compiles || !strcmp(engine_backend_at(b), "cpu");
    CHECKF(families == MODEL_FAMILY_ROWS, "%d families, MODEL_FAMILY_ROWS %d", families,
           MODEL_FAMILY_ROWS);
    const char *const *kinds = engine_kinds();
    int n = 0;
    while (kinds[n])
        n++;
    CHECKF(n == want, "%d kinds, the tables make %d", n, want);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            CHECKF(strcmp(kinds[i], kinds[j]), "kind %s twice", kinds[i]);
    for (int i = 0; i < n; i++) {
        const model_family_row *f = engine_kind_family(kinds[i]);
        CHECKF(f, "kind %s has no family", kinds[i]);
        int found = !strcmp(kinds[i], "script");
        for (int b = 0; f && engine_backend_at(b); b++)
            found |= engine_family_kind(f, engine_backend_at(b)) == kinds[i];
        CHECKF(found, "kind %s is no family's on any backend", kinds[i]);
    }
}

/* The bundle's programs are opened (compiled and loaded, on a real ANE) once
 * per engine: three sequences open nothing more, and each still decodes
 * like HF on its own surfaces (greedy_matches_hf_on runs two interleaved). */
static void test_qwen3_ane_sequences_share_the_loaded_bundle(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    engine_options opt = {.n_threads = 1, .ane_device = ENGINE_ANE_FAKE};
    engine *e = NULL;
    long before = ane_fake_models_opened();
    CHECK_OK(engine_open("qwen3-ane", bundle, &opt, &e, &err), &err);
    long opened = ane_fake_models_opened() - before;
    lower_manifest man;
    CHECK_OK(lower_manifest_read(bundle, &man, &err), &err);
    CHECKF(opened == man.n_programs, "engine_open opened %ld programs, the bundle has %d", opened,
           man.n_programs);
    engine_seq *s[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        CHECK_OK(engine_seq_new(e, 0, &s[i], &err), &err);
    float *logits = malloc((size_t)e->n_vocab * sizeof *logits);
    int32_t tok = 1;
    for (int i = 0; i < 3 && logits; i++)
        CHECK_OK(engine_forward(e, s[i], &tok, 1, logits, &err), &err);
    CHECKF(ane_fake_models_opened() - before == opened, "3 sequences opened %ld more programs",
           ane_fake_models_opened() - before - opened);
    free(logits);
    for (int i = 0; i < 3; i++)
        engine_seq_free(e, s[i]);
    engine_close(e);
    lower_manifest_free(&man);
}

static void test_kind_for_reads_the_model_type(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    const char *kind = NULL;
    CHECK_OK(engine_kind_for("cpu", FIXTURE, &kind, &err), &err);
    CHECK(!strcmp(kind, "qwen3-cpu"));
    CHECK_OK(engine_kind_for("ane", bundle, &kind, &err), &err);
    CHECK(!strcmp(kind, "qwen3-ane"));
    CHECK_OK(engine_kind_for("mil", "tests/fixtures/modernbert/mb_base", &kind, &err), &err);
    CHECK(!strcmp(kind, "modernbert-mil"));
    CHECK(engine_kind_for("gpu", FIXTURE, &kind, &err) == NC_ERR_INVALID &&
          strstr(err.msg, "cpu, mil or ane"));
    CHECK_OK(engine_kind_for("ane", "tests/fixtures/modernbert/mb_base", &kind, &err), &err);
    CHECK(!strcmp(kind, "modernbert-ane"));
    /* a known family without an engine for that backend (the test engine's) */
    CHECK(engine_kind_for("script", FIXTURE, &kind, &err) == NC_ERR_INVALID &&
          strstr(err.msg, "model_type 'qwen3' has no script engine"));
    CHECK(engine_kind_for_decoder("cpu", "tests/fixtures/modernbert/mb_base", &kind, &err) ==
              NC_ERR_INVALID &&
          strstr(err.msg, "model_type 'modernbert' is not supported"));
    CHECK(engine_kind_for_encoder("cpu", FIXTURE, &kind, &err) == NC_ERR_INVALID);
    CHECK(engine_kind_for("cpu", "tests/fixtures", &kind, &err) == NC_ERR_NOT_FOUND &&
          strstr(err.msg, "config.json: file not found"));
}

static void test_bundle_context_is_fixed(void) {
    CHECK(compile_bundle());
    nc_error err = {0};
    engine_options opt = {0};
    opt.ctx = 128;
    opt.ane_device = ENGINE_ANE_FAKE;
    engine *e = NULL;
    CHECK(engine_open("qwen3-mil", bundle, &opt, &e, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "compiled for a context of 64") != NULL);
    opt.ctx = 64;
    CHECK_OK(engine_open("qwen3-mil", bundle, &opt, &e, &err), &err);
    CHECK(e->ctx_max == 64 && e->n_layers == 3 && e->dims.layers == 3 && e->n_eos >= 1);
    engine_close(e);
}

/* A bundle engine reads the bundle through its family's row: a kind of
 * another family (Qwen3.5 on a Qwen3 bundle, and back) fails to open in
 * one line naming the bundle's config.json, on both bundle backends. */
static void test_bundle_of_another_family_is_one_line(void) {
    const model_family_row *q35 = model_family_named("qwen35");
    const char *b35 = q35 ? bundle_of(q35, fixture_of(q35)) : NULL;
    CHECK(compile_bundle() && b35);
    static const struct {
        const char *kind;
        int on_qwen35_bundle;
    } cases[] = {{"qwen35-mil", 0}, {"qwen35-ane", 0}, {"qwen3-mil", 1}, {"qwen3-ane", 1}};
    for (size_t i = 0; b35 && i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = cases[i].on_qwen35_bundle ? b35 : bundle;
        nc_error err = {0};
        engine_options opt = {.n_threads = 1, .ane_device = ENGINE_ANE_FAKE};
        engine *e = NULL;
        nc_status st = engine_open(cases[i].kind, dir, &opt, &e, &err);
        CHECKF(st != NC_OK && !e && strstr(err.msg, "config.json") && !strchr(err.msg, '\n'),
               "%s on %s: %s", cases[i].kind, dir, st ? err.msg : "opened");
        engine_close(e);
    }
}

static void test_real_ane_device_off_macos_is_one_line(void) {
#if defined(__APPLE__)
    SKIP("macOS: the real device exists here");
#else
    CHECK(compile_bundle());
    nc_error err = {0};
    engine_options opt = {0};
    opt.ane_device = ENGINE_ANE_REAL;
    engine *e = NULL;
    CHECK(engine_open("qwen3-ane", bundle, &opt, &e, &err) == NC_ERR_UNSUPPORTED);
    CHECK(e == NULL && strstr(err.msg, "macOS") && !strchr(err.msg, '\n'));
#endif
}

int main(void) {
    RUN(test_every_family_on_every_backend);
    RUN(test_kinds_are_families_times_backends);
    RUN(test_qwen3_ane_sequences_share_the_loaded_bundle);
    RUN(test_kind_for_reads_the_model_type);
    RUN(test_bundle_context_is_fixed);
    RUN(test_bundle_of_another_family_is_one_line);
    RUN(test_real_ane_device_off_macos_is_one_line);
    nc_test_remove_root(tmp_root);
    return nc_test_exit_code();
}
