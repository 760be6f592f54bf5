/* The Qwen3 chat template (see chat.h), transcribed from the Jinja source
 * in Qwen3's tokenizer_config.json. The one non-obvious rule: reasoning
 * ("<think>...</think>") of an assistant turn is rendered only for turns
 * after the last real user query, and the final assistant turn always gets
 * a think block (possibly empty). Qwen3.5 (render_qwen35) trims contents
 * and always shows the reasoning of turns after the last query. */
#include "text/chat.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "text/chat_impl.h"
#include "text/chat_tojson.h"

static int starts_with(view v, const char *p) {
    size_t n = strlen(p);
    return v.n >= n && !memcmp(v.s, p, n);
}

static int ends_with(view v, const char *p) {
    size_t n = strlen(p);
    return v.n >= n && !memcmp(v.s + v.n - n, p, n);
}

/* Offset of the first (or last) occurrence of p in v, or -1. */
static long find(view v, const char *p, int last) {
    size_t n = strlen(p);
    long at = -1;
    for (size_t i = 0; i + n <= v.n; i++) {
        if (memcmp(v.s + i, p, n) != 0) continue;
        at = (long)i;
        if (!last) break;
    }
    return at;
}

static view lstrip_nl(view v) {
    while (v.n && v.s[0] == '\n')
        v.s++, v.n--;
    return v;
}

static view rstrip_nl(view v) {
    while (v.n && v.s[v.n - 1] == '\n')
        v.n--;
    return v;
}

static int is_role(const chat_message *m, const char *role) {
    return !strcmp(m->role, role);
}

/* Index of the last user message that is a real query (not a wrapped tool
 * response); the template's ns.last_query_index. */
static size_t last_query_index(const chat_message *msgs, size_t n) {
    for (size_t i = n; i-- > 0;) {
        view c = view_of(msgs[i].content);
        if (is_role(&msgs[i], "user") &&
            !(starts_with(c, "<tool_response>") && ends_with(c, "</tool_response>")))
            return i;
    }
    return n - 1;
}

/* An assistant turn's reasoning: its reasoning_content, else what the
 * content holds before "</think>" (both templates):
 * content.split('</think>')[-1].lstrip('\n') and the reasoning as
 * content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
static void split_reasoning(const chat_message *m, view *content, view *reasoning) {
    *reasoning = (view){"", 0};
    if (m->reasoning_content) {
        *reasoning = view_of(m->reasoning_content);
    } else if (find(*content, "</think>", 0) >= 0) {
        long first = find(*content, "</think>", 0), last = find(*content, "</think>", 1);
        view before = rstrip_nl((view){content->s, (size_t)first});
        long open = find(before, "<think>", 1);
        if (open >= 0) before = (view){before.s + open + 7, before.n - (size_t)open - 7};
        *reasoning = lstrip_nl(before);
        *content = lstrip_nl((view){content->s + last + 8, content->n - (size_t)last - 8});
    }
}

static void render_assistant(sbuf *b, const chat_message *m, size_t i, size_t n, size_t last_query,
                             const chat_tools *t) {
    view content = view_of(m->content), reasoning;
    split_reasoning(m, &content, &reasoning);
    put(b, "<|im_start|>assistant\n");
    if (i > last_query && (i == n - 1 || reasoning.n > 0)) {
        reasoning = rstrip_nl(lstrip_nl(reasoning));
        put(b, "<think>\n");
        put_n(b, reasoning.s, reasoning.n);
        put(b, "\n</think>\n\n");
        content = lstrip_nl(content);
    }
    put_n(b, content.s, content.n);
    size_t n_calls = t && t->calls ? t->n_calls[i] : 0;
    for (size_t k = 0; k < n_calls; k++) {
        const chat_tool_call *c = &t->calls[i][k];
        if (k > 0 || content.n > 0) put(b, "\n");
        put(b, "<tool_call>\n{\"name\": \"");
        put(b, view_of(c->name).s);
        put(b, "\", \"arguments\": ");
        put(b, view_of(c->arguments).s);
        put(b, "}\n</tool_call>");
    }
    put(b, "<|im_end|>\n");
}

/* The tool definitions, one tojson text a line, in <tools> (both templates). */
static void put_defs(sbuf *b, const chat_tools *t) {
    put(b, "<tools>");
    for (size_t i = 0; i < t->n_defs; i++) {
        put(b, "\n");
        put(b, t->defs[i]);
    }
    put(b, "\n</tools>");
}

/* The template's tools preamble: one system turn holding the first system
 * message (if any), the tool signatures and the calling convention. */
static void render_tools(sbuf *b, const chat_message *msgs, const chat_tools *t) {
    put(b, "<|im_start|>system\n");
    if (is_role(&msgs[0], "system")) {
        put(b, view_of(msgs[0].content).s);
        put(b, "\n\n");
    }
    put(b, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou "
           "are provided with function signatures within <tools></tools> XML tags:\n");
    put_defs(b, t);
    put(b, "\n\nFor each function call, return a json object with function name and "
           "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
           "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n");
}

/* ---- Qwen3.5 ------------------------------------------------------------ */

/* ns.last_query_index over trimmed contents, or n when there is none. */
static size_t last_query_trimmed(const chat_message *msgs, size_t n) {
    for (size_t i = n; i-- > 0;) {
        view c = trim(view_of(msgs[i].content));
        if (is_role(&msgs[i], "user") &&
            !(starts_with(c, "<tool_response>") && ends_with(c, "</tool_response>")))
            return i;
    }
    return n;
}

/* One call's arguments as the template writes them: each key of the
 * arguments object as "<parameter=KEY>\nVALUE\n</parameter>\n", a string
 * value as is, any other value as tojson (chat_tojson.h). The template
 * iterates `arguments|items`, which only a JSON object has. */
static nc_status put_parameters35(sbuf *b, const chat_tool_call *c, size_t i, nc_error *err) {
    json_error_t je;
    json_t *args = json_loads(c->arguments ? c->arguments : "{}", JSON_DECODE_ANY, &je);
    if (!json_is_object(args)) {
        json_decref(args);
        return nc_fail(err, NC_ERR_INVALID,
                       "chat template: the arguments of tool call '%s' in message %zu are not a "
                       "JSON object",
                       view_of(c->name).s, i);
    }
    const char *key;
    json_t *v;
    nc_status st = NC_OK;
    json_object_foreach(args, key, v) {
        put(b, "<parameter=");
        put(b, key);
        put(b, ">\n");
        if (json_is_string(v)) {
            put_n(b, json_string_value(v), json_string_length(v));
        } else {
            char *t = NULL;
            st = chat_tojson(v, &t, err);
            if (st != NC_OK) break;
            put(b, t);
            free(t);
        }
        put(b, "\n</parameter>\n");
    }
    json_decref(args);
    return st;
}

static nc_status render_assistant35(sbuf *b, const chat_message *m, size_t i, size_t last_query,
                                    const chat_options *o, const chat_tools *t, nc_error *err) {
    view content = trim(view_of(m->content)), reasoning;
    split_reasoning(m, &content, &reasoning);
    put(b, "<|im_start|>assistant\n");
    /* every turn after the query shows its (maybe empty) reasoning, and
     * with preserve_thinking every turn does */
    if (o->preserve_thinking || i > last_query) {
        put(b, "<think>\n");
        put_view(b, trim(reasoning));
        put(b, "\n</think>\n\n");
    }
    put_view(b, content);
    size_t n_calls = t && t->calls ? t->n_calls[i] : 0;
    for (size_t k = 0; k < n_calls; k++) {
        const chat_tool_call *c = &t->calls[i][k];
        /* content is trimmed at its end, so trim(content) is empty only
         * when content is */
        put(b, k > 0       ? "\n<tool_call>\n<function="
               : content.n ? "\n\n<tool_call>\n<function="
                           : "<tool_call>\n<function=");
        put(b, view_of(c->name).s);
        put(b, ">\n");
        NC_TRY(put_parameters35(b, c, i, err));
        put(b, "</function>\n</tool_call>");
    }
    put(b, "<|im_end|>\n");
    return NC_OK;
}

/* The tools preamble of Qwen3.5's template: definitions, the XML calling
 * convention, then the first system message (trimmed) if it has text. */
static void render_tools35(sbuf *b, const chat_message *msgs, const chat_tools *t) {
    put(b, "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n");
    put_defs(b, t);
    put(b, "\n\nIf you choose to call a function ONLY reply in the following format "
           "with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n"
           "<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
           "<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
           "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n"
           "<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an "
           "inner <function=...></function> block must be nested within "
           "<tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You "
           "may provide optional reasoning for your function call in natural language BEFORE "
           "the function call, but NOT after\n- If there is no function call available, "
           "answer the question like normal with your current knowledge and do not tell the "
           "user about function calls\n</IMPORTANT>");
    view sys = is_role(&msgs[0], "system") ? trim(view_of(msgs[0].content)) : (view){"", 0};
    if (sys.n) {
        put(b, "\n\n");
        put_view(b, sys);
    }
    put(b, "<|im_end|>\n");
}

static nc_status render_qwen35(sbuf *b, const chat_message *msgs, size_t n, const chat_options *o,
                               const chat_tools *tools, nc_error *err) {
    size_t last_query = last_query_trimmed(msgs, n);
    if (last_query == n)
        return nc_fail(err, NC_ERR_INVALID, "chat template: no user query found in messages");
    int has_tools = tools && tools->n_defs > 0;
    if (has_tools) render_tools35(b, msgs, tools);
    for (size_t i = 0; i < n; i++) {
        const chat_message *m = &msgs[i];
        view content = trim(view_of(m->content));
        if (is_role(m, "system")) {
            if (i > 0)
                return nc_fail(err, NC_ERR_INVALID,
                               "chat template: a system message must be at the beginning "
                               "(message %zu)",
                               i);
            if (i == 0 && !has_tools) {
                put(b, "<|im_start|>system\n");
                put_view(b, content);
                put(b, "<|im_end|>\n");
            }
        } else if (is_role(m, "user")) {
            put(b, "<|im_start|>user\n");
            put_view(b, content);
            put(b, "<|im_end|>\n");
        } else if (is_role(m, "assistant")) {
            NC_TRY(render_assistant35(b, m, i, last_query, o, tools, err));
        } else if (is_role(m, "tool")) {
            /* consecutive tool results share one user turn (loop.previtem:
             * none before the first message) */
            if (i > 0 && !is_role(&msgs[i - 1], "tool")) put(b, "<|im_start|>user");
            put(b, "\n<tool_response>\n");
            put_view(b, content);
            put(b, "\n</tool_response>");
            if (i == n - 1 || !is_role(&msgs[i + 1], "tool")) put(b, "<|im_end|>\n");
        } else {
            return nc_fail(err, NC_ERR_INVALID, "chat template: message %zu has role '%s'", i,
                           m->role);
        }
    }
    if (o->add_generation_prompt)
        put(b, o->enable_thinking ? "<|im_start|>assistant\n<think>\n"
                                  : "<|im_start|>assistant\n<think>\n\n</think>\n\n");
    return NC_OK;
}

/* The Qwen3 template. */
static nc_status render_qwen3(sbuf *b, const chat_message *msgs, size_t n, const chat_options *o,
                              const chat_tools *tools) {
    if (tools && tools->n_defs > 0) {
        render_tools(b, msgs, tools);
    } else if (is_role(&msgs[0], "system")) {
        put(b, "<|im_start|>system\n");
        put(b, view_of(msgs[0].content).s);
        put(b, "<|im_end|>\n");
    }
    size_t last_query = last_query_index(msgs, n);
    for (size_t i = 0; i < n; i++) {
        const chat_message *m = &msgs[i];
        if (is_role(m, "user") || (is_role(m, "system") && i > 0)) {
            put(b, "<|im_start|>");
            put(b, m->role);
            put(b, "\n");
            put(b, view_of(m->content).s);
            put(b, "<|im_end|>\n");
        } else if (is_role(m, "assistant")) {
            render_assistant(b, m, i, n, last_query, tools);
        } else if (is_role(m, "tool")) {
            /* Consecutive tool results share one user turn. */
            if (i == 0 || !is_role(&msgs[i - 1], "tool")) put(b, "<|im_start|>user");
            put(b, "\n<tool_response>\n");
            put(b, view_of(m->content).s);
            put(b, "\n</tool_response>");
            if (i == n - 1 || !is_role(&msgs[i + 1], "tool")) put(b, "<|im_end|>\n");
        }
    }
    if (o->add_generation_prompt) {
        put(b, "<|im_start|>assistant\n");
        if (!o->enable_thinking) put(b, "<think>\n\n</think>\n\n");
    }
    return NC_OK;
}

int chat_tools_used(const chat_tools *tools, size_t n) {
    if (!tools) return 0;
    if (tools->n_defs > 0) return 1;
    for (size_t i = 0; tools->calls && i < n; i++)
        if (tools->n_calls[i] > 0) return 1;
    return 0;
}

static nc_status render(const chat_message *msgs, size_t n, const chat_options *opt,
                        chat_family f, const chat_tools *tools, char **out, nc_error *err) {
    *out = NULL;
    chat_options o = opt ? *opt : CHAT_OPTIONS_DEFAULT;
    if (n == 0) return nc_fail(err, NC_ERR_INVALID, "chat template: no messages");
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role)
            return nc_fail(err, NC_ERR_INVALID, "chat template: message %zu has no role", i);
    sbuf b = {0};
    nc_status st = f == CHAT_QWEN35   ? render_qwen35(&b, msgs, n, &o, tools, err)
                   : f == CHAT_LLAMA3 ? chat_render_llama3(&b, msgs, n, &o, tools, err)
                   : f == CHAT_GEMMA3 ? chat_render_gemma3(&b, msgs, n, &o, tools, err)
                                      : render_qwen3(&b, msgs, n, &o, tools);
    put(&b, ""); /* so an empty result is still an allocated "" */
    if (st == NC_OK && b.oom) st = nc_fail(err, NC_ERR_NOMEM, "chat template: out of memory");
    if (st != NC_OK) {
        free(b.p);
        return st;
    }
    *out = b.p;
    return NC_OK;
}

nc_status chat_render(const chat_message *msgs, size_t n, const chat_options *opt, char **out,
                      nc_error *err) {
    return render(msgs, n, opt, CHAT_QWEN3, NULL, out, err);
}

nc_status chat_render_tools(const chat_message *msgs, size_t n, const chat_options *opt,
                            const chat_tools *tools, char **out, nc_error *err) {
    return render(msgs, n, opt, CHAT_QWEN3, tools, out, err);
}

nc_status chat_render_qwen35(const chat_message *msgs, size_t n, const chat_options *opt,
                             const chat_tools *tools, char **out, nc_error *err) {
    return render(msgs, n, opt, CHAT_QWEN35, tools, out, err);
}

int chat_family_by_name(const char *name) {
    if (!strcmp(name, "qwen3")) return CHAT_QWEN3;
    if (!strcmp(name, "qwen3.5")) return CHAT_QWEN35;
    if (!strcmp(name, "llama3")) return CHAT_LLAMA3;
    if (!strcmp(name, "gemma3")) return CHAT_GEMMA3;
    return -1;
}

nc_status chat_render_family(chat_family f, const chat_message *msgs, size_t n,
                             const chat_options *opt, const chat_tools *tools, char **out,
                             nc_error *err) {
    return render(msgs, n, opt, f, tools, out, err);
}
