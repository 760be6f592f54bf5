/* Tool calls in generated text, in the family's form
 * (text/chat_call_form.h): Qwen3 writes each as "<tool_call>\n{"name":
 * ..., "arguments": {...}}\n</tool_call>", Qwen3.5 as "<tool_call>\n<function=NAME>\n<parameter=KEY>
 * \nVALUE\n</parameter>\n...</function>\n</tool_call>" (values typed by the
 * tool's JSON schema), Llama 3 a whole reply {"name": ..., "parameters":
 * {...}}. The scanner turns a growing output into the text around the calls
 * and the calls themselves, holding back text that could still be the
 * start of a call, so a stream sends each call once, complete, as OpenAI's
 * tool_calls deltas, and never shows the tags. */
#ifndef NC_GEN_TOOL_SCAN_H
#define NC_GEN_TOOL_SCAN_H

#include <jansson.h>
#include <stddef.h>

#include "text/chat.h"

typedef struct gen_tool_scan {
    size_t pos;               /* bytes of the output consumed */
    int n_calls;              /* calls found so far */
    chat_family family;       /* its call form (zeroed: Qwen3's) */
    const char *const *tools; /* Qwen3.5: the request's tool definitions (JSON text), */
    size_t n_tools;           /* whose parameter types type the values */
} gen_tool_scan;

/* What one look at the output gives: text[0..text_len) to pass on (a view
 * into the output), then calls, an array of {"id", "type": "function",
 * "function": {"name", "arguments": JSON text}} (new reference, possibly
 * empty; NULL only when out of memory). */
typedef struct gen_tool_news {
    const char *text;
    size_t text_len;
    json_t *calls;
} gen_tool_news;

/* Scans out[0..len) past st->pos. is_final: the output is complete, so
 * nothing is held back (an unfinished or malformed call is passed on as
 * text). The text may stop before a call; call again until it reports
 * nothing new. Returns 1 when it reported something. */
int gen_tool_scan_next(gen_tool_scan *st, const char *out, size_t len, int is_final,
                       gen_tool_news *news);

#endif
