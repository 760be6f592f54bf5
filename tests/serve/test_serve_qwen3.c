/* `nectar serve` on the real Qwen3 CPU engine, checked against Hugging Face
 * transformers' greedy outputs: the tiny random checkpoints
 * (tests/fixtures/qwen3/tiny_*, expected texts in tests/fixtures/gen/e2e
 * from tools/make_gen_fixtures.py) and the demo model (models/demo,
 * reference.json) when present. Raw-text completions, streamed and not,
 * eight at once; a two-turn chat with the template and thinking off; and
 * seeded sampling equal to `nectar run` with the same seed; and the mil
 * backend (an ANE bundle through the MIL interpreter). */
#include "../test.h"
#include "serve_client.h"

#define E2E "tests/fixtures/gen/e2e"

static char *read_text(const char *path) {
    return slurp(path, NULL);
}

static char *completion_body(const char *prompt, int max_tokens, int stream) {
    json_t *b = json_pack("{s:s,s:f,s:i,s:b}", "prompt", prompt, "temperature", 0.0, "max_tokens",
                          max_tokens, "stream", stream);
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return s;
}

/* Concatenated "text" of a completions SSE body; NULL when the framing is wrong. */
static char *sse_text(const char *body) {
    size_t cap = strlen(body) + 1, n = 0;
    char *out = calloc(1, cap);
    const char *p = body;
    int done = 0;
    while (out && *p) {
        const char *end = strstr(p, "\n\n");
        if (!end || strncmp(p, "data: ", 6) != 0 || done) {
            free(out);
            return NULL;
        }
        char *data = strndup(p + 6, (size_t)(end - p - 6));
        if (!strcmp(data, "[DONE]")) {
            done = 1;
        } else {
            json_t *j = parse_json(data);
            const char *t = jstr(j, "choices.0.text");
            if (t && n + strlen(t) < cap) {
                memcpy(out + n, t, strlen(t) + 1);
                n += strlen(t);
            }
            json_decref(j);
        }
        free(data);
        p = end + 2;
    }
    if (out && !done) {
        free(out);
        return NULL;
    }
    return out;
}

/* One completion (streamed or not) must give exactly `want`. */
static int completion_matches(const srv *s, const char *prompt, int max_tokens, const char *want,
                              int stream, char *why, size_t cap) {
    char *body = completion_body(prompt, max_tokens, stream);
    reply r = http(s, "POST", "/v1/completions", body, NULL);
    free(body);
    char *got = NULL;
    if (r.status == 200) {
        if (stream) {
            got = sse_text(r.body);
        } else {
            json_t *j = parse_json(r.body);
            const char *t = jstr(j, "choices.0.text");
            got = t ? strdup(t) : NULL;
            json_decref(j);
        }
    }
    int ok = got && !strcmp(got, want);
    if (!ok)
        snprintf(why, cap, "prompt '%s' (%s): HTTP %d, got '%s', want '%s'", prompt,
                 stream ? "stream" : "json", r.status, got ? got : r.body, want);
    free(got);
    reply_free(&r);
    return ok;
}

static int start_on(srv *s, const char *model, const char *parallel) {
    const char *args[] = {"-m", model, "--parallel", parallel, "--ctx", "256", "-t", "1", NULL};
    return srv_start(s, args);
}

static void test_tiny_completions_match_hf_greedy(void) {
    srv s;
    CHECKF(start_on(&s, "tests/fixtures/qwen3/tiny_gqa2", "2") == 0, "server did not start");
    char why[1024] = "";
    int ok = 1;
    for (int k = 0; ok && k < 2; k++) {
        char path[256];
        snprintf(path, sizeof path, E2E "/run_tiny_gqa2_%d.prompt", k);
        char *prompt = read_text(path);
        snprintf(path, sizeof path, E2E "/run_tiny_gqa2_%d.expected", k);
        char *want = read_text(path);
        if (prompt && want)
            ok = completion_matches(&s, prompt, 24, want, 0, why, sizeof why) &&
                 completion_matches(&s, prompt, 24, want, 1, why, sizeof why);
        free(prompt);
        free(want);
    }
    int rc = srv_stop(&s);
    CHECKF(ok, "%s", why);
    CHECKF(rc == 0, "server exit status %d (see %s)", rc, s.log_path);
}

/* Reads run_<model>_<k>.prompt/.expected for k < n (missing ones stay NULL). */
static void read_run_fixtures(const char *model, int n, char **prompts, char **wants) {
    for (int k = 0; k < n; k++) {
        char path[256];
        snprintf(path, sizeof path, E2E "/run_%s_%d.prompt", model, k);
        prompts[k] = read_text(path);
        snprintf(path, sizeof path, E2E "/run_%s_%d.expected", model, k);
        wants[k] = read_text(path);
    }
}

/* n_streams greedy streams at once, stream i on prompt i % n_prompts;
 * returns how many gave exactly the expected text (first miss in why). */
static int concurrent_streams_matching(const srv *s, char **prompts, char **wants, int n_prompts,
                                       int n_streams, char *why, size_t cap) {
    FILE *p[16] = {0};
    char tags[16][16];
    for (int i = 0; i < n_streams && i < 16; i++) {
        snprintf(tags[i], sizeof tags[i], "q%d", i);
        char *body = completion_body(prompts[i % n_prompts] ? prompts[i % n_prompts] : "x", 24, 1);
        char cmd[2048];
        curl_cmd(cmd, sizeof cmd, s, "POST", "/v1/completions", body, strlen(body), NULL, tags[i]);
        free(body);
        p[i] = popen(cmd, "r");
    }
    int n_ok = 0;
    for (int i = 0; i < n_streams && i < 16; i++) {
        reply r = {0};
        if (p[i]) collect(&r, p[i], tags[i]);
        char *got = r.status == 200 ? sse_text(r.body) : NULL;
        const char *want = wants[i % n_prompts];
        if (got && want && !strcmp(got, want))
            n_ok++;
        else if (!why[0])
            snprintf(why, cap, "stream %d: HTTP %d got '%s' want '%s'", i, r.status,
                     got ? got : "(bad framing)", want ? want : "?");
        free(got);
        reply_free(&r);
    }
    return n_ok;
}

/* Eight streams at once over four slots, three different prompts: every
 * one equals HF's single-sequence greedy output. */
static void test_tiny_eight_concurrent_streams_match_hf(void) {
    srv s;
    CHECKF(start_on(&s, "tests/fixtures/qwen3/tiny_gqa4_tied", "4") == 0, "server did not start");
    char *prompts[3], *wants[3], why[1024] = "";
    read_run_fixtures("tiny_gqa4_tied", 3, prompts, wants);
    int n_ok = concurrent_streams_matching(&s, prompts, wants, 3, 8, why, sizeof why);
    for (int k = 0; k < 3; k++) {
        free(prompts[k]);
        free(wants[k]);
    }
    int rc = srv_stop(&s);
    CHECKF(n_ok == 8, "%d of 8 correct; %s", n_ok, why);
    CHECKF(rc == 0, "server exit status %d (see %s)", rc, s.log_path);
}

/* Two chat turns (thinking off), the second with the first in its history;
 * replies equal HF's greedy replies on apply_chat_template. The second
 * request reuses the slot's cached prompt prefix. */
static void test_tiny_chat_two_turns_match_hf(void) {
    char *in = read_text(E2E "/chat_tiny_gqa2.in"),
         *exp = read_text(E2E "/chat_tiny_gqa2.expected");
    CHECKF(in && exp, "chat fixtures missing");
    char *q2 = strchr(in, '\n'), *a2 = strchr(exp, '\n');
    CHECK(q2 && a2);
    *q2++ = '\0';
    *a2++ = '\0';
    char *end = strchr(q2, '\n');
    if (end) *end = '\0';
    end = strchr(a2, '\n');
    if (end) *end = '\0';
    srv s;
    int started = start_on(&s, "tests/fixtures/qwen3/tiny_gqa2", "1") == 0;
    char why[1024] = "";
    int ok = started;
    long long cached = -1;
    json_t *msgs = json_pack("[{s:s,s:s}]", "role", "user", "content", in);
    for (int turn = 0; ok && turn < 2; turn++) {
        json_t *b = json_pack("{s:O,s:f,s:i,s:{s:b}}", "messages", msgs, "temperature", 0.0,
                              "max_tokens", 16, "chat_template_kwargs", "enable_thinking", 0);
        char *body = json_dumps(b, JSON_COMPACT);
        json_decref(b);
        reply r = http(&s, "POST", "/v1/chat/completions", body, NULL);
        free(body);
        json_t *j = parse_json(r.body);
        const char *got = jstr(j, "choices.0.message.content");
        const char *want = turn == 0 ? exp : a2;
        ok = r.status == 200 && got && !strcmp(got, want);
        if (!ok)
            snprintf(why, sizeof why, "turn %d: HTTP %d got '%s' want '%s'", turn + 1, r.status,
                     got ? got : r.body, want);
        if (turn == 1) cached = jint(j, "usage.prompt_tokens_details.cached_tokens");
        json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "assistant", "content", want));
        json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content", q2));
        json_decref(j);
        reply_free(&r);
    }
    json_decref(msgs);
    int rc = started ? srv_stop(&s) : -1;
    free(in);
    free(exp);
    CHECKF(started, "server did not start");
    CHECKF(ok, "%s", why);
    CHECKF(cached > 0, "second turn reused no cached prompt tokens (%lld)", cached);
    CHECKF(rc == 0, "server exit status %d (see %s)", rc, s.log_path);
}

/* Sampling with a seed: the server's completion equals `nectar run` with
 * the same seed and settings (the CPU engine's own generation loop), both
 * alone and while other requests share the step. */
static void test_seeded_sampling_matches_nectar_run(void) {
    const char *model = "tests/fixtures/qwen3/tiny_gqa2", *prompt = "And God said";
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "'%s' run -m %s -t 1 -p '%s' -n 20 --temp 0.9 --top-k 40 --top-p 0.95 --min-p 0.02 "
             "--presence-penalty 0.5 --seed 1234 2>/dev/null",
             nectar_bin(), model, prompt);
    FILE *p = popen(cmd, "r");
    CHECK(p);
    char want[4096];
    size_t n = fread(want, 1, sizeof want - 1, p);
    want[n] = '\0';
    int rc_run = pclose(p);
    CHECKF(rc_run == 0 && n > 0, "nectar run failed (%d)", rc_run);
    srv s;
    CHECKF(start_on(&s, model, "3") == 0, "server did not start");
    const char *body = "{\"prompt\":\"And God said\",\"max_tokens\":20,\"temperature\":0.9,"
                       "\"top_k\":40,\"top_p\":0.95,\"min_p\":0.02,\"presence_penalty\":0.5,"
                       "\"seed\":1234}";
    const char *other = "{\"prompt\":\"In the beginning\",\"max_tokens\":20,\"temperature\":1.0,"
                        "\"seed\":99,\"stream\":true}";
    char c1[2048], c2[2048];
    curl_cmd(c1, sizeof c1, &s, "POST", "/v1/completions", other, strlen(other), NULL, "oth1");
    curl_cmd(c2, sizeof c2, &s, "POST", "/v1/completions", other, strlen(other), NULL, "oth2");
    FILE *o1 = popen(c1, "r"), *o2 = popen(c2, "r");
    char got[2][4096] = {"", ""};
    for (int k = 0; k < 2; k++) {
        reply r = http(&s, "POST", "/v1/completions", body, NULL);
        json_t *j = parse_json(r.body);
        const char *t = jstr(j, "choices.0.text");
        snprintf(got[k], sizeof got[k], "%s", t ? t : r.body);
        json_decref(j);
        reply_free(&r);
    }
    reply r1 = {0}, r2 = {0};
    if (o1) collect(&r1, o1, "oth1");
    if (o2) collect(&r2, o2, "oth2");
    reply_free(&r1);
    reply_free(&r2);
    int rc = srv_stop(&s);
    CHECKF(!strcmp(got[0], want) && !strcmp(got[1], want), "server '%s' / '%s', nectar run '%s'",
           got[0], got[1], want);
    CHECKF(rc == 0, "server exit status %d (see %s)", rc, s.log_path);
}

/* --backend mil: the tiny checkpoint compiled to an ANE bundle and run by
 * the MIL interpreter (fp16), one instance per slot; two streams at once
 * and one JSON request, each equal to HF's greedy output. */
static void test_mil_backend_matches_hf_greedy(void) {
    make_tmp_dir();
    char bundle[512], cmd[1024];
    snprintf(bundle, sizeof bundle, "%s/bundle", tmp_dir);
    snprintf(
        cmd, sizeof cmd,
        "'%s' compile -m tests/fixtures/qwen3/tiny_gqa2 -o '%s' --ctx 128 --buckets 32,64 -t 1 "
        ">/dev/null 2>&1",
        nectar_bin(), bundle);
    CHECKF(system(cmd) == 0, "nectar compile failed: %s", cmd);
    srv s;
    const char *args[] = {"--backend", "mil", "-m", bundle, "--parallel", "2", "-t", "1", NULL};
    CHECKF(srv_start(&s, args) == 0, "server did not start on the bundle");
    char *prompts[2], *wants[2], why[1024] = "";
    read_run_fixtures("tiny_gqa2", 2, prompts, wants);
    int n_ok = concurrent_streams_matching(&s, prompts, wants, 2, 2, why, sizeof why);
    int json_ok = prompts[0] && wants[0] &&
                  completion_matches(&s, prompts[0], 24, wants[0], 0, why, sizeof why);
    for (int k = 0; k < 2; k++) {
        free(prompts[k]);
        free(wants[k]);
    }
    int rc = srv_stop(&s);
    CHECKF(n_ok == 2, "%d of 2 streams correct; %s", n_ok, why);
    CHECKF(json_ok, "%s", why);
    CHECKF(rc == 0, "server exit status %d (see %s)", rc, s.log_path);
}

static void test_demo_model_matches_hf_greedy(void) {
    json_error_t je;
    json_t *ref = json_load_file("models/demo/reference.json", 0, &je);
    if (!ref) SKIP("models/demo/reference.json not present");
    srv s;
    /* Two engine threads: the served path with the thread pool at work. */
    const char *args[] = {"-m", "models/demo", "--parallel", "3", "--ctx", "256", "-t", "2", NULL};
    int started = srv_start(&s, args) == 0;
    char why[2048] = "";
    int ok = started;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(ref, "prompts"), i, p) {
        if (!ok) break;
        int n = (int)json_array_size(json_object_get(p, "greedy_ids"));
        ok = completion_matches(&s, json_string_value(json_object_get(p, "text")), n,
                                json_string_value(json_object_get(p, "greedy_text")), i % 2, why,
                                sizeof why);
    }
    json_decref(ref);
    int rc = started ? srv_stop(&s) : -1;
    CHECKF(started, "server did not start on models/demo");
    CHECKF(ok, "%s", why);
    CHECKF(rc == 0, "server exit status %d (see %s)", rc, s.log_path);
}

int main(void) {
    if (!have_curl()) {
        printf("SKIP serve_qwen3_tests: curl is not installed\n");
        return 0;
    }
    RUN(test_tiny_completions_match_hf_greedy);
    RUN(test_tiny_eight_concurrent_streams_match_hf);
    RUN(test_tiny_chat_two_turns_match_hf);
    RUN(test_seeded_sampling_matches_nectar_run);
    RUN(test_mil_backend_matches_hf_greedy);
    RUN(test_demo_model_matches_hf_greedy);
    rm_tmp_dir();
    return nc_test_exit_code();
}
