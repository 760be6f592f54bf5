/* The reasoning/answer split on the pieces a Qwen3 reply streams as, with
 * the demo tokenizer's <think> and </think> ids, under its one whitespace
 * rule (think.h): tags vanish; reasoning loses its leading blanks and the
 * blanks before </think>, keeps those between its words even when they
 * arrive as pieces of their own; the blanks after </think> are dropped;
 * <think> after content is shown as text; a vocabulary without the tags leaves
 * everything as content. */
#include "../test.h"
#include "gen/think.h"
#include "models/family.h"

typedef struct piece {
    int32_t token; /* -2: the <think> id, -3: the </think> id */
    const char *text;
} piece;

typedef struct out {
    char reasoning[256], content[256];
} out;

static int collect(void *user, gen_text_kind kind, const char *text, size_t len) {
    out *o = user;
    strncat(kind == GEN_TEXT_REASONING ? o->reasoning : o->content, text, len);
    return 0;
}

/* As the pipeline drives it: a closing tag first flushes (nothing here). */
static void split(gen_think *t, const piece *ps, int n, out *o) {
    o->reasoning[0] = o->content[0] = '\0';
    for (int i = 0; i < n; i++) {
        int32_t id = ps[i].token == -2 ? t->open_id : ps[i].token == -3 ? t->close_id : ps[i].token;
        if (gen_think_closes(t, id) || gen_think_tag(t, id)) {
            gen_think_tag(t, id);
            continue;
        }
        gen_think_text(t, ps[i].text, strlen(ps[i].text), collect, o);
    }
}

static void test_reply_with_thinking_splits_at_tags(void) {
    tok_tokenizer *tok = NULL;
    const model_family_row *qwen3 = model_family_named("qwen3"); /* the demo's */
    nc_error err;
    CHECK_OK(tok_load("models/demo/tokenizer.json", &tok, &err), &err);
    gen_think t = {0};
    gen_think_init(&t, tok, qwen3, 0);
    int ok_ids = t.open_id == tok_find(tok, "<think>") && t.open_id >= 0 && t.close_id >= 0;
    const piece reply[] = {{-2, "<think>"}, {10, "\n"},    {11, "Let me"}, {12, " think."},
                           {13, "\n"},      {18, "More."}, {13, " \n"},    {-3, "</think>"},
                           {14, "\n\n"},    {15, "\nThe"}, {16, " LORD"},  {17, "\n"},
                           {-1, "."}};
    out a;
    split(&t, reply, (int)(sizeof reply / sizeof reply[0]), &a);
    /* starts_thinking: no opening tag in the reply */
    gen_think t2 = {0};
    gen_think_init(&t2, tok, qwen3, 1);
    const piece opened[] = {{11, "hmm"}, {-3, "</think>"}, {16, "ok"}};
    out b;
    split(&t2, opened, 3, &b);
    /* <think> after the answer has begun is just text */
    gen_think t3 = {0};
    gen_think_init(&t3, tok, qwen3, 0);
    const piece late[] = {{16, "ok "}, {-2, "<think>"}, {17, "x"}};
    out c;
    split(&t3, late, 3, &c);
    tok_free(tok);
    gen_think_free(&t);
    gen_think_free(&t2);
    gen_think_free(&t3);
    CHECK(ok_ids);
    CHECKF(!strcmp(a.reasoning, "Let me think.\nMore."), "reasoning '%s'", a.reasoning);
    CHECKF(!strcmp(a.content, "The LORD\n."), "content '%s'", a.content);
    CHECK(!strcmp(b.reasoning, "hmm") && !strcmp(b.content, "ok"));
    CHECKF(c.reasoning[0] == 0 && !strcmp(c.content, "ok <think>x"), "content %s", c.content);
}

static void test_vocabulary_without_tags_is_all_content(void) {
    tok_tokenizer *tok = NULL;
    const model_family_row *qwen3 = model_family_named("qwen3"); /* the demo's */
    nc_error err;
    const char *json =
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []},"
        " \"pre_tokenizer\": {\"type\": \"ByteLevel\"}, \"decoder\": {\"type\": \"ByteLevel\"},"
        " \"added_tokens\": []}";
    nc_status st = tok_load_from_memory(json, strlen(json), "inline", &tok, &err);
    if (st != NC_OK) SKIP("the tokenizer rejects the minimal inline vocabulary: %s", err.msg);
    gen_think t = {0};
    gen_think_init(&t, tok, qwen3, 1);
    const piece ps[] = {{0, "<think>"}, {1, "b"}};
    out o;
    split(&t, ps, 2, &o);
    tok_free(tok);
    gen_think_free(&t);
    CHECK(t.open_id == -1 && t.close_id == -1);
    CHECK(o.reasoning[0] == '\0' && !strcmp(o.content, "<think>b"));
}

int main(void) {
    RUN(test_reply_with_thinking_splits_at_tags);
    RUN(test_vocabulary_without_tags_is_all_content);
    return nc_test_exit_code();
}
