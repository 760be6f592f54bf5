/* Inside the chat templates: what the renderers (chat.c, chat_llama3.c, chat_gemma3.c)
 * write with (a growing output buffer that remembers running out of
 * memory, checked once at the end; views of parts of strings for the
 * Python str methods the templates use) and the renderers chat.c
 * dispatches to by family. */
#ifndef NC_TEXT_CHAT_IMPL_H
#define NC_TEXT_CHAT_IMPL_H

#include <stddef.h>

#include "text/chat.h"

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

void put_n(sbuf *b, const char *s, size_t n);
void put(sbuf *b, const char *s);

/* A view of part of a string. */
typedef struct view {
    const char *s;
    size_t n;
} view;

view view_of(const char *s); /* NULL: "" */
void put_view(sbuf *b, view v);
/* Jinja's trim (Python's str.strip(): ASCII whitespace and the separators
 * 0x1c-0x1f). */
view trim(view v);

/* The conversation of n messages defines tools or holds calls (a server
 * passes a calls array with every count 0 when none has any). */
int chat_tools_used(const chat_tools *tools, size_t n);

/* Llama 3's template (chat_llama3.c); msgs[0..n) have roles, n > 0. */
nc_status chat_render_llama3(sbuf *b, const chat_message *msgs, size_t n, const chat_options *o,
                             const chat_tools *tools, nc_error *err);
/* Gemma 3's template (chat_gemma3.c); the same contract. */
nc_status chat_render_gemma3(sbuf *b, const chat_message *msgs, size_t n, const chat_options *o,
                             const chat_tools *tools, nc_error *err);

#endif
