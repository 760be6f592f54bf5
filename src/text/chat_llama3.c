/* The Llama 3.1 / 3.2 chat template (chat.h's CHAT_LLAMA3), transcribed
 * from the Jinja source in those models' tokenizer_config.json, with its
 * JSON tool calling as the template does it by default (tools in the
 * first user message): <|begin_of_text|>, then always a system turn
 * ("Environment: ipython" first when there are tools, the
 * knowledge-cutoff and date lines, then the first message when it is a
 * system one, trimmed); with tools, the next message (whatever its role)
 * becomes a user turn that lists the definitions (each as
 * tojson(indent=4)) before its trimmed content; then each turn as
 * <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|> with its
 * content trimmed. An assistant turn with a call is the call alone, as
 * {"name": "NAME", "parameters": ARGS} (ARGS: the arguments through
 * tojson; the template takes one call per message and raises otherwise);
 * a tool message is an "ipython" turn whose content is written as JSON
 * (the template's `tojson`, since a string is iterable).
 * Not rendered: the template's built-in tools (`builtin_tools`, the
 * <|python_tag|> calls), `custom_tools` and `tools_in_user_message=false`
 * (the definitions in the system turn instead): no caller can pass those
 * variables. The date is the template's fallback "26 Jul 2024": Llama
 * 3.2's template writes today's date where the renderer offers
 * strftime_now, which would make a prompt depend on the day it is
 * rendered. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "text/chat_impl.h"
#include "text/chat_tojson.h"

#define HEADER(b, role)                                                                            \
    (put(b, "<|start_header_id|>"), put(b, role), put(b, "<|end_header_id|>\n\n"))

/* The template's words before the definitions (its two 'Respond in the
 * format' strings meet without a space). */
#define TOOLS_INTRO                                                                                \
    "Given the following functions, please respond with a JSON for a function call with its "      \
    "proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": "    \
    "function name, \"parameters\": dictionary of argument name and its value}.Do not use "        \
    "variables.\n\n"

/* v through tojson (indent < 0: one line), appended. */
static nc_status put_json(sbuf *b, const json_t *v, int indent, nc_error *err) {
    char *js = NULL;
    nc_status st = indent < 0 ? chat_tojson(v, &js, err) : chat_tojson_indent(v, indent, &js, err);
    if (st != NC_OK) return st;
    put(b, js);
    free(js);
    return NC_OK;
}

/* A tool result: its content as the template's tojson writes a string. */
static nc_status put_tool(sbuf *b, const chat_message *m, nc_error *err) {
    json_t *s = json_string(m->content ? m->content : "");
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    HEADER(b, "ipython");
    nc_status st = put_json(b, s, -1, err);
    json_decref(s);
    put(b, "<|eot_id|>");
    return st;
}

/* The user turn that carries the definitions and message m's content. */
static nc_status put_tools_turn(sbuf *b, const chat_message *m, const chat_tools *t,
                                nc_error *err) {
    HEADER(b, "user");
    put(b, TOOLS_INTRO);
    for (size_t i = 0; i < t->n_defs; i++) {
        json_error_t je;
        json_t *def = json_loads(t->defs[i], JSON_DECODE_ANY, &je);
        if (!def)
            return nc_fail(err, NC_ERR_INVALID,
                           "chat template: tool definition %zu is not JSON: %s", i, je.text);
        nc_status st = put_json(b, def, 4, err);
        json_decref(def);
        if (st != NC_OK) return st;
        put(b, "\n\n");
    }
    put_view(b, trim(view_of(m->content)));
    put(b, "<|eot_id|>");
    return NC_OK;
}

/* Message i, an assistant's call: the call alone, its arguments (JSON
 * text, as an OpenAI client sends them) through tojson, so the prompt is
 * apply_chat_template's for the arguments as an object. */
static nc_status put_call(sbuf *b, const chat_tool_call *calls, size_t n_calls, size_t i,
                          nc_error *err) {
    if (n_calls != 1)
        return nc_fail(err, NC_ERR_INVALID,
                       "chat template: message %zu has %zu tool calls; the Llama 3 template takes "
                       "one call per message",
                       i, n_calls);
    const char *name = view_of(calls[0].name).s;
    json_error_t je;
    json_t *args = json_loads(calls[0].arguments ? calls[0].arguments : "{}", JSON_DECODE_ANY, &je);
    if (!args)
        return nc_fail(err, NC_ERR_INVALID,
                       "chat template: the arguments of tool call '%s' in message %zu are not "
                       "JSON: %s",
                       name, i, je.text);
    HEADER(b, "assistant");
    put(b, "{\"name\": \"");
    put(b, name);
    put(b, "\", \"parameters\": ");
    nc_status st = put_json(b, args, -1, err);
    json_decref(args);
    put(b, "}<|eot_id|>");
    return st;
}

nc_status chat_render_llama3(sbuf *b, const chat_message *msgs, size_t n, const chat_options *o,
                             const chat_tools *tools, nc_error *err) {
    int has_tools = tools && tools->n_defs > 0;
    size_t first = 0;
    view sys = {"", 0};
    if (!strcmp(msgs[0].role, "system")) {
        sys = trim(view_of(msgs[0].content));
        first = 1;
    }
    put(b, "<|begin_of_text|>");
    HEADER(b, "system");
    if (has_tools) put(b, "Environment: ipython\n");
    put(b, "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
    put_view(b, sys);
    put(b, "<|eot_id|>");
    if (has_tools) {
        if (first == n)
            return nc_fail(err, NC_ERR_INVALID,
                           "chat template: the Llama 3 template puts the tools in the first user "
                           "message, and there is none");
        NC_TRY(put_tools_turn(b, &msgs[first++], tools, err));
    }
    for (size_t i = first; i < n; i++) {
        const chat_message *m = &msgs[i];
        size_t n_calls = tools && tools->calls ? tools->n_calls[i] : 0;
        if (n_calls) {
            NC_TRY(put_call(b, tools->calls[i], n_calls, i, err));
        } else if (!strcmp(m->role, "tool") || !strcmp(m->role, "ipython")) {
            NC_TRY(put_tool(b, m, err));
        } else {
            HEADER(b, m->role);
            put_view(b, trim(view_of(m->content)));
            put(b, "<|eot_id|>");
        }
    }
    if (o->add_generation_prompt) HEADER(b, "assistant");
    return NC_OK;
}
