/* Fuzz target: the chat-template renderers (src/text/chat.c) with
 * arbitrary conversations. Input: one options byte (bit 0 add the
 * generation prompt, bit 1 disable thinking, bit 2 leave out reasoning
 * fields, bit 3 Qwen3.5's template with a tool and each assistant message's
 * reasoning field as the arguments of one call, bit 4 preserve_thinking,
 * bit 5 (without bit 3) Llama 3's template with the same tool and calls),
 * then messages separated by 0x1E, each "role 0x1F content [0x1F
 * reasoning]". Rendering must not crash, and with Qwen3's template a user
 * message's content must appear verbatim in the output (the template
 * copies it unchanged; Qwen3.5's trims it). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/chat.h"

#define MAX_MSGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    chat_options opt = {data[0] & 1, !(data[0] & 2), (data[0] & 16) != 0};
    int is_qwen35 = data[0] & 8, is_llama3 = data[0] & 32;
    int no_reasoning = data[0] & 4;
    char *buf = malloc(size); /* the messages, NUL-terminated in place */
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    chat_message msgs[MAX_MSGS] = {{0}};
    size_t n = 0;
    char *p = buf, *end = buf + size - 1;
    while (p <= end && n < MAX_MSGS) {
        char *rec_end = memchr(p, 0x1E, (size_t)(end - p));
        if (!rec_end) rec_end = end;
        *rec_end = '\0';
        chat_message *m = &msgs[n++];
        m->role = p;
        m->content = NULL;
        m->reasoning_content = NULL;
        char *f = strchr(p, 0x1F);
        if (f) {
            *f++ = '\0';
            m->content = f;
            char *g = strchr(f, 0x1F);
            if (g) {
                *g++ = '\0';
                if (!no_reasoning) m->reasoning_content = g;
            }
        }
        p = rec_end + 1;
    }
    char *out;
    nc_error err;
    static const char *const defs[] = {"{\"type\": \"function\", \"function\": {\"name\": \"f\"}}"};
    chat_tool_call calls[MAX_MSGS];
    const chat_tool_call *call_of[MAX_MSGS];
    size_t n_calls[MAX_MSGS];
    for (size_t i = 0; i < n; i++) {
        calls[i] = (chat_tool_call){"f", msgs[i].reasoning_content};
        call_of[i] = &calls[i];
        n_calls[i] = !strcmp(msgs[i].role, "assistant") && msgs[i].reasoning_content;
    }
    chat_tools tools = {defs, 1, call_of, n_calls};
    if (is_qwen35 || is_llama3) {
        chat_family f = is_qwen35 ? CHAT_QWEN35 : CHAT_LLAMA3;
        if (chat_render_family(f, msgs, n, &opt, &tools, &out, &err) == NC_OK) free(out);
    } else if (chat_render(msgs, n, &opt, &out, &err) == NC_OK) {
        for (size_t i = 0; i < n; i++)
            if (!strcmp(msgs[i].role, "user") && msgs[i].content && !strstr(out, msgs[i].content))
                abort(); /* a user turn's text went missing or was altered */
        free(out);
    }
    free(buf);
    return 0;
}
