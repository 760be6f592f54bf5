/* Builders for the OpenAI JSON shapes (see serve_respond.h). Chat logprobs
 * are {"content": [entries]}; legacy completions logprobs are the parallel
 * arrays tokens / token_logprobs / top_logprobs / text_offset. */
#include "serve/serve_respond.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *error_type(int status) {
    switch (status) {
    case 401:
        return "authentication_error";
    case 404:
        return "not_found_error";
    case 408:
    case 504:
        return "timeout_error";
    case 429:
        return "rate_limit_error";
    case 500:
        return "server_error";
    case 503:
        return "unavailable_error";
    default:
        return "invalid_request_error";
    }
}

static char *dump(json_t *o) {
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

char *serve_error_body(int http_status, const char *message, const char *param, const char *code) {
    json_t *err = json_object();
    /* A message may quote client bytes; jansson needs valid UTF-8, so a
     * message that is not becomes a generic one rather than nothing. */
    json_t *msg = json_string(message);
    if (!msg) msg = json_string("invalid request");
    json_object_set_new(err, "message", msg);
    json_object_set_new(err, "type", json_string(error_type(http_status)));
    json_object_set_new(err, "param", param && *param ? json_string(param) : json_null());
    json_object_set_new(err, "code", code ? json_string(code) : json_null());
    return dump(json_pack("{s:o}", "error", err));
}

static json_t *usage_json(const serve_usage *u) {
    json_t *o =
        json_pack("{s:i,s:i,s:i,s:{s:i}}", "prompt_tokens", u->prompt_tokens, "completion_tokens",
                  u->completion_tokens, "total_tokens", u->prompt_tokens + u->completion_tokens,
                  "prompt_tokens_details", "cached_tokens", u->cached_tokens);
    return o;
}

static json_t *timings_json(const serve_usage *u) {
    double per_s = u->predicted_ms > 0 ? 1000.0 * u->completion_tokens / u->predicted_ms : 0;
    return json_pack("{s:i,s:f,s:i,s:f,s:f,s:i,s:f}", "prompt_n", u->prompt_tokens, "prompt_ms",
                     u->prompt_ms, "predicted_n", u->completion_tokens, "predicted_ms",
                     u->predicted_ms, "predicted_per_second", per_s, "cache_n", u->cached_tokens,
                     "ttft_ms", u->ttft_ms);
}

/* Legacy completions logprobs from chat-shaped entries. */
static json_t *legacy_logprobs(json_t *entries) {
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    size_t i, off = 0;
    json_t *e;
    json_array_foreach(entries, i, e) {
        json_t *tok = json_object_get(e, "token");
        json_array_append(tokens, tok);
        json_array_append(lps, json_object_get(e, "logprob"));
        json_t *top = json_object(), *alt;
        size_t k;
        json_array_foreach(json_object_get(e, "top_logprobs"), k, alt) json_object_set(
            top, json_string_value(json_object_get(alt, "token")), json_object_get(alt, "logprob"));
        json_array_append_new(tops, top);
        json_array_append_new(offs, json_integer((json_int_t)off));
        off += json_string_length(tok);
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs",
                     tops, "text_offset", offs);
}

static json_t *logprobs_json(const serve_resp_id *rid, json_t *entries) {
    if (!entries) return json_null();
    if (rid->endpoint == SERVE_EP_COMPLETIONS) return legacy_logprobs(entries);
    return json_pack("{s:O}", "content", entries);
}

static json_t *base_object(const serve_resp_id *rid, int is_chunk) {
    const char *object = rid->endpoint == SERVE_EP_CHAT
                             ? (is_chunk ? "chat.completion.chunk" : "chat.completion")
                             : "text_completion";
    return json_pack("{s:s,s:s,s:I,s:s,s:s}", "id", rid->id, "object", object, "created",
                     (json_int_t)rid->created, "model", rid->model, "system_fingerprint", "nectar");
}

char *serve_response_full(const serve_resp_id *rid, const serve_delta *d, const char *finish_reason,
                          const serve_usage *u) {
    json_t *o = base_object(rid, 0);
    json_t *choice;
    if (rid->endpoint == SERVE_EP_CHAT) {
        json_t *msg = json_pack("{s:s,s:s%}", "role", "assistant", "content",
                                d->content ? d->content : "", d->content_len);
        /* With calls, blank text around them is no content (OpenAI: null). */
        size_t n_calls = json_array_size(d->tool_calls);
        if (n_calls) {
            json_object_set(msg, "tool_calls", d->tool_calls);
            size_t k = 0;
            while (k < d->content_len && strchr(" \n\r\t", d->content[k]))
                k++;
            if (k == d->content_len) json_object_set_new(msg, "content", json_null());
        }
        if (d->reasoning_len)
            json_object_set_new(msg, "reasoning_content",
                                json_stringn(d->reasoning, d->reasoning_len));
        choice = json_pack("{s:i,s:o}", "index", 0, "message", msg);
    } else {
        choice = json_pack("{s:i,s:s%}", "index", 0, "text", d->content ? d->content : "",
                           d->content_len);
    }
    json_object_set_new(choice, "logprobs", logprobs_json(rid, d->logprobs));
    json_object_set_new(choice, "finish_reason", json_string(finish_reason));
    json_object_set_new(o, "choices", json_pack("[o]", choice));
    json_object_set_new(o, "usage", usage_json(u));
    json_object_set_new(o, "timings", timings_json(u));
    return dump(o);
}

static char *sse(json_t *o) {
    char *j = dump(o);
    if (!j) return NULL;
    size_t n = strlen(j);
    char *s = malloc(n + 9);
    if (s) {
        memcpy(s, "data: ", 6);
        memcpy(s + 6, j, n);
        memcpy(s + 6 + n, "\n\n", 3);
    }
    free(j);
    return s;
}

char *serve_chunk(const serve_resp_id *rid, const serve_delta *d, int is_first,
                  const char *finish_reason) {
    json_t *o = base_object(rid, 1);
    json_t *choice;
    if (rid->endpoint == SERVE_EP_CHAT) {
        json_t *delta = json_object();
        if (is_first) json_object_set_new(delta, "role", json_string("assistant"));
        if (d && d->reasoning_len)
            json_object_set_new(delta, "reasoning_content",
                                json_stringn(d->reasoning, d->reasoning_len));
        if (d && (d->content_len || is_first))
            json_object_set_new(delta, "content",
                                json_stringn(d->content ? d->content : "", d->content_len));
        if (d && json_array_size(d->tool_calls)) {
            json_t *calls = json_array(), *c;
            size_t i;
            json_array_foreach(d->tool_calls, i, c) {
                json_t *one = json_deep_copy(c);
                json_object_set_new(one, "index", json_integer(d->first_call_index + (int)i));
                json_array_append_new(calls, one);
            }
            json_object_set_new(delta, "tool_calls", calls);
        }
        choice = json_pack("{s:i,s:o}", "index", 0, "delta", delta);
    } else {
        choice = json_pack("{s:i,s:s%}", "index", 0, "text", d && d->content ? d->content : "",
                           d ? d->content_len : 0);
    }
    json_object_set_new(choice, "logprobs", logprobs_json(rid, d ? d->logprobs : NULL));
    json_object_set_new(choice, "finish_reason",
                        finish_reason ? json_string(finish_reason) : json_null());
    json_object_set_new(o, "choices", json_pack("[o]", choice));
    return sse(o);
}

char *serve_usage_chunk(const serve_resp_id *rid, const serve_usage *u) {
    json_t *o = base_object(rid, 1);
    json_object_set_new(o, "choices", json_array());
    json_object_set_new(o, "usage", usage_json(u));
    json_object_set_new(o, "timings", timings_json(u));
    return sse(o);
}
