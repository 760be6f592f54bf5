/* One sampling parameter table (src/gen/sampling_params.c) behind every
 * surface: nc_sampling_set, generation_config.json and the server's request
 * parser each refuse an out-of-range value naming the parameter and the
 * range, the same range for the API and the folder and the server's
 * OpenAI one for requests (the command line's --temp is checked by
 * tests/cli/test_sampling_cli.sh), and every key of HF's
 * GenerationConfig that nectar reads lands in its parameter. The expected
 * names and ranges are written out here from the spec (HF's
 * GenerationConfig keys, OpenAI's chat API ranges), not read from the
 * table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "gen/model.h"
#include "nectar.h"
#include "serve/serve_request.h"

/* name, a value just out of the library's range, that range as messages
 * print it, a value out of the server's range, the server's range */
static const struct {
    const char *name;
    double bad;
    const char *range;
    double serve_bad;
    const char *serve_range;
} cases[] = {
    {"temperature", 100.5, "[0, 100]", 2.5, "between 0 and 2"},
    {"top_k", -1, "[0, 2147483647]", -1, "between 0 and 1000000000"},
    {"top_p", 1.5, "[0, 1]", 1.5, "between 0 and 1"},
    {"min_p", -0.5, "[0, 1]", 1.5, "between 0 and 1"},
    {"repeat_penalty", 0, "(0, 100]", 20, "between 0.01 and 10"},
    {"presence_penalty", 101, "[-100, 100]", 3, "between -2 and 2"},
    {"frequency_penalty", -101, "[-100, 100]", -3, "between -2 and 2"},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

static void test_api_refuses_naming_parameter_and_range(void) {
    nc_sampling *s = nc_sampling_new();
    CHECK(s);
    for (int i = 0; i < N_CASES; i++) {
        nc_error err = {0};
        nc_status st = nc_sampling_set(s, cases[i].name, cases[i].bad, &err);
        char want[128];
        snprintf(want, sizeof want, "nc_sampling_set: %s: ", cases[i].name);
        CHECKF(st == NC_ERR_INVALID && strstr(err.msg, want) && strstr(err.msg, cases[i].range),
               "%s = %g: '%s'", cases[i].name, cases[i].bad, err.msg);
    }
    nc_sampling_free(s);
}

/* A folder holding only generation_config.json with `body`. */
static void write_gen_config(const char *dir, const char *body) {
    char path[512];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(body, f);
        fclose(f);
    }
}

static void test_generation_config_maps_hf_keys_through_the_table(void) {
    char dir[] = "/tmp/nc_sampling_XXXXXX";
    CHECK(mkdtemp(dir));
    /* HF GenerationConfig's names; repetition_penalty is our repeat_penalty */
    write_gen_config(dir, "{\"do_sample\": true, \"temperature\": 0.25, \"top_k\": 7, "
                          "\"top_p\": 0.5, \"min_p\": 0.125, \"repetition_penalty\": 1.5}");
    gen_sampler_params p = gen_sampler_defaults_greedy();
    nc_error err = {0};
    nc_status st = gen_sampling_from_folder(dir, 0, &p, &err);
    int ok = st == NC_OK && p.temperature == 0.25f && p.top_k == 7 && p.top_p == 0.5f &&
             p.min_p == 0.125f && p.repeat_penalty == 1.5f;
    /* what the caller set stays */
    gen_sampler_params q = gen_sampler_defaults_greedy();
    q.top_p = 0.75f;
    st = gen_sampling_from_folder(dir, GEN_SET_TOP_P, &q, &err);
    ok = ok && st == NC_OK && q.top_p == 0.75f && q.temperature == 0.25f;
    /* do_sample false: greedy whatever the temperature says */
    write_gen_config(dir, "{\"do_sample\": false, \"temperature\": 0.25}");
    gen_sampler_params g = gen_sampler_defaults_greedy();
    st = gen_sampling_from_folder(dir, 0, &g, &err);
    ok = ok && st == NC_OK && g.temperature == 0.0f;
    /* out of range: the file, the key and the library's range */
    write_gen_config(dir, "{\"temperature\": 100.5}");
    st = gen_sampling_from_folder(dir, 0, &g, &err);
    int refused = st == NC_ERR_INVALID &&
                  strstr(err.msg, "generation_config.json: field "
                                  "'temperature': 100.5") &&
                  strstr(err.msg, "[0, 100]");
    char path[512];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    unlink(path);
    rmdir(dir);
    CHECKF(ok, "a key did not land in its parameter: %s", err.msg);
    CHECKF(refused, "'%s'", err.msg);
}

static void test_server_refuses_with_openai_ranges(void) {
    for (int i = 0; i < N_CASES; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"prompt\": \"x\", \"%s\": %g}", cases[i].name,
                 cases[i].serve_bad);
        serve_request r;
        serve_parse_error pe;
        nc_error err = {0};
        nc_status st = serve_request_parse(body, strlen(body), SERVE_EP_COMPLETIONS, &r, &pe, &err);
        char want[128];
        snprintf(want, sizeof want, "'%s' must be %s", cases[i].name, cases[i].serve_range);
        int ok = st == NC_ERR_INVALID && strstr(err.msg, want) && !strcmp(pe.param, cases[i].name);
        serve_request_free(&r);
        CHECKF(ok, "%s: '%s'", body, err.msg);
    }
    /* in range: read into the parameter */
    const char *body = "{\"prompt\": \"x\", \"repeat_penalty\": 1.25}";
    serve_request r;
    serve_parse_error pe;
    nc_error err = {0};
    CHECK_OK(serve_request_parse(body, strlen(body), SERVE_EP_COMPLETIONS, &r, &pe, &err), &err);
    int ok = serve_request_param(&r, "repeat_penalty") == 1.25 &&
             r.sampling_set == GEN_SET_REPEAT_PENALTY;
    serve_request_free(&r);
    CHECK(ok);
}

int main(void) {
    RUN(test_api_refuses_naming_parameter_and_range);
    RUN(test_generation_config_maps_hf_keys_through_the_table);
    RUN(test_server_refuses_with_openai_ranges);
    return nc_test_exit_code();
}
