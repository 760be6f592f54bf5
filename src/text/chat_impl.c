/* The chat renderers' output buffer and string views (chat_impl.h). */
#include "text/chat_impl.h"

#include <stdlib.h>
#include <string.h>

void put_n(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void put(sbuf *b, const char *s) {
    put_n(b, s, strlen(s));
}

view view_of(const char *s) {
    return (view){s ? s : "", s ? strlen(s) : 0};
}

void put_view(sbuf *b, view v) {
    put_n(b, v.s, v.n);
}

static int is_py_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

view trim(view v) {
    while (v.n && is_py_space(v.s[0]))
        v.s++, v.n--;
    while (v.n && is_py_space(v.s[v.n - 1]))
        v.n--;
    return v;
}
