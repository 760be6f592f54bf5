/* The Qwen3, Qwen3.5, Llama 3 and Gemma 3 chat templates, rendered natively in C
 * (no Jinja engine): the same bytes as transformers' apply_chat_template(...,
 * tokenize=False) with the official templates, for system/user/assistant/
 * tool messages, tool definitions and assistant tool calls (Qwen3 writes a
 * call as JSON, Qwen3.5 as <function=...><parameter=...> XML, Llama 3 as
 * JSON with "parameters", chat_llama3.c; Gemma 3's has none,
 * chat_gemma3.c). */
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
    int preserve_thinking;     /* Qwen3.5: every assistant turn keeps its think block */
} chat_options;

/* HF's defaults: no generation prompt, thinking enabled. */
#define CHAT_OPTIONS_DEFAULT ((chat_options){0, 1, 0})

/* Renders the conversation; *out is malloc'ed and NUL-terminated. opt may be
 * NULL (CHAT_OPTIONS_DEFAULT). Fails on a NULL role or n == 0. */
nc_status chat_render(const chat_message *msgs, size_t n, const chat_options *opt, char **out,
                      nc_error *err);

/* A call the assistant made (OpenAI's tool_calls[].function). */
typedef struct chat_tool_call {
    const char *name;
    const char *arguments; /* JSON text: Qwen3 inserts it as is (the template's string
                            * case); Qwen3.5 needs an object and writes each member;
                            * Llama 3 writes it again through tojson */
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

/* The same with Qwen3.5's template (tools may be NULL): contents trimmed,
 * the generation prompt opens "<think>\n" (thinking) or an empty think
 * block; a misplaced system message, a missing user query or an unknown
 * role is an error, as the template raises, and so are call arguments that
 * are not a JSON object. Its small and large variants differ only when
 * enable_thinking is not passed, which never happens here. */
nc_status chat_render_qwen35(const chat_message *msgs, size_t n, const chat_options *opt,
                             const chat_tools *tools, char **out, nc_error *err);

/* The template (and tool-call format) of a model family. */
typedef enum chat_family {
    CHAT_QWEN3,  /* Qwen3: JSON calls in <tool_call> */
    CHAT_QWEN35, /* Qwen3.5 (and Qwen3.6, the same model type): XML calls */
    CHAT_LLAMA3, /* Llama 3.1/3.2: a JSON call is the whole reply (chat_llama3.c) */
    CHAT_GEMMA3  /* Gemma 3's template, which has no tools (chat_gemma3.c) */
} chat_family;

/* The template a model uses is its family's (models/family.h: an engine's
 * e->family->chat). */

/* The family a template name names ("qwen3", "qwen3.5", "llama3", "gemma3"); -1 if
 * unknown. */
int chat_family_by_name(const char *name);

/* chat_render_tools, chat_render_qwen35, Llama 3's or Gemma 3's template,
 * by family (Gemma 3's refuses tools). */
nc_status chat_render_family(chat_family f, const chat_message *msgs, size_t n,
                             const chat_options *opt, const chat_tools *tools, char **out,
                             nc_error *err);

#endif
