/* Encoders in the server: /v1/embeddings, /v1/rerank and their /v1/models
 * entries (serve_encoders.h). */
#include "serve/serve_encoders.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/json.h"
#include "nectar.h"
#include "serve/serve_policy.h"
#include "serve/serve_respond.h"

#define MAX_INPUTS 2048 /* OpenAI's limit on inputs per embeddings request */

typedef struct hosted {
    char *name, *path;
    nc_model *m;
    int dim, n_labels;
    pthread_mutex_t mu;
} hosted;

struct serve_encoders {
    hosted *h;
    int n;
};

static const char *base_name(const char *path, char *buf, size_t cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/')
        b--;
    snprintf(buf, cap, "%.*s", (int)(n - b), path + b);
    return buf;
}

nc_status serve_encoders_open(const char *const *paths, const char *const *names, int n,
                              int n_threads, serve_encoders **out, nc_error *err) {
    *out = NULL;
    serve_encoders *e = calloc(1, sizeof *e);
    if (!e || !(e->h = calloc((size_t)(n > 0 ? n : 1), sizeof *e->h))) {
        free(e);
        return nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
    }
    char threads[32], base[256];
    snprintf(threads, sizeof threads, "threads=%d", n_threads);
    const char *opts[] = {threads, NULL};
    for (int i = 0; i < n; i++) {
        hosted *h = &e->h[e->n];
        nc_status st = nc_model_open(paths[i], "cpu", opts, &h->m, err);
        if (st == NC_OK && nc_model_get_kind(h->m) != NC_MODEL_ENCODER)
            st = nc_fail(err, NC_ERR_INVALID, "%s: not an encoder", paths[i]);
        const char *name = names && names[i] ? names[i] : base_name(paths[i], base, sizeof base);
        if (st == NC_OK && (!(h->name = strdup(name)) || !(h->path = strdup(paths[i]))))
            st = nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
        if (st == NC_OK && pthread_mutex_init(&h->mu, NULL) != 0)
            st = nc_fail(err, NC_ERR_INTERNAL, "serve: cannot create a lock");
        if (st != NC_OK) {
            nc_model_free(h->m);
            free(h->name);
            free(h->path);
            serve_encoders_free(e);
            return st;
        }
        h->dim = nc_model_embedding_size(h->m);
        h->n_labels = nc_model_num_labels(h->m);
        e->n++;
    }
    *out = e;
    return NC_OK;
}

void serve_encoders_free(serve_encoders *e) {
    if (!e) return;
    for (int i = 0; i < e->n; i++) {
        nc_model_free(e->h[i].m);
        pthread_mutex_destroy(&e->h[i].mu);
        free(e->h[i].name);
        free(e->h[i].path);
    }
    free(e->h);
    free(e);
}

int serve_encoders_count(const serve_encoders *e) {
    return e ? e->n : 0;
}

const char *serve_encoders_name(const serve_encoders *e, int i) {
    return e && i >= 0 && i < e->n ? e->h[i].name : NULL;
}

static json_t *model_json(const hosted *h, long long created) {
    return json_pack("{s:s,s:s,s:I,s:s,s:{s:s,s:i,s:i}}", "id", h->name, "object", "model",
                     "created", (json_int_t)created, "owned_by", "nectar", "meta", "kind",
                     h->n_labels == 1 ? "reranker" : "embedding", "n_embd", h->dim, "n_labels",
                     h->n_labels);
}

void serve_encoders_list(const serve_encoders *e, json_t *data, long long created) {
    for (int i = 0; e && i < e->n; i++)
        json_array_append_new(data, model_json(&e->h[i], created));
}

/* The encoder named `asked` by its name or -m path (exactly), else NULL. */
static hosted *find_exact(const serve_encoders *e, const char *asked) {
    for (int i = 0; e && asked && i < e->n; i++)
        if (!strcasecmp(asked, e->h[i].name) || !strcmp(asked, e->h[i].path)) return &e->h[i];
    return NULL;
}

json_t *serve_encoders_model(const serve_encoders *e, const char *name, long long created) {
    hosted *h = find_exact(e, name);
    return h ? model_json(h, created) : NULL;
}

/* ---- requests --------------------------------------------------------------- */

typedef struct answer {
    int status;
    char msg[512];
    const char *param, *code;
} answer;

static int fail(answer *a, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(answer *a, int status, const char *param, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->msg, sizeof a->msg, fmt, ap);
    va_end(ap);
    a->status = status;
    a->param = param;
    a->code = code;
    return -1;
}

/* The encoder the request's model names; NULL after fail(). */
static hosted *pick(serve_encoders *e, const json_t *req, int is_rerank, answer *a) {
    json_t *jm = json_object_get(req, "model");
    if (jm && !json_is_null(jm) && !json_is_string(jm))
        return fail(a, 400, "model", "invalid_value", "'model' must be a string"), NULL;
    const char *asked = json_string_value(jm);
    hosted *h = find_exact(e, asked);
    if (h && is_rerank && h->n_labels != 1)
        return fail(a, 400, "model", "invalid_value",
                    "model '%s' is not a reranker (a sequence classifier with one label)",
                    h->name),
               NULL;
    /* No name, or a client library's default name: the first that fits. */
    if (!h && (!asked || serve_model_matches(asked, "", NULL, NULL, 0)))
        for (int i = 0; !h && i < e->n; i++)
            if (!is_rerank || e->h[i].n_labels == 1) h = &e->h[i];
    if (!h) {
        char names[256] = "";
        for (int i = 0; i < e->n; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     e->h[i].name);
        if (asked)
            fail(a, 404, "model", "model_not_found", "no %s named '%s' here (the encoders: %s)",
                 is_rerank ? "reranker" : "encoder", asked, names);
        else
            fail(a, 404, "model", "model_not_found", "this server hosts no %s",
                 is_rerank ? "reranker (a sequence classifier with one label)" : "encoder");
    }
    return h;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The vector's little-endian float32 bytes in base64, as OpenAI sends them. */
static char *base64_floats(const float *v, int n) {
    size_t nb = (size_t)n * 4;
    unsigned char *b = malloc(nb ? nb : 1);
    char *out = malloc((nb + 2) / 3 * 4 + 1);
    if (!b || !out) {
        free(b);
        free(out);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int k = 0; k < 4; k++)
            b[(size_t)i * 4 + (size_t)k] = (unsigned char)(u >> (8 * k));
    }
    size_t o = 0;
    for (size_t i = 0; i < nb; i += 3) {
        uint32_t x = (uint32_t)b[i] << 16;
        if (i + 1 < nb) x |= (uint32_t)b[i + 1] << 8;
        if (i + 2 < nb) x |= b[i + 2];
        out[o++] = B64[(x >> 18) & 63];
        out[o++] = B64[(x >> 12) & 63];
        out[o++] = i + 1 < nb ? B64[(x >> 6) & 63] : '=';
        out[o++] = i + 2 < nb ? B64[x & 63] : '=';
    }
    out[o] = '\0';
    free(b);
    return out;
}

/* "input" as texts or token-id rows (pointers into req / malloc'ed rows). */
typedef struct inputs {
    size_t n;
    const char **texts; /* text input */
    int32_t **ids;      /* token input */
    size_t *n_ids;
} inputs;

static void inputs_free(inputs *in) {
    for (size_t i = 0; in->ids && i < in->n; i++)
        free(in->ids[i]);
    free(in->ids);
    free(in->n_ids);
    free(in->texts);
}

static int id_row(const json_t *arr, const char *where, int32_t **out, size_t *n, answer *a) {
    *n = json_array_size(arr);
    *out = malloc((*n ? *n : 1) * sizeof **out);
    if (!*out) return fail(a, 500, NULL, NULL, "out of memory");
    for (size_t k = 0; k < *n; k++) {
        json_t *v = json_array_get(arr, k);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > INT32_MAX)
            return fail(a, 400, "input", "invalid_value",
                        "'%s[%zu]' must be a token id (a non-negative integer)", where, k);
        (*out)[k] = (int32_t)json_integer_value(v);
    }
    if (*n == 0) return fail(a, 400, "input", "invalid_value", "'%s' is empty", where);
    return 0;
}

static int read_inputs(const json_t *req, inputs *in, answer *a) {
    memset(in, 0, sizeof *in);
    json_t *x = json_object_get(req, "input");
    if (!x || json_is_null(x))
        return fail(a, 400, "input", "missing_required_parameter", "'input' is required");
    if (json_is_string(x)) {
        in->n = 1;
        if (!(in->texts = malloc(sizeof *in->texts))) return fail(a, 500, NULL, NULL, "out of memory");
        in->texts[0] = json_string_value(x);
        return 0;
    }
    if (!json_is_array(x) || json_array_size(x) == 0)
        return fail(a, 400, "input", "invalid_value",
                    "'input' must be a string, an array of strings, token ids, or arrays of "
                    "token ids, and not empty");
    size_t n = json_array_size(x);
    if (n > MAX_INPUTS)
        return fail(a, 400, "input", "invalid_value", "'input' has %zu entries; at most %d", n,
                    MAX_INPUTS);
    json_t *first = json_array_get(x, 0);
    if (json_is_integer(first)) { /* one row of token ids */
        in->n = 1;
        in->ids = calloc(1, sizeof *in->ids);
        in->n_ids = calloc(1, sizeof *in->n_ids);
        if (!in->ids || !in->n_ids) return fail(a, 500, NULL, NULL, "out of memory");
        return id_row(x, "input", &in->ids[0], &in->n_ids[0], a);
    }
    in->n = n;
    if (json_is_array(first)) {
        in->ids = calloc(n, sizeof *in->ids);
        in->n_ids = calloc(n, sizeof *in->n_ids);
        if (!in->ids || !in->n_ids) return fail(a, 500, NULL, NULL, "out of memory");
        for (size_t i = 0; i < n; i++) {
            char where[32];
            snprintf(where, sizeof where, "input[%zu]", i);
            if (!json_is_array(json_array_get(x, i)))
                return fail(a, 400, "input", "invalid_value", "'%s' must be an array of token ids",
                            where);
            if (id_row(json_array_get(x, i), where, &in->ids[i], &in->n_ids[i], a)) return -1;
        }
        return 0;
    }
    if (!(in->texts = calloc(n, sizeof *in->texts))) return fail(a, 500, NULL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        in->texts[i] = json_string_value(json_array_get(x, i));
        if (!in->texts[i])
            return fail(a, 400, "input", "invalid_value", "'input[%zu]' must be a string", i);
        if (!*in->texts[i])
            return fail(a, 400, "input", "invalid_value", "'input[%zu]' is empty", i);
    }
    return 0;
}

static int status_of(nc_status st) {
    return st == NC_ERR_NOMEM ? 500 : 400;
}

static json_t *usage(size_t n_tokens) {
    return json_pack("{s:I,s:I}", "prompt_tokens", (json_int_t)n_tokens, "total_tokens",
                     (json_int_t)n_tokens);
}

static json_t *embeddings(serve_encoders *e, const json_t *req, answer *a) {
    hosted *h = pick(e, req, 0, a);
    if (!h) return NULL;
    const char *format = "float", *prompt_name = NULL;
    json_t *jf = json_object_get(req, "encoding_format");
    if (jf && !json_is_null(jf)) {
        format = json_string_value(jf);
        if (!format || (strcmp(format, "float") && strcmp(format, "base64")))
            return fail(a, 400, "encoding_format", "invalid_value",
                        "'encoding_format' must be \"float\" or \"base64\""),
                   NULL;
    }
    json_t *jd = json_object_get(req, "dimensions");
    if (jd && !json_is_null(jd) && (!json_is_integer(jd) || json_integer_value(jd) != h->dim))
        return fail(a, 400, "dimensions", "invalid_value",
                    "'dimensions': model '%s' gives %d dimensions, and no other number", h->name,
                    h->dim),
               NULL;
    json_t *jp = json_object_get(req, "prompt_name"); /* sentence-transformers' prompts */
    if (jp && !json_is_null(jp) && !(prompt_name = json_string_value(jp)))
        return fail(a, 400, "prompt_name", "invalid_value", "'prompt_name' must be a string"),
               NULL;
    inputs in;
    if (read_inputs(req, &in, a)) {
        inputs_free(&in);
        return NULL;
    }
    float *v = malloc(in.n * (size_t)h->dim * sizeof *v);
    nc_error err = {0};
    size_t n_tokens = 0;
    nc_status st = NC_ERR_NOMEM;
    nc_embed_options o = {0};
    o.prompt_name = prompt_name;
    if (v) {
        pthread_mutex_lock(&h->mu);
        if (in.texts)
            st = nc_embed_batch(h->m, in.texts, in.n, &o, v, in.n * (size_t)h->dim, &n_tokens,
                                &err);
        else
            st = nc_embed_tokens(h->m, (const int32_t *const *)in.ids, in.n_ids, in.n, &o, v,
                                 in.n * (size_t)h->dim, &n_tokens, &err);
        pthread_mutex_unlock(&h->mu);
    }
    inputs_free(&in);
    if (st != NC_OK) {
        free(v);
        fail(a, status_of(st), st == NC_ERR_NOT_FOUND ? "prompt_name" : "input",
             st == NC_ERR_RANGE ? "context_length_exceeded" : "invalid_value", "%s",
             v ? err.msg : "out of memory");
        return NULL;
    }
    json_t *data = json_array();
    int is_b64 = !strcmp(format, "base64");
    for (size_t i = 0; data && i < in.n; i++) {
        const float *row = v + i * (size_t)h->dim;
        json_t *emb;
        if (is_b64) {
            char *s = base64_floats(row, h->dim);
            emb = s ? json_string(s) : NULL;
            free(s);
        } else {
            emb = json_array();
            for (int j = 0; emb && j < h->dim; j++)
                json_array_append_new(emb, json_real((double)row[j]));
        }
        json_array_append_new(data, json_pack("{s:s,s:I,s:o*}", "object", "embedding", "index",
                                              (json_int_t)i, "embedding", emb));
    }
    free(v);
    return json_pack("{s:s,s:o,s:s,s:o}", "object", "list", "data", data, "model", h->name,
                     "usage", usage(n_tokens));
}

typedef struct scored {
    size_t index;
    float score;
} scored;

static int by_score_desc(const void *x, const void *y) {
    const scored *a = x, *b = y;
    if (a->score != b->score) return a->score < b->score ? 1 : -1;
    return a->index < b->index ? -1 : 1;
}

static json_t *rerank(serve_encoders *e, const json_t *req, answer *a) {
    hosted *h = pick(e, req, 1, a);
    if (!h) return NULL;
    const char *query = json_string_value(json_object_get(req, "query"));
    json_t *docs = json_object_get(req, "documents");
    if (!query) return fail(a, 400, "query", "invalid_value", "'query' must be a string"), NULL;
    size_t n = json_array_size(docs);
    if (!json_is_array(docs) || n == 0 || n > MAX_INPUTS)
        return fail(a, 400, "documents", "invalid_value",
                    "'documents' must be an array of 1 to %d strings", MAX_INPUTS),
               NULL;
    int64_t top_n = (int64_t)n;
    int ret_docs = 0;
    nc_error err = {0};
    if (nc_json_int(req, "top_n", &top_n, 0, "request", &err) != NC_OK || top_n < 0)
        return fail(a, 400, "top_n", "invalid_value", "'top_n' must be a non-negative integer"),
               NULL;
    if (nc_json_bool(req, "return_documents", &ret_docs, 0, "request", &err) != NC_OK)
        return fail(a, 400, "return_documents", "invalid_value",
                    "'return_documents' must be true or false"),
               NULL;
    const char **first = calloc(n, sizeof *first), **second = calloc(n, sizeof *second);
    float *logits = malloc(n * sizeof *logits);
    scored *s = malloc(n * sizeof *s);
    nc_status st = first && second && logits && s ? NC_OK : NC_ERR_NOMEM;
    for (size_t i = 0; st == NC_OK && i < n; i++) {
        json_t *d = json_array_get(docs, i);
        /* a document is a string, or {"text": ...} as some clients send */
        second[i] = json_is_object(d) ? json_string_value(json_object_get(d, "text"))
                                      : json_string_value(d);
        first[i] = query;
        if (!second[i]) {
            free(first);
            free(second);
            free(logits);
            free(s);
            return fail(a, 400, "documents", "invalid_value", "'documents[%zu]' must be a string",
                        i),
                   NULL;
        }
    }
    size_t n_tokens = 0;
    if (st == NC_OK) {
        pthread_mutex_lock(&h->mu);
        st = nc_classify_pairs(h->m, first, second, n, logits, n, &n_tokens, &err);
        pthread_mutex_unlock(&h->mu);
    }
    json_t *results = st == NC_OK ? json_array() : NULL;
    if (st == NC_OK) {
        for (size_t i = 0; i < n; i++)
            s[i] = (scored){i, logits[i]};
        qsort(s, n, sizeof *s, by_score_desc); /* best first, as llama-server answers */
        for (size_t i = 0; i < n && i < (size_t)top_n; i++) {
            json_t *r = json_pack("{s:I,s:f}", "index", (json_int_t)s[i].index, "relevance_score",
                                  (double)s[i].score);
            if (ret_docs)
                json_object_set_new(r, "document", json_pack("{s:s}", "text", second[s[i].index]));
            json_array_append_new(results, r);
        }
    }
    free(first);
    free(second);
    free(logits);
    free(s);
    if (st != NC_OK)
        return fail(a, status_of(st), "documents",
                    st == NC_ERR_RANGE ? "context_length_exceeded" : "invalid_value", "%s",
                    st == NC_ERR_NOMEM && !err.msg[0] ? "out of memory" : err.msg),
               NULL;
    return json_pack("{s:s,s:s,s:o,s:o}", "object", "list", "model", h->name, "results", results,
                     "usage", usage(n_tokens));
}

char *serve_encoders_answer(serve_encoders *e, int is_rerank, const char *body, size_t len,
                            int *status) {
    answer a = {0};
    nc_error err = {0};
    json_t *req = NULL, *res = NULL;
    if (!e || e->n == 0)
        fail(&a, 404, "model", "model_not_found", "this server hosts no encoder");
    else if (nc_json_parse(body, len, "request body", &req, &err) != NC_OK)
        fail(&a, 400, NULL, "invalid_json", "%s", err.msg);
    else if (!json_is_object(req))
        fail(&a, 400, NULL, "invalid_value", "the request body must be a JSON object");
    else
        res = is_rerank ? rerank(e, req, &a) : embeddings(e, req, &a);
    json_decref(req);
    if (!res) {
        *status = a.status ? a.status : 500;
        return serve_error_body(*status, a.status ? a.msg : "out of memory", a.param, a.code);
    }
    char *out = json_dumps(res, JSON_COMPACT);
    json_decref(res);
    *status = out ? 200 : 500;
    return out;
}
