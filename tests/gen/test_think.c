/* The reasoning/answer split on the pieces a Qwen3 reply streams as, with
 * the demo tokenizer's <think> and </think> ids: tags vanish, thinking is
 * reasoning, the newlines after </think> are dropped, and a vocabulary
 * without the tags leaves everything as content. */
#include "../test.h"
#include "gen/think.h"

typedef struct piece {
    int32_t token; /* -2: the <think> id, -3: the </think> id */
    const char *text;
} piece;

static void split(gen_think *t, const piece *ps, int n, char *reasoning, char *content) {
    reasoning[0] = content[0] = '\0';
    for (int i = 0; i < n; i++) {
        int32_t id = ps[i].token == -2 ? t->open_id : ps[i].token == -3 ? t->close_id : ps[i].token;
        const char *text = ps[i].text;
        size_t len = strlen(text);
        gen_text_kind k = gen_think_piece(t, id, &text, &len);
        if (k == GEN_TEXT_REASONING) strncat(reasoning, text, len);
        if (k == GEN_TEXT_CONTENT) strncat(content, text, len);
    }
}

static void test_reply_with_thinking_splits_at_tags(void) {
    tok_tokenizer *tok = NULL;
    nc_error err;
    CHECK_OK(tok_load("models/demo/tokenizer.json", &tok, &err), &err);
    gen_think t;
    gen_think_init(&t, tok, 0);
    int ok_ids = t.open_id == tok_find(tok, "<think>") && t.open_id >= 0 && t.close_id >= 0;
    const piece reply[] = {{-2, "<think>"}, {10, "\n"},       {11, "Let me"}, {12, " think."},
                           {13, "\n"},      {-3, "</think>"}, {14, "\n\n"},   {15, "\nThe"},
                           {16, " LORD"},   {17, "\n"},       {-1, "."}};
    char reasoning[256], content[256];
    split(&t, reply, (int)(sizeof reply / sizeof reply[0]), reasoning, content);
    /* starts_thinking: no opening tag in the reply */
    gen_think t2;
    gen_think_init(&t2, tok, 1);
    const piece opened[] = {{11, "hmm"}, {-3, "</think>"}, {16, "ok"}};
    char r2[64], c2[64];
    split(&t2, opened, 3, r2, c2);
    tok_free(tok);
    CHECK(ok_ids);
    CHECKF(!strcmp(reasoning, "\nLet me think.\n"), "reasoning '%s'", reasoning);
    CHECKF(!strcmp(content, "The LORD\n."), "content '%s'", content);
    CHECK(!strcmp(r2, "hmm") && !strcmp(c2, "ok"));
}

static void test_vocabulary_without_tags_is_all_content(void) {
    tok_tokenizer *tok = NULL;
    nc_error err;
    const char *json =
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []},"
        " \"pre_tokenizer\": {\"type\": \"ByteLevel\"}, \"decoder\": {\"type\": \"ByteLevel\"},"
        " \"added_tokens\": []}";
    nc_status st = tok_load_from_memory(json, strlen(json), "inline", &tok, &err);
    if (st != NC_OK) SKIP("the tokenizer rejects the minimal inline vocabulary: %s", err.msg);
    gen_think t;
    gen_think_init(&t, tok, 1);
    const piece ps[] = {{0, "<think>"}, {1, "b"}};
    char r[64], c[64];
    split(&t, ps, 2, r, c);
    tok_free(tok);
    CHECK(t.open_id == -1 && t.close_id == -1);
    CHECK(r[0] == '\0' && !strcmp(c, "<think>b"));
}

int main(void) {
    RUN(test_reply_with_thinking_splits_at_tags);
    RUN(test_vocabulary_without_tags_is_all_content);
    return nc_test_exit_code();
}
