/* The encoders a server hosts beside (or instead of) its text generator:
 * each opened through the public API (nc_model_open), each behind its own
 * lock (calls on one model must not overlap; a request runs on its
 * connection's thread). They answer OpenAI's POST /v1/embeddings (a string,
 * an array of strings, token ids or arrays of them; encoding_format float
 * or base64; usage) and llama-server's POST /v1/rerank (query, documents,
 * top_n, return_documents; sequence-classification encoders with one
 * label, scored by their logit), and list themselves under /v1/models.
 * The request's `model` picks one by its name (the folder's name) or its
 * -m path; an OpenAI model name, or none, picks the first that can
 * answer. */
#ifndef NC_SERVE_ENCODERS_H
#define NC_SERVE_ENCODERS_H

#include <jansson.h>

#include "base/error.h"

typedef struct serve_encoders serve_encoders;

/* Opens paths[0..n) as encoders with n_threads each (0: all cores), named
 * names[i] (NULL, or a NULL entry: the folder's name). */
nc_status serve_encoders_open(const char *const *paths, const char *const *names, int n,
                              int n_threads, serve_encoders **out, nc_error *err);
void serve_encoders_free(serve_encoders *e);
int serve_encoders_count(const serve_encoders *e);
/* The i-th encoder's name (the folder's name, or the -m ORG/NAME). */
const char *serve_encoders_name(const serve_encoders *e, int i);

/* /v1/models entries: appends one object per encoder to data; or the
 * object of the one called name (NULL when none is). */
void serve_encoders_list(const serve_encoders *e, json_t *data, long long created);
json_t *serve_encoders_model(const serve_encoders *e, const char *name, long long created);

/* The answer to a POST body of /v1/embeddings (is_rerank 0) or /v1/rerank:
 * a malloc'ed JSON body (NULL: out of memory) and its HTTP status. */
char *serve_encoders_answer(serve_encoders *e, int is_rerank, const char *body, size_t len,
                            int *status);

#endif
