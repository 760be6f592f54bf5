/* The per-sequence pipeline on a scripted fake engine behind the engine
 * seam (the logits after P cached tokens peak on script[P]), with the demo model's real tokenizer:
 * greedy output must be the script's continuation as tok_decode spells it; eos, stop strings, token
 * limits, a full context, truncation, cancellation and KV-prefix reuse each end or shape generation
 * as documented. */
#include "../test.h"
#include "gen/generate.h"
#include "text/tokenizer.h"

#define TOKENIZER "models/demo/tokenizer.json"

typedef struct fake {
    const int32_t *script;
    int n_script;
    int pos, ctx, n_vocab;
    int n_forwarded, n_calls;
    int32_t fail_on; /* a token id the fake rejects, -1 none */
} fake;

static int f_pos(const engine *e, const engine_seq *s) {
    (void)e;
    return ((const fake *)s)->pos;
}
static int f_truncate(engine *e, engine_seq *s, int n) {
    (void)e;
    fake *f = (fake *)s;
    if (n < f->pos) f->pos = n;
    return f->pos;
}
static nc_status f_forward(fake *f, const int32_t *t, int n, float *logits, nc_error *err) {
    if (f->pos + n > f->ctx) return nc_fail(err, NC_ERR_RANGE, "fake: context full");
    for (int i = 0; i < n; i++)
        if (t[i] == f->fail_on) return nc_fail(err, NC_ERR_INVALID, "fake: token %d", t[i]);
    f->pos += n;
    f->n_forwarded += n;
    f->n_calls++;
    for (int i = 0; i < f->n_vocab; i++)
        logits[i] = (float)(i % 7) * 0.1f;
    logits[f->script[f->pos % f->n_script]] = 10.0f;
    return NC_OK;
}
static nc_status f_step(engine *e, engine_step_item *items, int n, nc_error *err) {
    (void)e;
    (void)err;
    for (int i = 0; i < n; i++)
        items[i].status = f_forward((fake *)items[i].seq, items[i].tokens, items[i].n,
                                    items[i].logits, &items[i].err);
    return NC_OK;
}
/* one sequence: the fake itself */
static nc_status f_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    (void)ctx;
    (void)err;
    *out = (engine_seq *)e->impl;
    return NC_OK;
}
static void f_seq_free(engine *e, engine_seq *s) {
    (void)e;
    (void)s;
}

static const engine_ops fake_ops = {.seq_new = f_seq_new,
                                    .seq_free = f_seq_free,
                                    .seq_pos = f_pos,
                                    .seq_truncate = f_truncate,
                                    .step = f_step};

typedef struct sink {
    char text[4096];
    size_t len;
    int n_calls, cancel_after;
} sink;

static int collect(void *user, gen_text_kind kind, const char *text, size_t len) {
    (void)kind;
    sink *k = user;
    if (k->len + len < sizeof k->text) {
        if (len) memcpy(k->text + k->len, text, len);
        k->len += len;
        k->text[k->len] = '\0';
    }
    return 0;
}

static int count_token(void *user, int32_t token, const float *logits) {
    (void)token;
    (void)logits;
    sink *k = user;
    k->n_calls++;
    return k->cancel_after && k->n_calls >= k->cancel_after;
}

static nc_status generate(gen_seq *s, const int32_t *ids, int n, const gen_request *req, sink *k,
                          gen_result *res, nc_error *err) {
    gen_callbacks cb = {count_token, collect, k};
    return gen_generate(s, ids, n, req, &cb, res, err);
}

static const char *SCRIPT_TEXT =
    "In the beginning God created the heaven and the earth. And the earth was without "
    "form, and void; and darkness was upon the face of the deep.";

typedef struct setup {
    tok_tokenizer *tok;
    int32_t *ids;
    size_t n_ids;
    fake f;
    engine e;
    gen_model m;
    gen_seq *s;
} setup;

static int make_setup_text(setup *u, int ctx, const char *text, nc_error *err) {
    memset(u, 0, sizeof *u);
    if (tok_load(TOKENIZER, &u->tok, err) != NC_OK) return 0;
    if (tok_encode(u->tok, text, strlen(text), &u->ids, &u->n_ids, err) != NC_OK) return 0;
    u->f = (fake){u->ids, (int)u->n_ids, 0, ctx, 4096, 0, 0, -1};
    /* a Qwen3 stand-in: its family's end token <|im_end|> joins the eos set */
    u->e = (engine){.ops = &fake_ops,
                    .impl = &u->f,
                    .kind = "fake",
                    .family = model_family_named("qwen3"),
                    .n_vocab = 4096};
    u->e.ctx_max = ctx;
    u->m = (gen_model){.e = &u->e, .tok = u->tok};
    gen_model_build_eos(&u->m);
    return gen_seq_new(&u->m, ctx, &u->s, err) == NC_OK;
}

static int make_setup(setup *u, int ctx, nc_error *err) {
    return make_setup_text(u, ctx, SCRIPT_TEXT, err);
}

static void free_setup(setup *u) {
    gen_seq_free(u->s);
    free(u->ids);
    tok_free(u->tok);
}

static gen_request greedy(int max_new) {
    gen_request r = {0};
    r.sampling = gen_sampler_defaults_greedy();
    r.max_new_tokens = max_new;
    return r;
}

/* decode(ids[from, to)) into buf */
static int decode_range(const setup *u, size_t from, size_t to, char *buf, size_t cap) {
    char *out = NULL;
    size_t len = 0;
    nc_error err;
    if (tok_decode(u->tok, u->ids + from, to - from, 0, &out, &len, &err) != NC_OK) return 0;
    int ok = len < cap;
    if (ok) memcpy(buf, out, len + 1);
    free(out);
    return ok;
}

static void test_greedy_continuation_is_the_script(void) {
    setup u;
    nc_error err;
    int ok = make_setup(&u, 256, &err);
    if (!ok) {
        free_setup(&u);
        CHECKF(0, "%s", err.msg);
    }
    int k = 5, n_new = (int)u.n_ids - 5;
    gen_request req = greedy(n_new);
    sink out = {0};
    gen_result res;
    nc_status st = generate(u.s, u.ids, k, &req, &out, &res, &err);
    char expect[2048];
    int dec = decode_range(&u, (size_t)k, u.n_ids, expect, sizeof expect);
    int fwd = u.f.n_forwarded;
    free_setup(&u);
    CHECK_OK(st, &err);
    CHECK(dec);
    CHECKF(!strcmp(out.text, expect), "got '%s' expected '%s'", out.text, expect);
    CHECK(res.finish == GEN_FINISH_LENGTH);
    CHECK(res.n_generated == n_new && res.n_prompt == k && res.n_prompt_cached == 0);
    CHECK(fwd == k + n_new - 1); /* the last token is not run */
}

static void test_eos_and_stop_string_end_generation(void) {
    setup u;
    nc_error err;
    int ok = make_setup(&u, 256, &err);
    if (!ok) {
        free_setup(&u);
        CHECKF(0, "%s", err.msg);
    }
    /* eos: put <|im_end|> at position 9 of the script */
    int32_t im_end = tok_find(u.tok, "<|im_end|>");
    int32_t saved = u.ids[9];
    u.ids[9] = im_end;
    gen_request req = greedy(50);
    sink a = {0};
    gen_result ra;
    nc_status st1 = generate(u.s, u.ids, 4, &req, &a, &ra, &err);
    char expect_a[512];
    int dec_a = decode_range(&u, 4, 9, expect_a, sizeof expect_a);
    u.ids[9] = saved;
    /* stop string inside the continuation: " created the" (not emitted) */
    const char *stops[] = {"zzz", " created the"};
    req.stops = stops;
    req.n_stops = 2;
    sink b = {0};
    gen_result rb;
    gen_seq_reset(u.s);
    nc_status st2 = generate(u.s, u.ids, 2, &req, &b, &rb, &err);
    char expect_b[1024];
    int dec_b = decode_range(&u, 2, u.n_ids, expect_b, sizeof expect_b);
    char *cut = dec_b ? strstr(expect_b, " created the") : NULL;
    if (cut) *cut = '\0';
    free_setup(&u);
    CHECK(st1 == NC_OK && st2 == NC_OK);
    CHECK(dec_a);
    CHECK(ra.finish == GEN_FINISH_EOS && ra.n_generated == 6);
    CHECKF(!strcmp(a.text, expect_a), "got '%s' expected '%s'", a.text, expect_a);
    CHECK(rb.finish == GEN_FINISH_STOP);
    CHECK(cut);
    CHECKF(!strcmp(b.text, expect_b), "got '%s' expected '%s'", b.text, expect_b);
}

static void test_context_overflow_is_an_error_before_any_output(void) {
    setup u;
    nc_error err;
    int ok = make_setup(&u, 16, &err);
    if (!ok) {
        free_setup(&u);
        CHECKF(0, "%s", err.msg);
    }
    gen_request req = greedy(10);
    sink a = {0};
    gen_result r;
    nc_status st = generate(u.s, u.ids, 10, &req, &a, &r, &err);
    int fwd_after_error = u.f.n_forwarded;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", err.msg);
    /* --truncate keeps the last 16 - 10 = 6 prompt tokens */
    req.truncate = 1;
    sink b = {0};
    gen_result rt;
    nc_status st2 = generate(u.s, u.ids, 10, &req, &b, &rt, &err);
    char expect[512];
    /* the fake predicts by position: 6 cached tokens continue with script[6] */
    int dec = decode_range(&u, 6, 16, expect, sizeof expect);
    /* no limit: runs until the cache is full */
    gen_request unlimited = greedy(-1);
    gen_seq_reset(u.s);
    sink c = {0};
    gen_result ru;
    nc_status st3 = generate(u.s, u.ids, 4, &unlimited, &c, &ru, &err);
    /* no limit and too long a prompt: truncation keeps half the context */
    gen_request unlimited_trunc = greedy(-1);
    unlimited_trunc.truncate = 1;
    gen_result rut;
    nc_status st5 = generate(u.s, u.ids, 20, &unlimited_trunc, &c, &rut, &err);
    /* an empty prompt */
    gen_result re;
    nc_status st4 = generate(u.s, u.ids, 0, &req, &c, &re, &err);
    free_setup(&u);
    CHECK(st == NC_ERR_RANGE);
    CHECKF(strstr(msg, "10 tokens") && strstr(msg, "context of 16"), "message: %s", msg);
    CHECK(a.n_calls == 0 && fwd_after_error == 0);
    CHECK(st2 == NC_OK && rt.n_truncated == 4 && rt.n_prompt == 6);
    CHECK(dec);
    CHECKF(!strcmp(b.text, expect), "got '%s' expected '%s'", b.text, expect);
    CHECKF(st3 == NC_OK && ru.finish == GEN_FINISH_CONTEXT && ru.n_generated == 16 - 4 + 1,
           "st %d finish %s generated %d", st3, gen_finish_name(ru.finish), ru.n_generated);
    CHECK(st4 == NC_ERR_INVALID);
    CHECKF(st5 == NC_OK && rut.n_prompt == 8 && rut.n_truncated == 12 &&
               rut.finish == GEN_FINISH_CONTEXT && rut.n_generated == 16 - 8 + 1,
           "st %d prompt %d dropped %d finish %s generated %d", st5, rut.n_prompt, rut.n_truncated,
           gen_finish_name(rut.finish), rut.n_generated);
}

static void test_prefix_reuse_and_cancel(void) {
    setup u;
    nc_error err;
    int ok = make_setup(&u, 256, &err);
    if (!ok) {
        free_setup(&u);
        CHECKF(0, "%s", err.msg);
    }
    gen_request req = greedy(3);
    sink a = {0};
    gen_result r1, r2, r3;
    nc_status st1 = generate(u.s, u.ids, 8, &req, &a, &r1, &err);
    /* the next prompt extends the first one plus two of its generated tokens:
     * the 8 + 2 cached tokens are reused, only the rest runs */
    int fwd0 = u.f.n_forwarded;
    nc_status st2 = generate(u.s, u.ids, 14, &req, &a, &r2, &err);
    int fwd1 = u.f.n_forwarded - fwd0;
    /* the identical prompt again: everything but the last token is reused */
    int fwd2_0 = u.f.n_forwarded;
    nc_status st3 = generate(u.s, u.ids, 14, &req, &a, &r3, &err);
    int fwd2 = u.f.n_forwarded - fwd2_0;
    /* a diverging prompt: only the shared prefix is reused */
    int32_t saved = u.ids[3];
    u.ids[3] = u.ids[4];
    gen_result r4;
    nc_status st4 = generate(u.s, u.ids, 12, &req, &a, &r4, &err);
    u.ids[3] = saved;
    /* cancel after the second callback */
    gen_request long_req = greedy(40);
    sink c = {0};
    c.cancel_after = 2;
    gen_result r5;
    nc_status st5 = generate(u.s, u.ids, 5, &long_req, &c, &r5, &err);
    /* a failing forward pass is reported and leaves the session usable */
    u.f.fail_on = u.ids[20];
    gen_result r6;
    nc_status st6 = generate(u.s, u.ids, 22, &req, &a, &r6, &err);
    u.f.fail_on = -1;
    gen_result r7;
    nc_status st7 = generate(u.s, u.ids, 22, &req, &a, &r7, &err);
    free_setup(&u);
    CHECK(st1 == NC_OK && st2 == NC_OK && st3 == NC_OK && st4 == NC_OK);
    CHECKF(r2.n_prompt_cached == 10 && fwd1 == 4 + 2, "cached %d forwarded %d", r2.n_prompt_cached,
           fwd1);
    CHECK(r3.n_prompt_cached == 13 && fwd2 == 1 + 2);
    CHECK(r4.n_prompt_cached == 3);
    CHECK(st5 == NC_OK && r5.finish == GEN_FINISH_CANCEL && r5.n_generated == 2);
    CHECK(st6 == NC_ERR_INVALID);
    CHECK(st7 == NC_OK && r7.finish == GEN_FINISH_LENGTH);
}

/* Multi-byte characters the demo vocabulary (English only) spells with
 * single-byte tokens: the detokenizer holds back half characters, so a
 * non-ASCII stop string still matches and the output stays valid UTF-8. */
static void test_stop_string_over_split_utf8_characters(void) {
    const char *text = "In the beginning \xce\xb1\xce\xb2\xce\xb3 caf\xc3\xa9 \xe2\x80\x9c"
                       "done\xe2\x80\x9d end";
    setup u;
    nc_error err;
    int ok = make_setup_text(&u, 256, text, &err);
    if (!ok) {
        free_setup(&u);
        CHECKF(0, "%s", err.msg);
    }
    int n_tokens = (int)u.n_ids;
    gen_request req = greedy(100);
    const char *stops[] = {"\xc3\xa9 \xe2\x80\x9c"}; /* "é “" */
    req.stops = stops;
    req.n_stops = 1;
    sink out = {0};
    gen_result res;
    nc_status st = generate(u.s, u.ids, 3, &req, &out, &res, &err);
    char expect[256];
    int dec = decode_range(&u, 3, u.n_ids, expect, sizeof expect);
    char *cut = dec ? strstr(expect, stops[0]) : NULL;
    if (cut) *cut = '\0';
    free_setup(&u);
    CHECK_OK(st, &err);
    CHECK(n_tokens > 20); /* the Greek letters became byte tokens */
    CHECK(cut);
    CHECK(res.finish == GEN_FINISH_STOP);
    CHECKF(!strcmp(out.text, expect), "got '%s' expected '%s'", out.text, expect);
}

/* The eos set is the engine's config ids plus its family's end-of-turn
 * tokens (models/family.h), not a fixed <|im_end|>: on the same tokenizer a
 * Qwen3 engine gets <|im_end|>, a Llama one does not (its <|eot_id|> and
 * <|end_of_text|> are not in this vocabulary); both keep the config's. */
static void test_eos_set_follows_the_family(void) {
    tok_tokenizer *tok = NULL;
    nc_error err;
    CHECK_OK(tok_load(TOKENIZER, &tok, &err), &err);
    int32_t im_end = tok_find(tok, "<|im_end|>");
    engine q = {.family = model_family_named("qwen3"), .eos_ids = {7}, .n_eos = 1};
    engine l = {.family = model_family_named("llama"), .eos_ids = {7}, .n_eos = 1};
    gen_model mq = {.e = &q, .tok = tok}, ml = {.e = &l, .tok = tok};
    gen_model_build_eos(&mq);
    gen_model_build_eos(&ml);
    tok_free(tok);
    CHECK(im_end >= 0 && gen_model_is_eos(&mq, im_end) && gen_model_is_eos(&mq, 7));
    CHECK(!gen_model_is_eos(&ml, im_end) && gen_model_is_eos(&ml, 7) && ml.n_eos == 1);
}

int main(void) {
    RUN(test_greedy_continuation_is_the_script);
    RUN(test_eos_and_stop_string_end_generation);
    RUN(test_context_overflow_is_an_error_before_any_output);
    RUN(test_prefix_reuse_and_cancel);
    RUN(test_stop_string_over_split_utf8_characters);
    RUN(test_eos_set_follows_the_family);
    return nc_test_exit_code();
}
