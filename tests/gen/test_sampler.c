/* The sampler against tests/fixtures/gen/sampler_cases.json, written by
 * tools/make_sampler_fixtures.py with numpy and cross-checked there against
 * transformers' logits processors: exact distributions per filter chain, then
 * sampling frequencies with a fixed seed within a binomial bound. */
#include "../test.h"
#include "base/json.h"
#include "gen/rng.h"
#include "gen/sampler.h"

#define FIXTURE "tests/fixtures/gen/sampler_cases.json"
#define MAXV 2048

typedef struct fixture_case {
    char name[64];
    int n_vocab;
    float logits[MAXV];
    double probs[MAXV];
    int32_t history[64];
    int n_history;
    gen_sampler_params p;
} fixture_case;

static json_t *load_cases(void) {
    json_t *doc = NULL;
    nc_error err;
    if (nc_json_load_file(FIXTURE, &doc, &err) != NC_OK) {
        printf("  %s\n", err.msg);
        return NULL;
    }
    return doc;
}

/* One case; its vocabulary is the length of its logits. */
static int read_case(const json_t *c, fixture_case *fc) {
    memset(fc, 0, sizeof *fc);
    int n_vocab = (int)json_array_size(json_object_get(c, "logits"));
    snprintf(fc->name, sizeof fc->name, "%s", json_string_value(json_object_get(c, "name")));
    fc->n_vocab = n_vocab;
    const json_t *lg = json_object_get(c, "logits"), *pr = json_object_get(c, "probs"),
                 *hi = json_object_get(c, "history"), *pa = json_object_get(c, "params");
    if (n_vocab > MAXV || json_array_size(lg) != (size_t)n_vocab ||
        json_array_size(pr) != (size_t)n_vocab || json_array_size(hi) > 64)
        return 0;
    for (int i = 0; i < n_vocab; i++) {
        fc->logits[i] = (float)json_number_value(json_array_get(lg, (size_t)i));
        fc->probs[i] = json_number_value(json_array_get(pr, (size_t)i));
    }
    fc->n_history = (int)json_array_size(hi);
    for (int i = 0; i < fc->n_history; i++)
        fc->history[i] = (int32_t)json_integer_value(json_array_get(hi, (size_t)i));
    fc->p.temperature = (float)json_number_value(json_object_get(pa, "temperature"));
    fc->p.top_k = (int)json_integer_value(json_object_get(pa, "top_k"));
    fc->p.top_p = (float)json_number_value(json_object_get(pa, "top_p"));
    fc->p.min_p = (float)json_number_value(json_object_get(pa, "min_p"));
    fc->p.repeat_penalty = (float)json_number_value(json_object_get(pa, "repeat_penalty"));
    fc->p.presence_penalty = (float)json_number_value(json_object_get(pa, "presence_penalty"));
    fc->p.frequency_penalty = (float)json_number_value(json_object_get(pa, "frequency_penalty"));
    fc->p.seed = 1234;
    return 1;
}

static void test_sampler_distributions_match_numpy_and_hf_reference(void) {
    json_t *doc = load_cases();
    CHECK(doc);
    const json_t *cases = json_object_get(doc, "cases");
    CHECK(json_array_size(cases) >= 10);
    for (size_t k = 0; k < json_array_size(cases); k++) {
        fixture_case fc;
        if (!read_case(json_array_get(cases, k), &fc)) {
            json_decref(doc);
            CHECKF(0, "fixture case %zu malformed", k);
        }
        gen_sampler *s = NULL;
        nc_error err;
        int n_vocab = fc.n_vocab;
        if (gen_sampler_new(n_vocab, &fc.p, &s, &err) != NC_OK) {
            json_decref(doc);
            CHECKF(0, "%s: %s", fc.name, err.msg);
        }
        for (int i = 0; i < fc.n_history; i++)
            gen_sampler_accept(s, fc.history[i]);
        float probs[MAXV];
        gen_sampler_probs(s, fc.logits, probs);
        gen_sampler_free(s);
        for (int i = 0; i < n_vocab; i++) {
            if (fabs(probs[i] - fc.probs[i]) > 1e-5) {
                json_decref(doc);
                CHECKF(0, "%s: token %d p=%g expected %g", fc.name, i, (double)probs[i],
                       fc.probs[i]);
            }
        }
    }
    json_decref(doc);
}

/* Draws N tokens with a fixed seed and checks each token's frequency against
 * the reference probability within 5 binomial standard deviations (plus a
 * small floor); tokens the reference filtered out must never appear. */
static void test_sampling_frequencies_match_reference_distribution(void) {
    json_t *doc = load_cases();
    CHECK(doc);
    const json_t *cases = json_object_get(doc, "cases");
    const char *which[] = {"plain_softmax", "top_p_0_6",          "qwen_nonthinking",
                           "all_filters",   "presence_frequency", "top_p_0_9_wide_vocab"};
    int n_checked = 0;
    for (size_t k = 0; k < json_array_size(cases); k++) {
        fixture_case fc;
        if (!read_case(json_array_get(cases, k), &fc)) continue;
        int wanted = 0;
        for (size_t w = 0; w < sizeof which / sizeof which[0]; w++)
            wanted |= !strcmp(fc.name, which[w]);
        if (!wanted) continue;
        gen_sampler *s = NULL;
        nc_error err;
        int n_vocab = fc.n_vocab;
        if (gen_sampler_new(n_vocab, &fc.p, &s, &err) != NC_OK) break;
        for (int i = 0; i < fc.n_history; i++)
            gen_sampler_accept(s, fc.history[i]);
        enum { N = 40000 };
        int counts[MAXV] = {0};
        for (int t = 0; t < N; t++)
            counts[gen_sampler_sample(s, fc.logits)]++;
        gen_sampler_free(s);
        for (int i = 0; i < n_vocab; i++) {
            double f = (double)counts[i] / N, p = fc.probs[i];
            double bound = 5.0 * sqrt(p * (1 - p) / N) + 1e-4;
            if (p == 0.0 ? counts[i] != 0 : fabs(f - p) > bound) {
                json_decref(doc);
                CHECKF(0, "%s: token %d drawn %d/%d times, expected p=%g", fc.name, i, counts[i], N,
                       p);
            }
        }
        n_checked++;
    }
    json_decref(doc);
    CHECK(n_checked == 6);
}

static void test_same_seed_same_tokens_other_seed_differs(void) {
    float logits[MAXV];
    for (int i = 0; i < MAXV; i++)
        logits[i] = (float)((i * 37) % 11) * 0.3f;
    gen_sampler_params p = gen_sampler_defaults_greedy();
    p.temperature = 1.0f;
    p.seed = 42;
    gen_sampler *a = NULL, *b = NULL;
    nc_error err;
    CHECK_OK(gen_sampler_new(MAXV, &p, &a, &err), &err);
    CHECK_OK(gen_sampler_new(MAXV, &p, &b, &err), &err);
    int32_t seq_a[200], seq_b[200];
    for (int t = 0; t < 200; t++)
        seq_a[t] = gen_sampler_sample(a, logits);
    for (int t = 0; t < 200; t++)
        seq_b[t] = gen_sampler_sample(b, logits);
    int same = !memcmp(seq_a, seq_b, sizeof seq_a);
    /* reset with the same seed replays the stream */
    gen_sampler_reset(a, &p, &err);
    int replay = 1;
    for (int t = 0; t < 200; t++)
        replay &= gen_sampler_sample(a, logits) == seq_a[t];
    p.seed = 43;
    gen_sampler_reset(b, &p, &err);
    int differs = 0;
    for (int t = 0; t < 200; t++)
        differs |= gen_sampler_sample(b, logits) != seq_a[t];
    gen_sampler_free(a);
    gen_sampler_free(b);
    CHECK(same);
    CHECK(replay);
    CHECK(differs);
}

/* The first outputs of xoshiro256** from state {1, 2, 3, 4}, the test vector
 * of the reference implementation. */
static void test_xoshiro_reference_vector(void) {
    gen_rng r = {{1, 2, 3, 4}};
    CHECK(gen_rng_next(&r) == 11520ull);
    CHECK(gen_rng_next(&r) == 0ull);
    CHECK(gen_rng_next(&r) == 1509978240ull);
    CHECK(gen_rng_next(&r) == 1215971899390074240ull);
    gen_rng_seed(&r, 7);
    for (int i = 0; i < 1000; i++) {
        double u = gen_rng_uniform(&r);
        CHECK(u >= 0.0 && u < 1.0);
    }
}

static void test_penalties_history_and_reset(void) {
    float logits[4] = {2.0f, 1.9f, -1.0f, 0.0f};
    gen_sampler_params p = gen_sampler_defaults_greedy();
    p.repeat_penalty = 2.0f;
    gen_sampler *s = NULL;
    nc_error err;
    CHECK_OK(gen_sampler_new(4, &p, &s, &err), &err);
    int32_t first = gen_sampler_sample(s, logits);
    gen_sampler_accept(s, 0);  /* 2.0 -> 1.0, so token 1 wins */
    gen_sampler_accept(s, 99); /* out of range: ignored */
    int32_t second = gen_sampler_sample(s, logits);
    CHECK_OK(gen_sampler_reset(s, &p, &err), &err);
    int32_t third = gen_sampler_sample(s, logits);
    gen_sampler_free(s);
    CHECK(first == 0);
    CHECK(second == 1);
    CHECK(third == 0);
}

static void test_nan_logits_and_bad_params(void) {
    float logits[3] = {NAN, 1.0f, NAN};
    gen_sampler_params p = gen_sampler_defaults_greedy();
    gen_sampler *s = NULL;
    nc_error err;
    CHECK_OK(gen_sampler_new(3, &p, &s, &err), &err);
    int32_t g = gen_sampler_sample(s, logits);
    p.temperature = 0.8f;
    p.top_p = 0.5f;
    CHECK_OK(gen_sampler_reset(s, &p, &err), &err);
    int32_t t = gen_sampler_sample(s, logits);
    gen_sampler_free(s);
    CHECK(g == 1);
    CHECK(t == 1);
    gen_sampler_params bad = gen_sampler_defaults_greedy();
    bad.top_p = 1.5f;
    CHECK(gen_sampler_check_params(&bad, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "top_p"));
    bad = gen_sampler_defaults_greedy();
    bad.repeat_penalty = 0.0f;
    CHECK(gen_sampler_new(3, &bad, &s, &err) == NC_ERR_INVALID && s == NULL);
    bad = gen_sampler_defaults_greedy();
    bad.min_p = NAN;
    CHECK(gen_sampler_check_params(&bad, &err) == NC_ERR_INVALID);
}

/* top-k larger than the number of finite logits keeps just those. */
static void test_top_k_beyond_finite_logits(void) {
    float logits[10], probs[10];
    for (int i = 0; i < 10; i++)
        logits[i] = -INFINITY;
    logits[2] = 1.0f;
    logits[5] = 3.0f;
    logits[7] = 2.0f;
    gen_sampler_params p = gen_sampler_defaults_greedy();
    p.temperature = 2.0f;
    p.top_k = 5;
    gen_sampler *s = NULL;
    nc_error err;
    CHECK_OK(gen_sampler_new(10, &p, &s, &err), &err);
    gen_sampler_probs(s, logits, probs);
    gen_sampler_free(s);
    double z = exp(0.5) + exp(1.5) + exp(1.0);
    CHECK_NEAR(probs[2], exp(0.5) / z, 1e-6);
    CHECK_NEAR(probs[5], exp(1.5) / z, 1e-6);
    CHECK_NEAR(probs[7], exp(1.0) / z, 1e-6);
    CHECK(probs[0] == 0.0f && probs[9] == 0.0f);
}

/* A 151,936-token vocabulary with top-p alone exercises the heap path. */
static void test_large_vocab_top_p_without_top_k(void) {
    enum { V = 151936 };
    float *logits = malloc(V * sizeof *logits), *probs = malloc(V * sizeof *probs);
    CHECK(logits && probs);
    for (int i = 0; i < V; i++)
        logits[i] = -10.0f;
    logits[100] = 5.0f;
    logits[150000] = 4.0f;
    logits[7] = 3.0f;
    gen_sampler_params p = gen_sampler_defaults_greedy();
    p.temperature = 1.0f;
    p.top_p = 0.9f;
    gen_sampler *s = NULL;
    nc_error err;
    nc_status st = gen_sampler_new(V, &p, &s, &err);
    if (st == NC_OK) gen_sampler_probs(s, logits, probs);
    gen_sampler_free(s);
    /* masses: e^5, e^4, e^3 plus 151933 * e^-10; cumulative before token 7
     * is about 0.61 + 0.23 < 0.9, so exactly tokens 100, 150000, 7 remain */
    double e5 = exp(5.0), e4 = exp(4.0), e3 = exp(3.0);
    int n_nonzero = 0;
    for (int i = 0; i < V; i++)
        n_nonzero += probs[i] > 0.0f;
    double p100 = probs[100], p150k = probs[150000];
    free(logits);
    free(probs);
    CHECK(st == NC_OK);
    CHECK(n_nonzero == 3);
    CHECK_NEAR(p100, e5 / (e5 + e4 + e3), 1e-6);
    CHECK_NEAR(p150k, e4 / (e5 + e4 + e3), 1e-6);
}

int main(void) {
    RUN(test_sampler_distributions_match_numpy_and_hf_reference);
    RUN(test_sampling_frequencies_match_reference_distribution);
    RUN(test_same_seed_same_tokens_other_seed_differs);
    RUN(test_xoshiro_reference_vector);
    RUN(test_penalties_history_and_reset);
    RUN(test_nan_logits_and_bad_params);
    RUN(test_top_k_beyond_finite_logits);
    RUN(test_large_vocab_top_p_without_top_k);
    return nc_test_exit_code();
}
