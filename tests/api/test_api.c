/* The public API (include/nectar.h) against independent references, using
 * nothing but <nectar.h> (and jansson to read the fixtures): Qwen3 ids of a
 * file equal HF tokenizers' and decode back to its bytes; the chat template
 * equals transformers' apply_chat_template; encoder embeddings, fill-mask
 * and classification equal HF's numbers (tools/make_modernbert_fixtures.py);
 * a compiled bundle opens on the mil backend and its embeddings stay within
 * the parity rule of HF's; greedy generation streams HF's text
 * (tools/make_gen_fixtures.py) and ids (tools/make_qwen3_fixtures.py) on
 * the cpu, mil and fake-ANE backends; cancellation, stop strings, the
 * reasoning split (against HF's text and ids); and the
 * errors a caller can make. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "nectar.h"

#define MB "tests/fixtures/modernbert/"

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    if (len) *len = (size_t)n;
    return buf;
}

static void test_version_macros_match_the_library(void) {
    CHECK(!strcmp(nc_version(), NECTAR_VERSION));
    CHECK(nc_version_number() == NECTAR_VERSION_NUMBER);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", NECTAR_VERSION_MAJOR, NECTAR_VERSION_MINOR,
             NECTAR_VERSION_PATCH);
    CHECK(!strcmp(want, NECTAR_VERSION));
    CHECK(!strcmp(nc_status_name(NC_ERR_IO), "io"));
}

/* tests/fixtures/tokenizer/cli: a file with CRLF, tabs, emoji and special
 * tokens, and HF's ids of it under the real Qwen3 tokenizer. */
static void test_tokenize_equals_hf_and_decodes_back(void) {
    nc_error err;
    nc_tokenizer *t;
    CHECK_OK(nc_tokenizer_open("tests/fixtures/qwen3-tokenizer", &t, &err), &err);
    CHECK(nc_tokenizer_vocab_size(t) == 151669);
    CHECK(nc_token_id(t, "<|im_end|>") == 151645);
    size_t len, n;
    char *text = read_text("tests/fixtures/tokenizer/cli/input.txt", &len);
    char *want = read_text("tests/fixtures/tokenizer/cli/ids_qwen3.txt", NULL);
    CHECK(text && want);
    int32_t *ids;
    CHECK_OK(nc_tokenize(t, text, len, 0, &ids, &n, &err), &err);
    char *p = want;
    size_t i = 0;
    for (; i < n; i++) {
        char *end;
        long v = strtol(p, &end, 10);
        CHECKF(end != p && v == ids[i], "id %zu: %d, HF %ld", i, (int)ids[i], v);
        p = end;
    }
    CHECK(strtol(p, &p, 10) == 0 && *p == '\n');
    char *back;
    size_t back_len;
    CHECK_OK(nc_detokenize(t, ids, n, 0, &back, &back_len, &err), &err);
    CHECK(back_len == len && !memcmp(back, text, len));
    nc_free(back);
    nc_free(ids);
    free(text);
    free(want);
    nc_tokenizer_free(t);
}

/* The rows of a cases file (transformers' renderings; rows where the
 * template raises are skipped) rendered with model's template: how many
 * there are when every one equals its rendering, else 0. */
static int check_template_cases(const nc_model *model, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[65536];
    int n_cases = 0;
    while (fgets(line, sizeof line, f)) {
        json_error_t je;
        json_t *c = json_loads(line, 0, &je);
        json_t *msgs = json_object_get(c, "messages");
        size_t n = json_array_size(msgs);
        nc_chat_message m[16];
        if (!c || n > 16) {
            printf("  %s: a row that is not a case of up to 16 messages\n", path);
            json_decref(c);
            fclose(f);
            return 0;
        }
        for (size_t i = 0; i < n; i++) {
            json_t *o = json_array_get(msgs, i);
            m[i].role = json_string_value(json_object_get(o, "role"));
            m[i].content = json_string_value(json_object_get(o, "content"));
            m[i].reasoning_content = json_string_value(json_object_get(o, "reasoning_content"));
        }
        unsigned flags =
            (json_is_true(json_object_get(c, "add_generation_prompt"))
                 ? NC_CHAT_ADD_GENERATION_PROMPT
                 : 0) |
            (json_is_false(json_object_get(c, "enable_thinking")) ? NC_CHAT_NO_THINKING : 0);
        const char *want = json_string_value(json_object_get(c, "expected"));
        if (!want) { /* the template raises here */
            json_decref(c);
            continue;
        }
        char *out;
        nc_error err;
        nc_status st = nc_chat_apply_template(model, m, n, flags, &out, &err);
        int same = st == NC_OK && !strcmp(out, want);
        if (!same)
            printf("  %s case %s: %s\n", path, json_string_value(json_object_get(c, "name")),
                   st ? err.msg : out);
        if (st == NC_OK) nc_free(out);
        json_decref(c);
        if (!same) {
            fclose(f);
            return 0;
        }
        n_cases++;
    }
    fclose(f);
    return n_cases;
}

/* Each family's template, from the model (NULL: Qwen3's): the Qwen3 cases
 * (tests/fixtures/chat/cases.jsonl, the real Qwen3 template), Qwen3.5's on
 * a Qwen3.5 model, Llama 3's on a Llama one and Gemma 3's on a Gemma one; an
 * encoder has none. */
static void test_chat_template_equals_transformers(void) {
    nc_error err;
    nc_model *q35 = NULL, *llama = NULL, *enc = NULL;
    CHECK(check_template_cases(NULL, "tests/fixtures/chat/cases.jsonl") >= 10);
    CHECK_OK(nc_model_open("tests/fixtures/qwen35/tiny_text_untied", "cpu", NULL, &q35, &err),
             &err);
    CHECK(check_template_cases(q35, "tests/fixtures/chat/qwen35_cases.jsonl") >= 10);
    CHECK_OK(nc_model_open("tests/fixtures/llama/tiny_llama3", "cpu", NULL, &llama, &err), &err);
    CHECK(check_template_cases(llama, "tests/fixtures/chat/llama3_cases.jsonl") >= 10);
    nc_model *gemma = NULL;
    CHECK_OK(nc_model_open("tests/fixtures/gemma3/tiny_gemma3_text", "cpu", NULL, &gemma, &err),
             &err);
    CHECK(check_template_cases(gemma, "tests/fixtures/chat/gemma3_cases.jsonl") >= 10);
    nc_model_free(gemma);
    CHECK_OK(nc_model_open(MB "mb_base", "cpu", NULL, &enc, &err), &err);
    nc_chat_message hi = {"user", "Hi", NULL};
    char *out = NULL;
    CHECK(nc_chat_apply_template(enc, &hi, 1, 0, &out, &err) == NC_ERR_UNSUPPORTED && !out);
    nc_model_free(q35);
    nc_model_free(llama);
    nc_model_free(enc);
}

/* The third text of mb_base/ref ("Hello"): CLS pooling (the model's), then
 * normalised, against HF's rows 129..192 of embed_cls_norm.txt. */
static double cosine_to_hf_hello(nc_model *m) {
    float v[64];
    nc_error err;
    if (nc_embed(m, "Hello", v, 64, &err) != NC_OK) {
        printf("  nc_embed: %s\n", err.msg);
        return -2;
    }
    FILE *f = fopen(MB "mb_base/ref/embed_cls_norm.txt", "r");
    double want[192], dot = 0, nv = 0, nw = 0;
    for (int i = 0; f && i < 192; i++)
        if (fscanf(f, "%lf", &want[i]) != 1) return -3;
    if (f) fclose(f);
    for (int i = 0; i < 64; i++) {
        dot += v[i] * want[128 + i];
        nv += (double)v[i] * v[i];
        nw += want[128 + i] * want[128 + i];
    }
    return dot / sqrt(nv * nw);
}

static void test_embed_equals_hf(void) {
    nc_error err;
    nc_model *m;
    CHECK_OK(nc_model_open(MB "mb_base", "cpu", NULL, &m, &err), &err);
    CHECK(nc_model_get_kind(m) == NC_MODEL_ENCODER);
    CHECK(nc_model_embedding_size(m) == 64);
    float v[64];
    CHECK_OK(nc_embed(m, "Hello", v, 64, &err), &err);
    double norm = 0;
    for (int i = 0; i < 64; i++)
        norm += (double)v[i] * v[i];
    FILE *f = fopen(MB "mb_base/ref/embed_cls_norm.txt", "r");
    CHECK(f);
    double want[192];
    for (int i = 0; i < 192; i++)
        CHECK(fscanf(f, "%lf", &want[i]) == 1);
    fclose(f);
    for (int i = 0; i < 64; i++)
        CHECK_NEAR(v[i] / sqrt(norm), want[128 + i], 1e-4);
    /* a wrong output size is an error naming both sizes */
    CHECK(nc_embed(m, "Hello", v, 63, &err) == NC_ERR_INVALID && strstr(err.msg, "63"));
    nc_model_free(m);
}

static double cosine(const float *a, const float *b, int n) {
    double dot = 0, na = 0, nb = 0;
    for (int i = 0; i < n; i++) {
        dot += (double)a[i] * b[i];
        na += (double)a[i] * a[i];
        nb += (double)b[i] * b[i];
    }
    return dot / sqrt(na * nb);
}

/* Whether the kernel's /proc/cpuinfo lists this CPU flag (0 where there
 * is no such file). */
static int cpu_lists_flag(const char *flag) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    int found = 0;
    size_t n = strlen(flag);
    while (f && !found && fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5))
            for (const char *p = strstr(line, flag); p && !found; p = strstr(p + 1, flag))
                found = p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n');
    if (f) fclose(f);
    return found;
}

/* mb_bf16 (bf16 weights) with mb_base's tokenizer (the same vocabulary),
 * as a folder in dir: its embedding of "Hello" into v[64] under the bf16
 * contract now in force. */
static nc_status embed_bf16_hello(const char *dir, float *v, nc_error *err) {
    static const char *const links[][2] = {{MB "mb_bf16/config.json", "config.json"},
                                           {MB "mb_bf16/model.safetensors", "model.safetensors"},
                                           {MB "mb_base/tokenizer.json", "tokenizer.json"}};
    char to[512], at[1024];
    for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
        snprintf(at, sizeof at, "%s/%s", dir, links[i][1]);
        if (access(at, F_OK) != 0 &&
            (!realpath(links[i][0], to) || symlink(to, at) != 0))
            return NC_ERR_IO;
    }
    nc_model *m;
    nc_status st = nc_model_open(dir, "cpu", NULL, &m, err);
    if (st != NC_OK) return st;
    st = nc_embed(m, "Hello", v, 64, err);
    nc_model_free(m);
    return st;
}

/* The bf16 contract is the process's: under "fast" the bf16 model's
 * embedding stays within cosine 0.999 of the exact one (the tiny fixture's
 * rows are 1.5-2.1% off HF per layer where the CPU has bf16 dot products,
 * and differ from the exact vector there; elsewhere both are the same),
 * "accurate" gives the exact vector back (to fp32 accuracy), and a contract that is none, or a kernel that is
 * none, is refused naming it and leaves the contract as it was. */
static void test_bf16_contract_is_set_for_the_process(void) {
    char dir[] = "/tmp/nc_api_bf16_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    nc_error err;
    float exact[64], fast[64], again[64], after_bad[64];
    CHECK_OK(embed_bf16_hello(dir, exact, &err), &err);
    CHECK_OK(nc_set_bf16_contract("fast", &err), &err);
    CHECK_OK(embed_bf16_hello(dir, fast, &err), &err);
    CHECK(nc_set_bf16_contract("half", &err) == NC_ERR_INVALID && strstr(err.msg, "'half'"));
    CHECK(nc_set_bf16_contract("fast,prompt=nonsense", &err) == NC_ERR_INVALID &&
          strstr(err.msg, "nonsense"));
    CHECK_OK(nc_set_bf16_contract("accurate", &err), &err);
    CHECK_OK(embed_bf16_hello(dir, again, &err), &err);
    CHECK(nc_set_bf16_contract("off,decode=nonsense", &err) == NC_ERR_INVALID);
    CHECK_OK(embed_bf16_hello(dir, after_bad, &err), &err);
    double c = cosine(exact, fast, 64);
    printf("  fast against accurate: cosine %.7f\n", c);
    CHECK(c > 0.999);
    /* where the CPU has bf16 dot products (the kernel's own flag list says
     * so), "fast" must have changed the products */
    if (cpu_lists_flag("avx512_bf16")) CHECK(memcmp(exact, fast, sizeof exact) != 0);
    /* within the accurate contract: the kernels that serve it may differ
     * (the first decoder opened measured them; switching resets them) */
    CHECK(cosine(exact, again, 64) > 1 - 1e-9 && cosine(exact, after_bad, 64) > 1 - 1e-9);
    CHECK_OK(nc_set_bf16_contract(NULL, &err), &err);
    char path[1100];
    static const char *const names[] = {"config.json", "model.safetensors", "tokenizer.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void test_fill_mask_equals_hf(void) {
    nc_error err;
    nc_model *m;
    CHECK_OK(nc_model_open(MB "mb_mlm", NULL, NULL, &m, &err), &err);
    json_error_t je;
    json_t *ref = json_load_file(MB "mb_mlm/ref/fill_mask.json", 0, &je);
    CHECK(ref);
    int32_t ids[5];
    float probs[5];
    int n_masks = 0;
    CHECK_OK(nc_fill_mask(m, json_string_value(json_object_get(ref, "text")), 5, ids, probs, 1,
                          &n_masks, &err),
             &err);
    CHECK(n_masks == 1);
    for (int j = 0; j < 5; j++) {
        CHECK(ids[j] == json_integer_value(json_array_get(json_object_get(ref, "ids"), j)));
        CHECK_NEAR(probs[j], json_real_value(json_array_get(json_object_get(ref, "probs"), j)),
                   1e-4);
    }
    json_decref(ref);
    CHECK(nc_fill_mask(m, "no mask here", 5, ids, probs, 1, &n_masks, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "no mask token"));
    nc_model_free(m);
}

static void test_classify_equals_hf(void) {
    nc_error err;
    nc_model *m;
    const char *opts[] = {"threads=1", NULL};
    CHECK_OK(nc_model_open(MB "mm_cls", "cpu", opts, &m, &err), &err);
    CHECK(nc_model_num_labels(m) == 3 && nc_model_label(m, 2) && !nc_model_label(m, 3));
    json_error_t je;
    json_t *ref = json_load_file(MB "mm_cls/ref/classify.json", 0, &je);
    CHECK(ref);
    for (size_t i = 0; i < 3; i++) {
        float p[3];
        const char *text = json_string_value(json_array_get(json_object_get(ref, "texts"), i));
        CHECK_OK(nc_classify(m, text, p, 3, &err), &err);
        json_t *want = json_array_get(json_object_get(ref, "probs"), i);
        for (size_t j = 0; j < 3; j++)
            CHECK_NEAR(p[j], json_real_value(json_array_get(want, j)), 1e-4);
    }
    json_decref(ref);
    nc_model_free(m);
}

static void test_open_errors_name_the_fault(void) {
    nc_error err;
    nc_model *m = (nc_model *)&err;
    CHECK(nc_model_open(MB "mb_base", "gpu", NULL, &m, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "'gpu'") && m == NULL);
    const char *bad_key[] = {"threads=1", "thread=2", NULL};
    CHECK(nc_model_open(MB "mb_base", NULL, bad_key, &m, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "unknown option 'thread'"));
    const char *bad_val[] = {"threads=two", NULL};
    CHECK(nc_model_open(MB "mb_base", NULL, bad_val, &m, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "option threads: 'two'"));
    CHECK(nc_model_open("tests/fixtures/no-such-model", NULL, NULL, &m, &err) == NC_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "no-such-model"));
    /* the ane backend wants a bundle: an HF folder is refused naming the
     * folder and what to run */
    const char *fake[] = {"ane_device=fake", NULL};
    CHECK(nc_model_open(MB "mb_base", "ane", fake, &m, &err) != NC_OK &&
          strstr(err.msg, "mb_base: not a bundle") && strstr(err.msg, "nectar compile"));
    /* a NULL error record is allowed */
    CHECK(nc_model_open(MB "mb_base", "gpu", NULL, &m, NULL) == NC_ERR_INVALID);
    nc_tokenizer *t;
    CHECK(nc_tokenizer_open("tests/fixtures/no-such-tokenizer", &t, &err) != NC_OK);
    nc_sampling *s = nc_sampling_new();
    CHECK(s);
    CHECK(nc_sampling_set(s, "temperature", -1, &err) == NC_ERR_INVALID);
    CHECK(nc_sampling_set(s, "temprature", 1, &err) == NC_ERR_INVALID &&
          strstr(err.msg, "temprature"));
    CHECK(nc_sampling_add_stop(s, "", &err) == NC_ERR_INVALID);
    nc_sampling_free(s);
    nc_model_free(NULL);
    nc_tokenizer_free(NULL);
    nc_sampling_free(NULL);
}

/* nc_compile model into a bundle in a new temporary folder (*dir, to be
 * removed with remove_dir); bundle receives its path. */
static nc_status compile_tmp(const char *model, const char *const *opts, char dir[32],
                             char bundle[64], nc_error *err) {
    strcpy(dir, "/tmp/nc_api_XXXXXX");
    if (!mkdtemp(dir)) return NC_ERR_IO;
    snprintf(bundle, 64, "%s/b", dir);
    return nc_compile(model, bundle, opts, err);
}

static int remove_dir(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

/* nc_compile an encoder, then run the bundle through the fp16 interpreter:
 * the embedding stays within nectar's parity rule (cosine >= 0.999) of HF's. */
static void test_compiled_encoder_bundle_runs_on_mil(void) {
    char dir[32], bundle[64];
    nc_error err;
    const char *opts[] = {"seqs=32", "batches=1", NULL};
    nc_status st = compile_tmp(MB "mb_base", opts, dir, bundle, &err);
    nc_model *m = NULL;
    if (st == NC_OK) st = nc_model_open(bundle, "mil", NULL, &m, &err);
    double cos = st == NC_OK ? cosine_to_hf_hello(m) : -1;
    nc_model_free(m);
    CHECK(remove_dir(dir) == 0);
    CHECK_OK(st, &err);
    CHECKF(cos >= 0.999, "cosine %.6f", cos);
    const char *bad[] = {"seqs=31", NULL};
    CHECK(nc_compile(MB "mb_base", "/tmp/nc_api_never", bad, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "seqs=31") && access("/tmp/nc_api_never", F_OK) != 0);
}

/* nc_compile of a decision folder (encoder + decision.json) writes the
 * partitioned bundle: partition.json beside the encoder program. */
static void test_compiled_decision_bundle_names_its_partition(void) {
    char dir[32], bundle[64], part[96];
    nc_error err;
    const char *opts[] = {"seqs=64", "batches=1", NULL};
    nc_status st = compile_tmp("tests/fixtures/decision/dm_k3", opts, dir, bundle, &err);
    snprintf(part, sizeof part, "%s/partition.json", bundle);
    int has = st == NC_OK && access(part, F_OK) == 0;
    CHECK(remove_dir(dir) == 0);
    CHECK_OK(st, &err);
    CHECK(has);
}

#define E2E "tests/fixtures/gen/e2e/"
#define TINY "tests/fixtures/qwen3/tiny_gqa2"

/* What a generation streamed: the text, the tokens, where to cancel. */
typedef struct stream {
    char text[8192];
    size_t len;
    int32_t ids[256];
    int n_ids, n_calls, final_calls, cancel_after;
} stream;

static int collect(void *user, int32_t token, const char *text, size_t len) {
    stream *s = user;
    s->n_calls++;
    if (token < 0)
        s->final_calls++;
    else if (s->n_ids < 256)
        s->ids[s->n_ids++] = token;
    if (s->len + len < sizeof s->text) {
        memcpy(s->text + s->len, text, len);
        s->len += len;
        s->text[s->len] = '\0';
    }
    return s->cancel_after && s->n_ids >= s->cancel_after;
}

/* The streamed text of a 24-token greedy continuation equals HF's
 * (tools/make_gen_fixtures.py), on the backend given. */
static void greedy_text_case(const char *dir, const char *backend, const char *const *opts) {
    nc_error err;
    nc_model *m;
    nc_sequence *seq;
    CHECK_OK(nc_model_open(dir, backend, opts, &m, &err), &err);
    CHECK(nc_model_get_kind(m) == NC_MODEL_DECODER);
    CHECK_OK(nc_sequence_new(m, 0, &seq, &err), &err);
    char *prompt = read_text(E2E "run_tiny_gqa2_0.prompt", NULL);
    char *want = read_text(E2E "run_tiny_gqa2_0.expected", NULL);
    CHECK(prompt && want);
    static stream s;
    memset(&s, 0, sizeof s);
    nc_finish why = (nc_finish)-1;
    CHECK_OK(nc_generate(seq, prompt, 24, NULL, collect, &s, &why, &err), &err);
    CHECKF(!strcmp(s.text, want), "got '%s', HF '%s'", s.text, want);
    CHECK(why == NC_FINISH_LENGTH || why == NC_FINISH_EOS);
    CHECK(s.final_calls == 1 && s.n_calls == s.n_ids + 1 && s.n_ids <= 24);
    free(prompt);
    free(want);
    nc_sequence_free(seq);
    nc_model_free(m);
}

static void test_generate_streams_hf_greedy_text(void) {
    greedy_text_case(TINY, "cpu", NULL);
}

/* Speculative decoding ("draft=DIR"): another checkpoint of the same
 * tokenizer proposes, the text is still HF's greedy text for the target;
 * the draft's figures come back as sequence stats; draft options without a
 * draft, or a bad draft backend, are refused in one line. */
static void test_generate_with_a_draft_is_hf_greedy_text(void) {
    const char *opts[] = {"threads=1", "draft=tests/fixtures/qwen3/tiny_bf16", "draft_max=3", NULL};
    greedy_text_case(TINY, "cpu", opts);
    nc_error err;
    nc_model *m;
    nc_sequence *seq;
    CHECK_OK(nc_model_open(TINY, NULL, opts, &m, &err), &err);
    CHECK_OK(nc_sequence_new(m, 0, &seq, &err), &err);
    CHECK_OK(nc_generate(seq, "In the beginning", 16, NULL, NULL, NULL, NULL, &err), &err);
    double drafted = nc_sequence_stat(seq, NC_STAT_DRAFTED);
    double kept = nc_sequence_stat(seq, NC_STAT_DRAFT_ACCEPTED);
    double steps = nc_sequence_stat(seq, NC_STAT_DRAFT_STEPS);
    CHECKF(drafted > 0 && kept <= drafted && steps > 0 && steps <= 16, "%g %g %g", drafted, kept,
           steps);
    nc_sequence_free(seq);
    nc_model_free(m);
    const char *no_draft[] = {"draft_max=3", NULL};
    CHECK(nc_model_open(TINY, NULL, no_draft, &m, &err) == NC_ERR_INVALID);
    CHECKF(strstr(err.msg, "need draft=DIR") != NULL, "%s", err.msg);
    const char *bad_backend[] = {"draft=" TINY, "draft_backend=gpu", NULL};
    CHECK(nc_model_open(TINY, NULL, bad_backend, &m, &err) == NC_ERR_INVALID);
    CHECKF(strstr(err.msg, "draft_backend") && strstr(err.msg, "gpu"), "%s", err.msg);
}

/* Token ids of HF's greedy steps (reference.json, up to an end-of-sequence
 * id) from the prompt's ids, on a second checkpoint. */
/* A checkpoint's reference.json (json_decref *ref): HF's first prompt,
 * its ids into prompt[0..*n) (at most 64), and *greedy, the ids HF's greedy
 * steps chose after them (borrowed). */
static void load_greedy_reference(const char *dir, int32_t *prompt, size_t *n, json_t **ref,
                                  json_t **greedy) {
    char path[256];
    snprintf(path, sizeof path, "%s/reference.json", dir);
    json_error_t je;
    *ref = json_load_file(path, 0, &je);
    json_t *p0 = json_array_get(json_object_get(*ref, "prompts"), 0);
    json_t *pid = json_object_get(p0, "ids");
    *greedy = json_object_get(p0, "greedy_ids");
    *n = json_array_size(pid);
    if (*n > 64) *n = 0;
    for (size_t i = 0; i < *n; i++)
        prompt[i] = (int32_t)json_integer_value(json_array_get(pid, i));
    CHECKF(*n > 0 && *greedy, "%s: no prompt ids and greedy ids (at most 64)", path);
}

static void test_generate_tokens_equal_hf_greedy_ids(void) {
    const char *dir = "tests/fixtures/qwen3/tiny_gqa4_tied";
    int32_t prompt[64];
    size_t n;
    json_t *ref, *gid;
    load_greedy_reference(dir, prompt, &n, &ref, &gid);
    nc_error err;
    nc_model *m;
    nc_sequence *seq;
    const char *opts[] = {"ctx=128", "threads=2", NULL};
    CHECK_OK(nc_model_open(dir, NULL, opts, &m, &err), &err);
    CHECK_OK(nc_sequence_new(m, 0, &seq, &err), &err);
    CHECK(nc_sequence_context(seq) == 128);
    static stream s;
    memset(&s, 0, sizeof s);
    nc_finish why;
    CHECK_OK(nc_generate_tokens(seq, prompt, n, 32, NULL, collect, &s, &why, &err), &err);
    CHECK(s.n_ids > 0);
    for (int i = 0; i < s.n_ids; i++)
        CHECKF(s.ids[i] == json_integer_value(json_array_get(gid, (size_t)i)), "step %d", i);
    CHECK(why == NC_FINISH_EOS ? s.n_ids < 32 : s.n_ids == 32);
    json_decref(ref);
    nc_sequence_free(seq);
    nc_model_free(m);
}

/* A callback that returns non-zero ends the generation at once; a stop
 * string ends it before the string, which is not emitted. */
/* The TINY checkpoint on the cpu with a 64-token sequence, and its E2E
 * case: the prompt and HF's greedy text. */
static void open_tiny_case(nc_model **m, nc_sequence **seq, char **prompt, char **want) {
    nc_error err;
    CHECK_OK(nc_model_open(TINY, "cpu", NULL, m, &err), &err);
    CHECK_OK(nc_sequence_new(*m, 64, seq, &err), &err);
    *prompt = read_text(E2E "run_tiny_gqa2_0.prompt", NULL);
    *want = read_text(E2E "run_tiny_gqa2_0.expected", NULL);
    CHECK(*prompt && *want);
}

static void test_generate_cancel_and_stop(void) {
    nc_error err;
    nc_model *m;
    nc_sequence *seq;
    char *prompt, *want;
    open_tiny_case(&m, &seq, &prompt, &want);
    CHECK(prompt && want && strlen(want) > 20);
    static stream s;
    memset(&s, 0, sizeof s);
    s.cancel_after = 3;
    nc_finish why;
    CHECK_OK(nc_generate(seq, prompt, 24, NULL, collect, &s, &why, &err), &err);
    CHECK(why == NC_FINISH_CANCEL && s.n_ids == 3);
    /* stop at the expected text's bytes 12..17 */
    char stop[8];
    memcpy(stop, want + 12, 6);
    stop[6] = '\0';
    nc_sampling *smp = nc_sampling_new();
    CHECK(smp);
    CHECK_OK(nc_sampling_add_stop(smp, stop, &err), &err);
    memset(&s, 0, sizeof s);
    CHECK_OK(nc_generate(seq, prompt, 24, smp, collect, &s, &why, &err), &err);
    size_t at = (size_t)(strstr(want, stop) - want);
    CHECKF(why == NC_FINISH_STOP && s.len == at && !memcmp(s.text, want, at), "got '%s'", s.text);
    /* a prompt longer than the context fails before any callback */
    memset(&s, 0, sizeof s);
    int32_t long_prompt[80] = {0};
    CHECK(nc_generate_tokens(seq, long_prompt, 80, 4, NULL, collect, &s, NULL, &err) != NC_OK);
    CHECK(s.n_calls == 0);
    nc_sampling_free(smp);
    free(prompt);
    free(want);
    nc_sequence_free(seq);
    /* an encoder has no sequences */
    nc_model_free(m);
    CHECK_OK(nc_model_open(MB "mb_base", NULL, NULL, &m, &err), &err);
    CHECK(nc_sequence_new(m, 0, &seq, &err) == NC_ERR_INVALID);
    nc_model_free(m);
}

static int is_blank(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* nc_sequence_split_reasoning, against HF's greedy text (which holds no
 * think tag): with the prompt taken as having opened <think> the whole
 * reply is reasoning, less the blanks at both ends (gen/think.h's rule),
 * and nc_generate's callback still gets every token, with no text; not
 * opened, the reply is all answer; NULL turns the split off. A family
 * without think tokens (Llama) never splits: HF's greedy ids all go to
 * the answer's callback. */
static void test_split_reasoning(void) {
    nc_error err;
    nc_model *m;
    nc_sequence *seq;
    char *prompt, *want;
    open_tiny_case(&m, &seq, &prompt, &want);
    CHECK(prompt && want && !strstr(want, "think>"));
    size_t from = 0, to = strlen(want);
    while (from < to && is_blank(want[from]))
        from++;
    while (to > from && is_blank(want[to - 1]))
        to--;
    static stream r, c;
    memset(&r, 0, sizeof r);
    memset(&c, 0, sizeof c);
    CHECK_OK(nc_sequence_split_reasoning(seq, collect, &r, 1, &err), &err);
    CHECK_OK(nc_generate(seq, prompt, 24, NULL, collect, &c, NULL, &err), &err);
    CHECKF(r.len == to - from && !memcmp(r.text, want + from, r.len), "reasoning '%s'", r.text);
    CHECKF(c.len == 0 && c.n_ids > 0 && c.final_calls == 1, "answer '%s'", c.text);
    /* each reasoning piece names a token the answer's callback got, in order */
    int k = 0, in_order = r.n_ids > 0;
    for (int i = 0; i < r.n_ids; i++, k++) {
        while (k < c.n_ids && c.ids[k] != r.ids[i])
            k++;
        in_order &= k < c.n_ids;
    }
    CHECK(in_order);
    memset(&r, 0, sizeof r);
    memset(&c, 0, sizeof c);
    CHECK_OK(nc_sequence_split_reasoning(seq, collect, &r, 0, &err), &err);
    CHECK_OK(nc_generate(seq, prompt, 24, NULL, collect, &c, NULL, &err), &err);
    CHECKF(!strcmp(c.text, want) && r.n_calls == 0, "answer '%s'", c.text);
    memset(&c, 0, sizeof c);
    CHECK_OK(nc_sequence_split_reasoning(seq, NULL, NULL, 1, &err), &err);
    CHECK_OK(nc_generate(seq, prompt, 24, NULL, collect, &c, NULL, &err), &err);
    CHECKF(!strcmp(c.text, want), "answer '%s'", c.text);
    CHECK(nc_sequence_split_reasoning(NULL, NULL, NULL, 0, &err) == NC_ERR_INVALID);
    free(prompt);
    free(want);
    nc_sequence_free(seq);
    nc_model_free(m);

    const char *dir = "tests/fixtures/llama/tiny_llama3";
    int32_t ids[64];
    size_t n;
    json_t *ref, *gid;
    load_greedy_reference(dir, ids, &n, &ref, &gid);
    CHECK_OK(nc_model_open(dir, "cpu", NULL, &m, &err), &err);
    CHECK_OK(nc_sequence_new(m, 128, &seq, &err), &err);
    memset(&r, 0, sizeof r);
    memset(&c, 0, sizeof c);
    CHECK_OK(nc_sequence_split_reasoning(seq, collect, &r, 1, &err), &err);
    CHECK_OK(nc_generate_tokens(seq, ids, n, 16, NULL, collect, &c, NULL, &err), &err);
    CHECK(r.n_calls == 0 && c.n_ids == 16 && c.len > 0);
    for (int i = 0; i < c.n_ids; i++)
        CHECKF(c.ids[i] == json_integer_value(json_array_get(gid, (size_t)i)), "step %d", i);
    json_decref(ref);
    nc_sequence_free(seq);
    nc_model_free(m);
}

/* nc_compile the checkpoint, then the same greedy text through the bundle:
 * the fp16 interpreter ("mil") and the stand-in Neural Engine ("ane" on the
 * fake device) both give HF's. */
static void test_compiled_decoder_bundle_generates_hf_text(void) {
    char dir[32], bundle[64];
    nc_error err;
    const char *opts[] = {"ctx=64", "buckets=32", NULL};
    nc_status st = compile_tmp(TINY, opts, dir, bundle, &err);
    if (st == NC_OK) greedy_text_case(bundle, "mil", NULL);
    const char *fake[] = {"ane_device=fake", NULL};
    if (st == NC_OK && !nc_test_failed_) greedy_text_case(bundle, "ane", fake);
    CHECK(remove_dir(dir) == 0);
    CHECK_OK(st, &err);
}

/* The sampling a folder asks for: nc_sampling_from_model takes every value
 * of its generation_config.json (read here with jansson) and leaves the
 * rest; do_sample false is greedy. Parameters read back as set. */
static void test_sampling_from_model_and_parameters(void) {
    nc_error err;
    nc_model *m;
    CHECK_OK(nc_model_open("models/demo", NULL, NULL, &m, &err), &err);
    nc_sampling *s = nc_sampling_new();
    CHECK(s);
    CHECK_OK(nc_sampling_set(s, "min_p", 0.25, &err), &err);
    CHECK_OK(nc_sampling_from_model(s, m, &err), &err);
    json_error_t je;
    json_t *gc = json_load_file("models/demo/generation_config.json", 0, &je);
    CHECK(gc && json_is_true(json_object_get(gc, "do_sample")));
    const char *keys[] = {"temperature", "top_k", "top_p"};
    for (int i = 0; i < 3; i++) {
        double want = json_number_value(json_object_get(gc, keys[i]));
        CHECKF(fabs(nc_sampling_get(s, keys[i]) - want) < 1e-6, "%s %g, file %g", keys[i],
               nc_sampling_get(s, keys[i]), want);
    }
    json_decref(gc);
    CHECK(fabs(nc_sampling_get(s, "min_p") - 0.25) < 1e-6); /* not in the file: kept */
    CHECK(isnan(nc_sampling_get(s, "no_such")));
    nc_model_free(m);
    /* do_sample false: greedy whatever the temperature was */
    CHECK_OK(nc_model_open(TINY, NULL, NULL, &m, &err), &err);
    CHECK_OK(nc_sampling_set(s, "temperature", 0.9, &err), &err);
    CHECK_OK(nc_sampling_from_model(s, m, &err), &err);
    CHECK(nc_sampling_get(s, "temperature") == 0);
    nc_model_free(m);
    /* the penalties, truncate, and seeds beyond a double's integers */
    CHECK_OK(nc_sampling_set(s, "presence_penalty", -1.5, &err), &err);
    CHECK_OK(nc_sampling_set(s, "frequency_penalty", 2, &err), &err);
    CHECK_OK(nc_sampling_set(s, "truncate", 1, &err), &err);
    CHECK(nc_sampling_get(s, "presence_penalty") == -1.5 &&
          nc_sampling_get(s, "frequency_penalty") == 2 && nc_sampling_get(s, "truncate") == 1);
    CHECK(nc_sampling_set(s, "truncate", 2, &err) == NC_ERR_INVALID);
    CHECK(nc_sampling_set(s, "presence_penalty", 101, &err) == NC_ERR_INVALID);
    CHECK(nc_sampling_set(s, "seed", 1e17, &err) == NC_ERR_INVALID && strstr(err.msg, "seed"));
    nc_sampling_set_seed(s, 18446744073709551615ull);
    CHECK(nc_sampling_get(s, "seed") == 18446744073709551615.0);
    nc_sampling_free(s);
}

/* A presence penalty far above the logits' spread makes greedy decoding
 * pick a token it has not seen yet at every step (HF and OpenAI apply it to
 * generated tokens; nectar to the prompt's too). */
static void test_presence_penalty_avoids_seen_tokens(void) {
    nc_error err;
    nc_model *m;
    nc_sequence *seq;
    CHECK_OK(nc_model_open(TINY, NULL, NULL, &m, &err), &err);
    CHECK_OK(nc_sequence_new(m, 128, &seq, &err), &err);
    nc_sampling *s = nc_sampling_new();
    CHECK_OK(nc_sampling_set(s, "presence_penalty", 100, &err), &err);
    static stream st;
    memset(&st, 0, sizeof st);
    CHECK_OK(nc_generate(seq, "And God said", 40, s, collect, &st, NULL, &err), &err);
    CHECK(st.n_ids > 10);
    int repeats = 0;
    for (int i = 0; i < st.n_ids; i++)
        for (int j = 0; j < i; j++)
            repeats += st.ids[i] == st.ids[j];
    CHECKF(repeats == 0, "%d repeated tokens", repeats);
    nc_sampling_free(s);
    nc_sequence_free(seq);
    nc_model_free(m);
}

/* The figures of a generation: prompt tokens as tokenized, tokens as
 * streamed, the cached prefix of a second call, and truncation dropping
 * exactly what does not fit (prompt + max_tokens - context). */
static void test_sequence_stats_and_truncate(void) {
    nc_error err;
    nc_model *m;
    nc_sequence *seq;
    CHECK_OK(nc_model_open(TINY, NULL, NULL, &m, &err), &err);
    CHECK_OK(nc_sequence_new(m, 16, &seq, &err), &err);
    CHECK(nc_sequence_stat(seq, NC_STAT_PROMPT_TOKENS) == 0);
    const char *prompt = "And God said, Let there be";
    int32_t *ids;
    size_t n;
    CHECK_OK(nc_tokenize(nc_model_tokenizer(m), prompt, strlen(prompt), 0, &ids, &n, &err), &err);
    static stream st;
    memset(&st, 0, sizeof st);
    nc_finish why;
    CHECK_OK(nc_generate_tokens(seq, ids, n, 4, NULL, collect, &st, &why, &err), &err);
    CHECK(nc_sequence_stat(seq, NC_STAT_PROMPT_TOKENS) == (double)n);
    CHECK(nc_sequence_stat(seq, NC_STAT_PROMPT_CACHED) == 0);
    CHECK(nc_sequence_stat(seq, NC_STAT_GENERATED) == st.n_ids + (why == NC_FINISH_EOS));
    CHECK(nc_sequence_stat(seq, NC_STAT_PROMPT_SECONDS) > 0);
    CHECK(!strcmp(nc_finish_name(why), why == NC_FINISH_EOS ? "eos" : "length"));
    CHECK(!strcmp(nc_finish_name(NC_FINISH_CONTEXT), "context"));
    CHECK(!strcmp(nc_finish_name((nc_finish)99), "unknown"));
    /* the same prompt again: all but its last token come from the cache */
    CHECK_OK(nc_generate_tokens(seq, ids, n, 2, NULL, NULL, NULL, NULL, &err), &err);
    CHECK(nc_sequence_stat(seq, NC_STAT_PROMPT_CACHED) == (double)n - 1);
    /* too long for 16 tokens: an error, or with truncate the oldest dropped */
    int max_new = 16 - (int)n + 3;
    CHECK(nc_generate_tokens(seq, ids, n, max_new, NULL, NULL, NULL, NULL, &err) == NC_ERR_RANGE);
    nc_sampling *s = nc_sampling_new();
    CHECK_OK(nc_sampling_set(s, "truncate", 1, &err), &err);
    CHECK_OK(nc_generate_tokens(seq, ids, n, max_new, s, NULL, NULL, NULL, &err), &err);
    CHECK(nc_sequence_stat(seq, NC_STAT_PROMPT_DROPPED) == 3);
    CHECK(nc_sequence_stat(seq, NC_STAT_PROMPT_TOKENS) == (double)n - 3);
    nc_sampling_free(s);
    nc_free(ids);
    nc_sequence_free(seq);
    nc_model_free(m);
}

/* The layer callback sees every layer of config.json, rows of hidden_size,
 * for every token fed: the prompt and each generated token but the last. */
typedef struct layer_count {
    int rows[8], width, bad;
} layer_count;

static void count_layer(void *user, int layer, const float *rows, int n_rows, int width) {
    layer_count *c = user;
    if (layer < 0 || layer >= 8 || !rows) {
        c->bad = 1;
        return;
    }
    c->rows[layer] += n_rows;
    c->width = width;
}

static void test_layer_callback_and_backends(void) {
    nc_error err;
    nc_model *m;
    nc_sequence *seq;
    CHECK_OK(nc_model_open(TINY, NULL, NULL, &m, &err), &err);
    json_error_t je;
    json_t *cfg = json_load_file(TINY "/config.json", 0, &je);
    CHECK(cfg);
    int layers = (int)json_integer_value(json_object_get(cfg, "num_hidden_layers"));
    int hidden = (int)json_integer_value(json_object_get(cfg, "hidden_size"));
    json_decref(cfg);
    CHECK(nc_model_num_layers(m) == layers && layers <= 8);
    CHECK(!strcmp(nc_model_placement(m), "every kernel on the CPU") && !nc_model_placement(NULL));
    static layer_count c;
    memset(&c, 0, sizeof c);
    CHECK_OK(nc_model_set_layer_callback(m, count_layer, &c, &err), &err);
    CHECK_OK(nc_sequence_new(m, 64, &seq, &err), &err);
    static stream st;
    memset(&st, 0, sizeof st);
    nc_finish why;
    CHECK_OK(nc_generate(seq, "And God said", 6, NULL, collect, &st, &why, &err), &err);
    int fed = (int)nc_sequence_stat(seq, NC_STAT_PROMPT_TOKENS) +
              (int)nc_sequence_stat(seq, NC_STAT_GENERATED) - 1;
    for (int l = 0; l < layers; l++)
        CHECKF(c.rows[l] == fed, "layer %d: %d rows, %d tokens fed", l, c.rows[l], fed);
    CHECK(c.width == hidden && !c.bad);
    nc_sequence_free(seq);
    nc_model_free(m);
    CHECK_OK(nc_model_open(MB "mb_base", NULL, NULL, &m, &err), &err);
    CHECK(nc_model_set_layer_callback(m, count_layer, &c, &err) == NC_ERR_UNSUPPORTED);
    nc_model_free(m);
    /* what this build can run */
    CHECK_OK(nc_backend_available("cpu", NULL, &err), &err);
    const char *fake[] = {"ane_device=fake", NULL}, *real[] = {"ane_device=real", NULL};
    CHECK_OK(nc_backend_available("ane", fake, &err), &err);
#if defined(__APPLE__)
    CHECK_OK(nc_backend_available("ane", real, &err), &err);
#else
    CHECK(nc_backend_available("ane", real, &err) == NC_ERR_UNSUPPORTED &&
          strstr(err.msg, "macOS"));
#endif
    CHECK(nc_backend_available("gpu", NULL, &err) == NC_ERR_INVALID && strstr(err.msg, "gpu"));
    const char *bad[] = {"kv=f8", NULL};
    CHECK(nc_backend_available("cpu", bad, &err) == NC_ERR_INVALID &&
          strstr(err.msg, "option kv: 'f8'"));
}

int main(void) {
    RUN(test_version_macros_match_the_library);
    RUN(test_tokenize_equals_hf_and_decodes_back);
    RUN(test_chat_template_equals_transformers);
    RUN(test_embed_equals_hf);
    RUN(test_bf16_contract_is_set_for_the_process);
    RUN(test_fill_mask_equals_hf);
    RUN(test_classify_equals_hf);
    RUN(test_open_errors_name_the_fault);
    RUN(test_compiled_encoder_bundle_runs_on_mil);
    RUN(test_compiled_decision_bundle_names_its_partition);
    RUN(test_generate_streams_hf_greedy_text);
    RUN(test_generate_with_a_draft_is_hf_greedy_text);
    RUN(test_generate_tokens_equal_hf_greedy_ids);
    RUN(test_generate_cancel_and_stop);
    RUN(test_split_reasoning);
    RUN(test_compiled_decoder_bundle_generates_hf_text);
    RUN(test_sampling_from_model_and_parameters);
    RUN(test_presence_penalty_avoids_seen_tokens);
    RUN(test_sequence_stats_and_truncate);
    RUN(test_layer_callback_and_backends);
    return nc_test_exit_code();
}
