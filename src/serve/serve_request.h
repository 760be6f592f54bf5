/* The body of an OpenAI-style completion request, parsed and validated.
 * Everything a client sends goes through serve_request_parse before it can
 * reach the scheduler, so this is the server's trust boundary: any bytes give
 * either a complete request or an error naming the offending field. */
#ifndef NC_SERVE_REQUEST_H
#define NC_SERVE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "gen/output_spec.h"
#include "gen/sampling_params.h"

typedef enum { SERVE_EP_CHAT, SERVE_EP_COMPLETIONS } serve_endpoint;

#define SERVE_MAX_STOP 4          /* OpenAI's limit on stop strings */
#define SERVE_MAX_STOP_BYTES 256  /* per stop string */
#define SERVE_MAX_TOP_LOGPROBS 20 /* chat; completions allow 5 */
#define SERVE_MAX_MESSAGES 4096

/* A call in an assistant message of the history. */
typedef struct serve_tool_call {
    char *name;
    char *arguments; /* JSON text as the client sent it (an object is written as tojson) */
} serve_tool_call;

typedef struct serve_message {
    char *role;                  /* system, user, assistant or tool ("developer" maps to system) */
    char *content;               /* text parts joined; never NULL */
    char *reasoning_content;     /* assistant history only; may be NULL */
    serve_tool_call *tool_calls; /* assistant history only */
    size_t n_tool_calls;
} serve_message;

#define SERVE_MAX_TOOLS GEN_MAX_TOOLS

typedef struct serve_request {
    serve_endpoint endpoint;
    char *model; /* NULL when the client named none */

    serve_message *messages; /* chat */
    size_t n_messages;
    char *prompt;        /* completions: text, or NULL when given as token ids */
    int32_t *prompt_ids; /* completions: "prompt": [ids] (range checked later) */
    size_t n_prompt_ids;

    /* Sampling (gen_sampler semantics): each parameter of the table
     * (gen/sampling_params.h) by its row, in the server's (OpenAI's)
     * range. Fields the client did not send come from the model folder's
     * generation_config.json (serve_sched). */
    double sampling[GEN_N_PARAMS];
    unsigned sampling_set; /* gen_param.set bits (GEN_SET_*): fields the client sent */
    int has_seed;
    uint64_t seed;

    int max_tokens; /* -1: until the end of the context */
    char *stop[SERVE_MAX_STOP];
    int n_stop;

    int logprobs;     /* return the chosen tokens' logprobs */
    int top_logprobs; /* alternatives per token (0..20) */
    int echo;         /* completions: unsupported, rejected when set */

    int stream;
    int include_usage;     /* stream_options.include_usage */
    int enable_thinking;   /* chat_template_kwargs.enable_thinking, default 1 */
    int preserve_thinking; /* chat_template_kwargs.preserve_thinking (Qwen3.5), default 0 */
    int context_shift;     /* chat: drop the oldest turns to fit; -1: the server's default */

    /* tools, tool_choice (chat) and response_format */
    gen_output_spec out;
} serve_request;

/* What a parse failure is about: `param` is the OpenAI error's "param" field
 * (the JSON path of the bad field, "" when the whole body is at fault). */
typedef struct serve_parse_error {
    char param[96];
} serve_parse_error;

/* Parses body[0..len) for the endpoint. On failure fills err (a one-line
 * message naming the field) and perr, leaves *req zeroed and returns
 * NC_ERR_FORMAT (malformed JSON) or NC_ERR_INVALID (a bad field). */
nc_status serve_request_parse(const char *body, size_t len, serve_endpoint endpoint,
                              serve_request *req, serve_parse_error *perr, nc_error *err);

void serve_request_free(serve_request *req);

/* Removes messages[first..first+n) (a context shift's oldest turn). */
void serve_request_drop_messages(serve_request *req, size_t first, size_t n);

/* The value of sampling parameter `name` in r (NAN: no such parameter). */
double serve_request_param(const serve_request *r, const char *name);

#endif
