/* Parsing and validation of /v1/chat/completions and /v1/completions bodies.
 * Unknown fields are ignored (clients send many, e.g. "user"); fields we
 * know but cannot honour (n > 1, logit_bias, echo) are rejected so a
 * client never silently gets something other than what it asked for. */
#include "serve/serve_request.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/model.h"
#include "serve/serve_job.h"
#include "text/chat_tojson.h"

/* Parse context: the error record and the parameter it is about. */
typedef struct pctx {
    serve_parse_error *perr;
    nc_error *err;
} pctx;

static nc_status bad(pctx *c, const char *param, const char *fmt, const char *detail) {
    snprintf(c->perr->param, sizeof c->perr->param, "%s", param);
    char msg[256];
    snprintf(msg, sizeof msg, fmt, detail ? detail : "");
    if (!*param) return nc_fail(c->err, NC_ERR_INVALID, "%s", msg); /* about the whole body */
    return nc_fail(c->err, NC_ERR_INVALID, "'%s' %s", param, msg);
}

/* jansson holds integers as int64_t and refuses a document with a larger
 * one, so before parsing, integer literals outside that range are turned
 * into strings "\0big:DIGITS" (a NUL cannot come from a client's own string
 * here: dup_string refuses it). Only `seed` accepts them; elsewhere they
 * are a wrong type, named by field, rather than a parse error. */
#define BIG_MARK "\\u0000big:"
#define BIG_MARK_DECODED "\0big:"

static const char *big_integer(const json_t *v) {
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    size_t n = sizeof BIG_MARK_DECODED - 1;
    if (!s || json_string_length(v) <= n || memcmp(s, BIG_MARK_DECODED, n) != 0) return NULL;
    return s + n;
}

/* NULL when there is nothing to rewrite (or out of memory: then jansson
 * reports the big integer itself). */
static char *quote_big_integers(const char *body, size_t len, size_t *out_len) {
    serve_text out = {0};
    size_t copied = 0;
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = body[i];
        if (in_string) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = 0;
            continue;
        }
        if (ch == '"') {
            in_string = 1;
            continue;
        }
        if (ch != '-' && (ch < '0' || ch > '9')) continue;
        size_t j = i + (ch == '-');
        while (j < len && body[j] >= '0' && body[j] <= '9')
            j++;
        int is_integer = j == len || !strchr(".eE", body[j]);
        size_t n_digits = j - i - (ch == '-');
        if (is_integer && n_digits >= 19) {
            char num[32];
            int fits = 0;
            if (j - i < sizeof num) {
                memcpy(num, body + i, j - i);
                num[j - i] = '\0';
                errno = 0;
                (void)strtoll(num, NULL, 10);
                fits = errno == 0;
            }
            if (!fits) {
                if (serve_text_append(&out, body + copied, i - copied) != 0 ||
                    serve_text_append(&out, "\"" BIG_MARK, sizeof BIG_MARK) != 0 ||
                    serve_text_append(&out, body + i, j - i) != 0 ||
                    serve_text_append(&out, "\"", 1) != 0) {
                    free(out.p);
                    return NULL;
                }
                copied = j;
            }
        }
        while (j < len && strchr("0123456789.eE+-", body[j]))
            j++;
        i = j - 1;
    }
    if (!out.p) return NULL;
    if (serve_text_append(&out, body + copied, len - copied) != 0) {
        free(out.p);
        return NULL;
    }
    *out_len = out.len;
    return out.p;
}

/* The field, or NULL when absent or JSON null (OpenAI treats both alike). */
static json_t *field(const json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return (v && !json_is_null(v)) ? v : NULL;
}

static nc_status get_num(pctx *c, const json_t *obj, const char *key, double lo, double hi,
                         double *out) {
    json_t *v = field(obj, key);
    if (!v) return NC_OK;
    if (!json_is_number(v)) return bad(c, key, "must be a number%s", NULL);
    double d = json_number_value(v);
    if (!isfinite(d) || d < lo || d > hi) {
        char range[96];
        snprintf(range, sizeof range, "must be between %g and %g", lo, hi);
        return bad(c, key, "%s", range);
    }
    *out = d;
    return NC_OK;
}

/* Integers may arrive as 3 or 3.0; anything else, or out of [lo, hi], fails.
 * The range is checked on the double before converting (a huge value must
 * not reach an integer cast). */
static nc_status get_int(pctx *c, const json_t *obj, const char *key, double lo, double hi,
                         int64_t *out) {
    json_t *v = field(obj, key);
    if (!v) return NC_OK;
    double d;
    if (json_is_integer(v))
        d = (double)json_integer_value(v);
    else if (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v))
        d = json_real_value(v);
    else
        return bad(c, key, "must be an integer%s", NULL);
    if (d < lo || d > hi) {
        char range[96];
        snprintf(range, sizeof range, "must be between %.0f and %.0f", lo, hi);
        return bad(c, key, "%s", range);
    }
    *out = json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)d;
    return NC_OK;
}

static nc_status get_bool(pctx *c, const json_t *obj, const char *key, int *out) {
    json_t *v = field(obj, key);
    if (!v) return NC_OK;
    if (!json_is_boolean(v)) return bad(c, key, "must be true or false%s", NULL);
    *out = json_is_true(v);
    return NC_OK;
}

/* A copy of a JSON string; strings with NUL bytes are refused because
 * everything downstream (chat template, stop strings) works on C strings. */
static nc_status dup_string(pctx *c, const json_t *v, const char *param, char **out) {
    if (!json_is_string(v)) return bad(c, param, "must be a string%s", NULL);
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (memchr(s, '\0', n)) return bad(c, param, "must not contain NUL characters%s", NULL);
    *out = malloc(n + 1);
    if (!*out) return nc_fail(c->err, NC_ERR_NOMEM, "request: out of memory");
    memcpy(*out, s, n + 1);
    return NC_OK;
}

/* Content as a string or as an array of {"type":"text","text":...} parts,
 * which are concatenated (as the OpenAI API defines for text parts). */
static nc_status parse_content(pctx *c, const json_t *v, const char *param, char **out) {
    if (!v) {
        *out = strdup("");
        return *out ? NC_OK : nc_fail(c->err, NC_ERR_NOMEM, "request: out of memory");
    }
    if (json_is_string(v)) return dup_string(c, v, param, out);
    if (!json_is_array(v))
        return bad(c, param, "must be a string or an array of text parts%s", NULL);
    size_t total = 0, i;
    json_t *part;
    char sub[96];
    json_array_foreach(v, i, part) {
        snprintf(sub, sizeof sub, "%s[%zu]", param, i);
        const char *type;
        json_t *t = json_is_object(part) ? field(part, "type") : NULL;
        if (!t || !json_is_string(t)) return bad(c, sub, "must be an object with a 'type'%s", NULL);
        type = json_string_value(t);
        if (strcmp(type, "text") != 0)
            return bad(c, sub, "has type '%s'; only text parts are supported", type);
        json_t *text = field(part, "text");
        snprintf(sub, sizeof sub, "%s[%zu].text", param, i);
        if (!text || !json_is_string(text)) return bad(c, sub, "must be a string%s", NULL);
        total += json_string_length(text);
    }
    char *buf = malloc(total + 1);
    if (!buf) return nc_fail(c->err, NC_ERR_NOMEM, "request: out of memory");
    size_t off = 0;
    json_array_foreach(v, i, part) {
        json_t *text = field(part, "text");
        size_t n = json_string_length(text);
        memcpy(buf + off, json_string_value(text), n);
        off += n;
    }
    buf[off] = '\0';
    if (strlen(buf) != off) {
        free(buf);
        return bad(c, param, "must not contain NUL characters%s", NULL);
    }
    *out = buf;
    return NC_OK;
}

static nc_status oom(pctx *c) {
    return nc_fail(c->err, NC_ERR_NOMEM, "request: out of memory");
}

/* A JSON value as the chat template's tojson writes it. */
static nc_status tojson(pctx *c, const json_t *v, char **out) {
    nc_error e;
    return chat_tojson(v, out, &e) == NC_OK ? NC_OK : oom(c);
}

/* tool_calls of an assistant message: [{id, type, function: {name,
 * arguments}}]; arguments a JSON string (OpenAI) or an object. */
static nc_status parse_tool_calls(pctx *c, const json_t *tc, size_t mi, serve_message *out) {
    char param[128];
    snprintf(param, sizeof param, "messages[%zu].tool_calls", mi);
    if (!json_is_array(tc)) return bad(c, param, "must be an array%s", NULL);
    size_t n = json_array_size(tc);
    if (n == 0) return NC_OK;
    if (n > SERVE_MAX_TOOLS) return bad(c, param, "has too many entries%s", NULL);
    out->tool_calls = calloc(n, sizeof *out->tool_calls);
    if (!out->tool_calls) return oom(c);
    for (size_t k = 0; k < n; k++) {
        json_t *call = json_array_get(tc, k),
               *f = json_is_object(call) ? field(call, "function") : NULL;
        json_t *name = json_is_object(f) ? field(f, "name") : NULL;
        json_t *args = json_is_object(f) ? field(f, "arguments") : NULL;
        snprintf(param, sizeof param, "messages[%zu].tool_calls[%zu].function", mi, k);
        if (!name || !json_is_string(name))
            return bad(c, param, "must be an object with a string 'name'%s", NULL);
        out->n_tool_calls = k + 1;
        NC_TRY(dup_string(c, name, param, &out->tool_calls[k].name));
        if (!args)
            out->tool_calls[k].arguments = strdup("{}");
        else if (json_is_string(args))
            NC_TRY(dup_string(c, args, param, &out->tool_calls[k].arguments));
        else
            NC_TRY(tojson(c, args, &out->tool_calls[k].arguments));
        if (!out->tool_calls[k].arguments) return oom(c);
    }
    return NC_OK;
}

static nc_status parse_messages(pctx *c, const json_t *root, serve_request *r) {
    json_t *msgs = field(root, "messages");
    if (!msgs) return bad(c, "messages", "is required%s", NULL);
    if (!json_is_array(msgs)) return bad(c, "messages", "must be an array%s", NULL);
    size_t n = json_array_size(msgs);
    if (n == 0) return bad(c, "messages", "must not be empty%s", NULL);
    if (n > SERVE_MAX_MESSAGES) return bad(c, "messages", "has too many entries%s", NULL);
    r->messages = calloc(n, sizeof *r->messages);
    if (!r->messages) return nc_fail(c->err, NC_ERR_NOMEM, "request: out of memory");
    char param[96];
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(msgs, i);
        snprintf(param, sizeof param, "messages[%zu]", i);
        if (!json_is_object(m)) return bad(c, param, "must be an object%s", NULL);
        r->n_messages = i + 1;
        serve_message *out = &r->messages[i];
        json_t *role = field(m, "role");
        snprintf(param, sizeof param, "messages[%zu].role", i);
        if (!role || !json_is_string(role)) return bad(c, param, "must be a string%s", NULL);
        const char *rs = json_string_value(role);
        if (!strcmp(rs, "developer")) rs = "system";
        if (strcmp(rs, "system") != 0 && strcmp(rs, "user") != 0 && strcmp(rs, "assistant") != 0 &&
            strcmp(rs, "tool") != 0)
            return bad(c, param, "'%s' is not supported (system, developer, user, assistant, tool)",
                       rs);
        out->role = strdup(rs);
        if (!out->role) return nc_fail(c->err, NC_ERR_NOMEM, "request: out of memory");
        json_t *content = field(m, "content");
        snprintf(param, sizeof param, "messages[%zu].content", i);
        if (!content && strcmp(rs, "assistant") != 0) return bad(c, param, "is required%s", NULL);
        NC_TRY(parse_content(c, content, param, &out->content));
        json_t *rc = field(m, "reasoning_content");
        snprintf(param, sizeof param, "messages[%zu].reasoning_content", i);
        if (rc) NC_TRY(dup_string(c, rc, param, &out->reasoning_content));
        json_t *tc = field(m, "tool_calls");
        if (tc && !strcmp(rs, "assistant")) NC_TRY(parse_tool_calls(c, tc, i, out));
    }
    return NC_OK;
}

/* A string, an array of one string, or an array of token ids (OpenAI's
 * pre-tokenized form). */
static nc_status parse_prompt(pctx *c, const json_t *root, serve_request *r) {
    static const char *const shape =
        "must be a string, an array of one string, or an array of token ids%s";
    json_t *p = field(root, "prompt");
    if (!p) return bad(c, "prompt", "is required%s", NULL);
    if (json_is_array(p) && json_array_size(p) > 0 && json_is_integer(json_array_get(p, 0))) {
        size_t n = json_array_size(p);
        r->prompt_ids = malloc(n * sizeof *r->prompt_ids);
        if (!r->prompt_ids) return nc_fail(c->err, NC_ERR_NOMEM, "request: out of memory");
        char param[32];
        for (size_t i = 0; i < n; i++) {
            json_t *v = json_array_get(p, i);
            json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
            snprintf(param, sizeof param, "prompt[%zu]", i);
            if (id < 0 || id > INT32_MAX)
                return bad(c, param, "must be a token id (an integer >= 0)%s", NULL);
            r->prompt_ids[i] = (int32_t)id;
            r->n_prompt_ids = i + 1;
        }
        return NC_OK;
    }
    if (json_is_array(p)) {
        if (json_array_size(p) != 1 || !json_is_string(json_array_get(p, 0)))
            return bad(c, "prompt", shape, NULL);
        p = json_array_get(p, 0);
    }
    if (!json_is_string(p)) return bad(c, "prompt", shape, NULL);
    return dup_string(c, p, "prompt", &r->prompt);
}

static nc_status parse_stop(pctx *c, const json_t *root, serve_request *r) {
    json_t *s = field(root, "stop");
    if (!s) return NC_OK;
    json_t *one[1] = {s};
    json_t **list = one;
    size_t n = 1;
    if (json_is_array(s)) {
        n = json_array_size(s);
        if (n > SERVE_MAX_STOP) return bad(c, "stop", "allows at most 4 strings%s", NULL);
        list = NULL;
    } else if (!json_is_string(s)) {
        return bad(c, "stop", "must be a string or an array of strings%s", NULL);
    }
    char param[32];
    for (size_t i = 0; i < n; i++) {
        json_t *v = list ? list[i] : json_array_get(s, i);
        snprintf(param, sizeof param, list ? "stop" : "stop[%zu]", i);
        NC_TRY(dup_string(c, v, param, &r->stop[r->n_stop]));
        r->n_stop++;
        size_t len = strlen(r->stop[r->n_stop - 1]);
        if (len == 0) return bad(c, param, "must not be empty%s", NULL);
        if (len > SERVE_MAX_STOP_BYTES) return bad(c, param, "is longer than 256 bytes%s", NULL);
    }
    return NC_OK;
}

/* tools, tool_choice and response_format, as the API reads them. */
static nc_status parse_output(pctx *c, const json_t *root, serve_request *r) {
    return gen_output_spec_parse(root, r->endpoint == SERVE_EP_CHAT, &r->out, c->perr->param,
                                 sizeof c->perr->param, c->err);
}

/* Fields the server recognises but does not implement: present and
 * non-empty means a 400, never a silent ignore. */
static nc_status reject_unsupported(pctx *c, const json_t *root) {
    static const char *const keys[] = {"functions", "logit_bias"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = field(root, keys[i]);
        if (v && !((json_is_array(v) && json_array_size(v) == 0) ||
                   (json_is_object(v) && json_object_size(v) == 0)))
            return bad(c, keys[i], "is not supported by this server%s", NULL);
    }
    return NC_OK;
}

double serve_request_param(const serve_request *r, const char *name) {
    for (int i = 0; gen_param_at(i); i++)
        if (!strcmp(gen_param_at(i)->name, name)) return r->sampling[i];
    return NAN;
}

static nc_status parse_sampling(pctx *c, const json_t *root, serve_request *r) {
    /* the sampling parameter table, each in the server's (OpenAI's) range */
    for (int i = 0; gen_param_at(i); i++) {
        const gen_param *p = gen_param_at(i);
        if (!field(root, p->name)) continue;
        r->sampling_set |= p->set;
        if (p->is_int) {
            int64_t v = 0;
            NC_TRY(get_int(c, root, p->name, p->serve_lo, p->serve_hi, &v));
            r->sampling[i] = (double)v;
        } else {
            NC_TRY(get_num(c, root, p->name, p->serve_lo, p->serve_hi, &r->sampling[i]));
        }
    }
    /* A seed is any 64-bit integer, signed or not (negative seeds wrap as
     * in numpy); one above INT64_MAX arrives as a big-integer marker. */
    json_t *sv = field(root, "seed");
    if (sv) {
        const char *big = big_integer(sv);
        char *end;
        if (big && *big != '-') {
            errno = 0;
            r->seed = strtoull(big, &end, 10);
            if (errno || *end)
                return bad(c, "seed", "must be an integer between -2^63 and 2^64-1%s", NULL);
        } else if (json_is_integer(sv)) {
            r->seed = (uint64_t)json_integer_value(sv);
        } else {
            int64_t seed = 0;
            NC_TRY(get_int(c, root, "seed", -9.2e18, 1.8e19, &seed));
            r->seed = (uint64_t)seed;
        }
        r->has_seed = 1;
    }
    int64_t n = 1;
    NC_TRY(get_int(c, root, "n", 1, 1e9, &n));
    if (n != 1) return bad(c, "n", "must be 1 (one choice per request)%s", NULL);
    int64_t mt = -1;
    NC_TRY(get_int(c, root, "max_tokens", 1, 1e9, &mt));
    NC_TRY(get_int(c, root, "max_completion_tokens", 1, 1e9, &mt));
    r->max_tokens = (int)mt;
    return NC_OK;
}

static nc_status parse_logprobs(pctx *c, const json_t *root, serve_request *r) {
    json_t *lp = field(root, "logprobs");
    if (r->endpoint == SERVE_EP_COMPLETIONS) {
        /* Legacy completions: "logprobs": N asks for the chosen token plus N
         * alternatives (0..5). */
        int64_t n = -1;
        NC_TRY(get_int(c, root, "logprobs", 0, 5, &n));
        if (lp) {
            r->logprobs = 1;
            r->top_logprobs = (int)n;
        }
        return get_bool(c, root, "echo", &r->echo);
    }
    NC_TRY(get_bool(c, root, "logprobs", &r->logprobs));
    int64_t top = 0;
    NC_TRY(get_int(c, root, "top_logprobs", 0, SERVE_MAX_TOP_LOGPROBS, &top));
    if (top > 0 && !r->logprobs)
        return bad(c, "top_logprobs", "requires 'logprobs' to be true%s", NULL);
    r->top_logprobs = (int)top;
    return NC_OK;
}

static nc_status parse_stream(pctx *c, const json_t *root, serve_request *r) {
    NC_TRY(get_bool(c, root, "stream", &r->stream));
    NC_TRY(get_bool(c, root, "context_shift", &r->context_shift));
    json_t *so = field(root, "stream_options");
    if (so) {
        if (!json_is_object(so)) return bad(c, "stream_options", "must be an object%s", NULL);
        json_t *iu = field(so, "include_usage");
        if (iu && !json_is_boolean(iu))
            return bad(c, "stream_options.include_usage", "must be true or false%s", NULL);
        r->include_usage = iu && json_is_true(iu);
    }
    json_t *kw = field(root, "chat_template_kwargs");
    if (kw) {
        if (!json_is_object(kw)) return bad(c, "chat_template_kwargs", "must be an object%s", NULL);
        json_t *et = field(kw, "enable_thinking");
        if (et && !json_is_boolean(et))
            return bad(c, "chat_template_kwargs.enable_thinking", "must be true or false%s", NULL);
        if (et) r->enable_thinking = json_is_true(et);
        json_t *pt = field(kw, "preserve_thinking");
        if (pt && !json_is_boolean(pt))
            return bad(c, "chat_template_kwargs.preserve_thinking", "must be true or false%s",
                       NULL);
        if (pt) r->preserve_thinking = json_is_true(pt);
    }
    return NC_OK;
}

static nc_status parse_root(pctx *c, const json_t *root, serve_request *r) {
    if (!json_is_object(root)) return bad(c, "", "request body must be a JSON object%s", NULL);
    json_t *model = field(root, "model");
    if (model) NC_TRY(dup_string(c, model, "model", &r->model));
    if (r->endpoint == SERVE_EP_CHAT)
        NC_TRY(parse_messages(c, root, r));
    else
        NC_TRY(parse_prompt(c, root, r));
    NC_TRY(reject_unsupported(c, root));
    NC_TRY(parse_output(c, root, r));
    NC_TRY(parse_sampling(c, root, r));
    NC_TRY(parse_stop(c, root, r));
    NC_TRY(parse_logprobs(c, root, r));
    if (r->echo) return bad(c, "echo", "is not supported by this server%s", NULL);
    return parse_stream(c, root, r);
}

nc_status serve_request_parse(const char *body, size_t len, serve_endpoint endpoint,
                              serve_request *req, serve_parse_error *perr, nc_error *err) {
    memset(req, 0, sizeof *req);
    perr->param[0] = '\0';
    req->endpoint = endpoint;
    for (int i = 0; gen_param_at(i); i++) /* each parameter off until sent */
        req->sampling[i] = gen_param_at(i)->off;
    req->max_tokens = -1;
    req->enable_thinking = 1;
    req->context_shift = -1;
    pctx c = {perr, err};
    json_error_t je;
    size_t quoted_len = 0;
    char *quoted = quote_big_integers(body, len, &quoted_len);
    json_t *root = json_loadb(quoted ? quoted : body, quoted ? quoted_len : len,
                              JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    free(quoted);
    if (!root)
        return nc_fail(err, NC_ERR_FORMAT, "request body:%d:%d: invalid JSON: %s", je.line,
                       je.column, je.text);
    nc_status st = parse_root(&c, root, req);
    json_decref(root);
    if (st != NC_OK) {
        serve_request_free(req);
        req->endpoint = endpoint;
    }
    return st;
}

static void free_message(serve_message *m) {
    free(m->role);
    free(m->content);
    free(m->reasoning_content);
    for (size_t k = 0; k < m->n_tool_calls; k++) {
        free(m->tool_calls[k].name);
        free(m->tool_calls[k].arguments);
    }
    free(m->tool_calls);
}

void serve_request_drop_messages(serve_request *req, size_t first, size_t n) {
    for (size_t i = first; i < first + n; i++)
        free_message(&req->messages[i]);
    memmove(req->messages + first, req->messages + first + n,
            (req->n_messages - first - n) * sizeof *req->messages);
    req->n_messages -= n;
}

void serve_request_free(serve_request *req) {
    for (size_t i = 0; i < req->n_messages; i++)
        free_message(&req->messages[i]);
    gen_output_spec_free(&req->out);
    free(req->messages);
    free(req->prompt);
    free(req->prompt_ids);
    free(req->model);
    for (int i = 0; i < req->n_stop; i++)
        free(req->stop[i]);
    memset(req, 0, sizeof *req);
}
