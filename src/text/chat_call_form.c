/* The tool-call formats by chat family (call_form.h). */
#include "text/chat_call_form.h"

static const chat_call_form qwen3 = {
    "<tool_call>",       "</tool_call>",      NULL,
    CHAT_CALL_JSON,      {"arguments", NULL}, "<tool_call>\n{\"name\": ",
    ", \"arguments\": ", "}\n</tool_call>"};

/* the forced call ends the XML parameters (json_match.h: xml_root writes
 * "</function>") before the tail */
static const chat_call_form qwen35 = {"<tool_call>", "</tool_call>",  NULL,
                                      CHAT_CALL_XML, {NULL, NULL},    "<tool_call>\n<function=",
                                      ">\n",         "\n</tool_call>"};

/* Llama 3.1's template asks for "parameters"; models also write
 * "arguments" (vLLM's llama3_json parser takes both) */
static const chat_call_form llama3 = {"",
                                      "",
                                      "<|python_tag|>",
                                      CHAT_CALL_JSON,
                                      {"parameters", "arguments"},
                                      "{\"name\": ",
                                      ", \"parameters\": ",
                                      "}"};

const chat_call_form *chat_call_form_of(chat_family f) {
    switch (f) {
    case CHAT_QWEN35:
        return &qwen35;
    case CHAT_LLAMA3:
        return &llama3;
    case CHAT_QWEN3:
    case CHAT_GEMMA3:
        break;
    }
    return &qwen3;
}
