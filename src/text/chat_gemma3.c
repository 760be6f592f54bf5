/* Gemma 3's chat template (chat.h's CHAT_GEMMA3), transcribed from the
 * Jinja source in google/gemma-3-4b-it's tokenizer_config.json (the 270M
 * and 1B instruction models carry the same): <bos>, then each turn as
 * <start_of_turn>ROLE\nCONTENT<end_of_turn>\n with the assistant's role
 * written "model" and its content trimmed; a first system message is no
 * turn of its own: its content, untrimmed, plus "\n\n" opens the first
 * turn. Turns must alternate, the user's at even places (the template
 * raises otherwise; another role at an odd place passes and is written
 * with its own name). The template has no tools. */
#include <string.h>

#include "text/chat_impl.h"

nc_status chat_render_gemma3(sbuf *b, const chat_message *msgs, size_t n, const chat_options *o,
                             const chat_tools *tools, nc_error *err) {
    if (chat_tools_used(tools, n))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "chat template: Gemma 3's template has no tools");
    size_t first = 0;
    view prefix = {"", 0};
    if (!strcmp(msgs[0].role, "system")) {
        prefix = view_of(msgs[0].content);
        first = 1;
    }
    for (size_t i = first; i < n; i++)
        if (!strcmp(msgs[i].role, "user") != ((i - first) % 2 == 0))
            return nc_fail(err, NC_ERR_INVALID,
                           "chat template: message %zu: Gemma 3's conversation roles must "
                           "alternate user/assistant/user/assistant/...",
                           i);
    put(b, "<bos>");
    for (size_t i = first; i < n; i++) {
        const chat_message *m = &msgs[i];
        put(b, "<start_of_turn>");
        put(b, strcmp(m->role, "assistant") ? m->role : "model");
        put(b, "\n");
        if (i == first && first == 1) {
            put_view(b, prefix);
            put(b, "\n\n");
        }
        put_view(b, trim(view_of(m->content)));
        put(b, "<end_of_turn>\n");
    }
    if (o->add_generation_prompt) put(b, "<start_of_turn>model\n");
    return NC_OK;
}
