/* Fuzz target: the OpenAI request -> job path of the server, as far as it
 * goes without a model: body parsing and validation (serve_request_parse,
 * including the tools/response_format fields), the job taking ownership of
 * the request (serve_job_new), the chat rendering of its messages with its
 * enable_thinking, and the tokenization of the rendered prompt (or of the
 * completion's text) with the fake server's tokenizer. The steps are the
 * public ones serve_http.c's prepare_job composes (it is static there).
 * Token ids the tokenizer returns must lie in its vocabulary. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_job.h"
#include "text/chat.h"
#include "text/tokenizer.h"

static tok_tokenizer *tok;

static void encode(const char *text) {
    int32_t *ids;
    size_t n;
    nc_error err;
    if (tok_encode(tok, text, strlen(text), &ids, &n, &err) != NC_OK) return;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= tok_vocab_size(tok)) abort();
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nc_error err;
    if (!tok && tok_load("tests/fixtures/serve/fake/tokenizer.json", &tok, &err) != NC_OK)
        return 0; /* run from the repository root */
    for (int ep = 0; ep < 2; ep++) {
        serve_request req;
        serve_parse_error perr;
        if (serve_request_parse((const char *)data, size, (serve_endpoint)ep, &req, &perr, &err) !=
            NC_OK)
            continue;
        serve_job *j = serve_job_new(&req);
        if (!j) {
            serve_request_free(&req);
            continue;
        }
        const serve_request *r = &j->req;
        if (r->endpoint == SERVE_EP_CHAT) {
            chat_message *m = calloc(r->n_messages ? r->n_messages : 1, sizeof *m);
            for (size_t i = 0; m && i < r->n_messages; i++)
                m[i] = (chat_message){r->messages[i].role, r->messages[i].content,
                                      r->messages[i].reasoning_content};
            chat_options co = {1, r->enable_thinking, 0};
            char *text;
            if (m && chat_render(m, r->n_messages, &co, &text, &err) == NC_OK) {
                encode(text);
                free(text);
            }
            free(m);
        } else if (r->prompt) {
            encode(r->prompt);
        }
        serve_job_release(j);
    }
    return 0;
}
