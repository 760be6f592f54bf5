/* Reasoning/answer split by token id with one whitespace rule; see think.h. */
#include "gen/think.h"

#include <stdlib.h>
#include <string.h>

enum { THINK_START, THINK_REASONING, THINK_AFTER, THINK_CONTENT };

void gen_think_init(gen_think *t, const tok_tokenizer *tok, const model_family_row *f,
                    int starts_thinking) {
    t->open_id = f && f->think_open ? tok_find(tok, f->think_open) : -1;
    t->close_id = f && f->think_close ? tok_find(tok, f->think_close) : -1;
    t->state = starts_thinking && t->open_id >= 0 ? THINK_REASONING : THINK_START;
    t->has_reasoning = 0;
    t->n_held = 0;
}

void gen_think_free(gen_think *t) {
    free(t->held);
    t->held = NULL;
    t->n_held = t->cap_held = 0;
}

int gen_think_tag(gen_think *t, int32_t token) {
    if (token < 0) return 0;
    if (token == t->open_id && t->state == THINK_START) {
        t->state = THINK_REASONING;
        return 1;
    }
    if (token == t->close_id && t->state == THINK_REASONING) {
        t->state = THINK_AFTER;
        t->n_held = 0; /* the blanks before </think> */
        return 1;
    }
    return 0;
}

int gen_think_closes(const gen_think *t, int32_t token) {
    return token >= 0 && token == t->close_id && t->state == THINK_REASONING;
}

static int is_blank(char c) {
    return c == '\n' || c == ' ' || c == '\r' || c == '\t';
}

static int hold(gen_think *t, const char *p, size_t n) {
    if (t->n_held + n > t->cap_held) {
        size_t cap = t->cap_held ? 2 * t->cap_held : 64;
        while (cap < t->n_held + n)
            cap *= 2;
        char *q = realloc(t->held, cap);
        if (!q) return -1;
        t->held = q;
        t->cap_held = cap;
    }
    memcpy(t->held + t->n_held, p, n);
    t->n_held += n;
    return 0;
}

static int reasoning(gen_think *t, const char *p, size_t n, gen_text_fn emit, void *user) {
    if (!t->has_reasoning)
        while (n && is_blank(*p))
            p++, n--;
    size_t body = n;
    while (body && is_blank(p[body - 1]))
        body--;
    int r = 0;
    if (body) {
        if (t->n_held) r = emit(user, GEN_TEXT_REASONING, t->held, t->n_held);
        t->n_held = 0;
        if (!r) r = emit(user, GEN_TEXT_REASONING, p, body);
        t->has_reasoning = 1;
    }
    if (n > body && t->has_reasoning && hold(t, p + body, n - body)) return -1;
    return r;
}

int gen_think_text(gen_think *t, const char *text, size_t len, gen_text_fn emit, void *user) {
    if (t->state == THINK_REASONING) return reasoning(t, text, len, emit, user);
    if (t->state == THINK_AFTER) {
        while (len && is_blank(*text))
            text++, len--;
        if (!len) return 0;
        t->state = THINK_CONTENT;
    }
    if (!len) return 0;
    t->state = THINK_CONTENT;
    return emit(user, GEN_TEXT_CONTENT, text, len);
}
