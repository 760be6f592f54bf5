/* The Qwen3 and Qwen3.5 chat templates, rendered natively in C (no Jinja
 * engine): the same bytes as transformers' apply_chat_template(...,
 * tokenize=False) with the official templates, for system/user/assistant/
 * tool messages; for Qwen3 also (chat_render_tools) tool definitions and
 * assistant tool calls. */
#ifndef NC_TEXT_CHAT_H
#define NC_TEXT_CHAT_H

#include <stddef.h>

#include "base/error.h"

typedef struct chat_message {
    const char
        *role; /* "system", "user", "assistant" or "tool"; others are dropped as Jinja does */
    const char *content;           /* NULL counts as "" */
    const char *reasoning_content; /* may be NULL (then <think>...</think> is taken from content) */
} chat_message;

typedef struct chat_options {
    int add_generation_prompt; /* append "<|im_start|>assistant\n" */
    int enable_thinking;       /* default 1; 0 appends the empty think block after the prompt */
} chat_options;

/* HF's defaults: no generation prompt, thinking enabled. */
#define CHAT_OPTIONS_DEFAULT ((chat_options){0, 1})

/* Renders the conversation; *out is malloc'ed and NUL-terminated. opt may be
 * NULL (CHAT_OPTIONS_DEFAULT). Fails on a NULL role or n == 0. */
nc_status chat_render(const chat_message *msgs, size_t n, const chat_options *opt, char **out,
                      nc_error *err);

/* A call the assistant made (OpenAI's tool_calls[].function). */
typedef struct chat_tool_call {
    const char *name;
    const char *arguments; /* JSON text, inserted as is (the template's string case) */
} chat_tool_call;

/* The template's tool parts, beside the messages: definitions (each as
 * tojson text, chat_tojson.h) and, per message index, the calls an
 * assistant message carries (calls[i] may be NULL when n_calls[i] == 0). */
typedef struct chat_tools {
    const char *const *defs;
    size_t n_defs;
    const chat_tool_call *const *calls; /* NULL: no message has calls */
    const size_t *n_calls;
} chat_tools;

/* chat_render with tools (NULL: none, the same as chat_render). */
nc_status chat_render_tools(const chat_message *msgs, size_t n, const chat_options *opt,
                            const chat_tools *tools, char **out, nc_error *err);

/* The same with Qwen3.5's template: contents trimmed, the generation prompt
 * opens "<think>\n" (thinking) or an empty think block; a misplaced system
 * message, a missing user query or an unknown role is an error, as the
 * template raises. Its small and large variants differ only when
 * enable_thinking is not passed, which never happens here. */
nc_status chat_render_qwen35(const chat_message *msgs, size_t n, const chat_options *opt,
                             char **out, nc_error *err);

#endif
