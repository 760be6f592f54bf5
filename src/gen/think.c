/* Reasoning/answer split by token id; see think.h. */
#include "gen/think.h"

void gen_think_init(gen_think *t, const tok_tokenizer *tok, int starts_thinking) {
    t->open_id = tok_find(tok, "<think>");
    t->close_id = tok_find(tok, "</think>");
    t->is_thinking = starts_thinking && t->open_id >= 0;
    t->is_after_close = 0;
}

gen_text_kind gen_think_piece(gen_think *t, int32_t token, const char **text, size_t *len) {
    if (token >= 0 && token == t->open_id) {
        t->is_thinking = 1;
        return GEN_TEXT_NONE;
    }
    if (token >= 0 && token == t->close_id) {
        t->is_thinking = 0;
        t->is_after_close = 1;
        return GEN_TEXT_NONE;
    }
    if (t->is_thinking) return *len ? GEN_TEXT_REASONING : GEN_TEXT_NONE;
    if (t->is_after_close) {
        while (*len && (*text)[0] == '\n')
            ++*text, --*len;
        if (*len) t->is_after_close = 0;
    }
    return *len ? GEN_TEXT_CONTENT : GEN_TEXT_NONE;
}
