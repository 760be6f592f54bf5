/* The tool-call format of each chat family, one row each, beside its
 * template (the template writes calls in history that way, the model
 * answers the same way), read by the scanner that finds calls in
 * generated text (gen/tool_scan.c) and by the constraint that forces one
 * (gen/out_constraint.c):
 *   Qwen3    <tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>
 *   Qwen3.5  <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n
 *            </parameter>\n...</function>\n</tool_call>
 *   Llama 3  {"name": NAME, "parameters": {...}}, the whole reply, no tags
 *            (after <|python_tag|> when the model writes one)
 * Gemma 3's template has no tools; it gets Qwen3's row. */
#ifndef NC_TEXT_CHAT_CALL_FORM_H
#define NC_TEXT_CHAT_CALL_FORM_H

#include "text/chat.h"

typedef enum chat_call_body {
    CHAT_CALL_JSON, /* a JSON object: a string "name" and the arguments */
    CHAT_CALL_XML   /* Qwen3.5's <function=NAME> with <parameter=KEY> elements */
} chat_call_body;

typedef struct chat_call_form {
    /* The tags around each call; both "": no tags, the whole reply is one
     * call or none, after blanks and an optional `lead` token's text. */
    const char *open, *close, *lead;
    chat_call_body body;
    /* CHAT_CALL_JSON: the members that may hold the arguments, the one the
     * template writes first (NULL: unused) */
    const char *args_keys[2];
    /* A forced call: head NAME mid PARAMETERS tail, NAME as a JSON string
     * in a JSON body, as is in an XML one. */
    const char *head, *mid, *tail;
} chat_call_form;

const chat_call_form *chat_call_form_of(chat_family f);

#endif
