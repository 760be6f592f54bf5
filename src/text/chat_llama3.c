/* The Llama 3.1 / 3.2 chat template (chat.h's CHAT_LLAMA3), transcribed
 * from the Jinja source in those models' tokenizer_config.json, without
 * its tool parts: <|begin_of_text|>, then always a system turn holding the
 * knowledge-cutoff and date lines and the first message when it is a
 * system one (trimmed), then each turn as
 * <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|> with its
 * content trimmed; a tool message is an "ipython" turn whose content is
 * written as JSON (the template's `tojson`, since a string is iterable).
 * The date is the template's fallback "26 Jul 2024": Llama 3.2's template
 * writes today's date where the renderer offers strftime_now, which would
 * make a prompt depend on the day it is rendered. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "text/chat_impl.h"
#include "text/chat_tojson.h"

#define HEADER(b, role)                                                                            \
    (put(b, "<|start_header_id|>"), put(b, role), put(b, "<|end_header_id|>\n\n"))

/* A tool result: its content as the template's tojson writes a string. */
static nc_status put_tool(sbuf *b, const chat_message *m, nc_error *err) {
    json_t *s = json_string(m->content ? m->content : "");
    char *js = NULL;
    nc_status st = s ? chat_tojson(s, &js, err) : nc_fail(err, NC_ERR_NOMEM, "out of memory");
    json_decref(s);
    if (st != NC_OK) return st;
    HEADER(b, "ipython");
    put(b, js);
    put(b, "<|eot_id|>");
    free(js);
    return NC_OK;
}

nc_status chat_render_llama3(sbuf *b, const chat_message *msgs, size_t n, const chat_options *o,
                             const chat_tools *tools, nc_error *err) {
    if (chat_tools_used(tools, n))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "chat template: the Llama 3 template is rendered without tools");
    size_t first = 0;
    view sys = {"", 0};
    if (!strcmp(msgs[0].role, "system")) {
        sys = trim(view_of(msgs[0].content));
        first = 1;
    }
    put(b, "<|begin_of_text|>");
    HEADER(b, "system");
    put(b, "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
    put_view(b, sys);
    put(b, "<|eot_id|>");
    for (size_t i = first; i < n; i++) {
        const chat_message *m = &msgs[i];
        if (!strcmp(m->role, "tool") || !strcmp(m->role, "ipython")) {
            NC_TRY(put_tool(b, m, err));
            continue;
        }
        HEADER(b, m->role);
        put_view(b, trim(view_of(m->content)));
        put(b, "<|eot_id|>");
    }
    if (o->add_generation_prompt) HEADER(b, "assistant");
    return NC_OK;
}
