/* OpenAI response shapes: errors, chat.completion and text_completion
 * objects, their streaming chunks, usage and logprobs. Pure formatting (no
 * HTTP, no locking): the caller hands in a snapshot of the job's output. */
#ifndef NC_SERVE_RESPOND_H
#define NC_SERVE_RESPOND_H

#include <jansson.h>
#include <stddef.h>

#include "serve/serve_request.h"

/* {"error": {"message", "type", "param", "code"}}; type follows the status
 * (invalid_request_error, authentication_error, ...). param may be NULL or
 * "" (null in the JSON). Returns a malloc'ed string. */
char *serve_error_body(int http_status, const char *message, const char *param, const char *code);

/* Identity shared by a response and all of its chunks. */
typedef struct serve_resp_id {
    char id[48];
    long long created;
    const char *model;
    serve_endpoint endpoint;
} serve_resp_id;

typedef struct serve_usage {
    int prompt_tokens, completion_tokens, cached_tokens;
    double prompt_ms, predicted_ms; /* slot start -> first token -> last token */
    double ttft_ms;                 /* arrival -> first token (queueing included) */
} serve_usage;

/* A piece of output: text (content and, for chat, reasoning) and the
 * logprob entries (chat shape {token, logprob, bytes, top_logprobs}) that
 * belong to it. Any may be empty/NULL. */
typedef struct serve_delta {
    const char *reasoning;
    size_t reasoning_len;
    const char *content;
    size_t content_len;
    json_t *logprobs; /* borrowed array, or NULL when not requested */
    /* Chat: calls the model made (gen/tool_scan.h shape), borrowed; in a
     * chunk each becomes a tool_calls delta with its index. */
    json_t *tool_calls;
    int first_call_index; /* chunks: the index of tool_calls[0] in the whole answer */
} serve_delta;

/* The whole non-streaming response body (malloc'ed). */
char *serve_response_full(const serve_resp_id *rid, const serve_delta *d, const char *finish_reason,
                          const serve_usage *u);

/* One SSE event "data: {...}\n\n" (malloc'ed): a chunk with the delta, or
 * with finish_reason set (and an empty delta) when finish_reason != NULL.
 * is_first adds the assistant role (chat). */
char *serve_chunk(const serve_resp_id *rid, const serve_delta *d, int is_first,
                  const char *finish_reason);

/* The closing usage chunk for stream_options.include_usage. */
char *serve_usage_chunk(const serve_resp_id *rid, const serve_usage *u);

#endif
