/* The tool-call scanner (see serve_toolcall.h). A call's body must be a JSON
 * object with a string "name"; "arguments" (an object, or a string holding
 * JSON) becomes OpenAI's arguments string. Anything else between the tags
 * is passed on as text, tags included, so no output is ever lost. */
#include "serve/serve_toolcall.h"

#include <stdlib.h>
#include <string.h>

#include "serve/serve_policy.h"

#define OPEN_TAG "<tool_call>"
#define CLOSE_TAG "</tool_call>"

static const char *find(const char *s, size_t n, const char *tag) {
    size_t k = strlen(tag);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(s + i, tag, k)) return s + i;
    return NULL;
}

/* Length of the longest suffix of s[0..n) that is a proper prefix of tag. */
static size_t partial_tag(const char *s, size_t n, const char *tag) {
    size_t k = strlen(tag);
    for (size_t m = k - 1; m > 0; m--)
        if (m <= n && !memcmp(s + n - m, tag, m)) return m;
    return 0;
}

/* The call in body[0..n), or NULL when it is not one. */
static json_t *parse_call(const char *body, size_t n) {
    json_error_t je;
    json_t *o = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je);
    json_t *name = json_object_get(o, "name"), *args = json_object_get(o, "arguments");
    char *text = NULL;
    if (json_is_string(name) && (!args || json_is_object(args)))
        text = args ? json_dumps(args, JSON_COMPACT) : strdup("{}");
    else if (json_is_string(name) && json_is_string(args))
        text = strdup(json_string_value(args));
    char id[48];
    json_t *call = NULL;
    if (text && serve_make_id("call", id, sizeof id) == 0)
        call = json_pack("{s:s,s:s,s:{s:O,s:s}}", "id", id, "type", "function", "function", "name",
                         name, "arguments", text);
    free(text);
    json_decref(o);
    return call;
}

int serve_tool_scan_next(serve_tool_scan *st, const char *out, size_t len, int is_final,
                         serve_tool_news *news) {
    memset(news, 0, sizeof *news);
    news->calls = json_array();
    const char *p = out + st->pos;
    size_t n = len - st->pos;
    const char *open = find(p, n, OPEN_TAG);
    if (!open) { /* text, less what may be the start of a tag */
        size_t keep = is_final ? 0 : partial_tag(p, n, OPEN_TAG);
        news->text = p;
        news->text_len = n - keep;
        st->pos += news->text_len;
        return news->text_len > 0;
    }
    if (open > p) { /* the text before the call first */
        news->text = p;
        news->text_len = (size_t)(open - p);
        st->pos += news->text_len;
        return 1;
    }
    const char *body = p + strlen(OPEN_TAG);
    const char *close = find(body, n - strlen(OPEN_TAG), CLOSE_TAG);
    if (!close) {
        if (!is_final) return 0; /* wait for the end of the call */
        news->text = p;          /* unfinished: the model stopped inside it */
        news->text_len = n;
        st->pos = len;
        return 1;
    }
    size_t whole = (size_t)(close + strlen(CLOSE_TAG) - p);
    json_t *call = parse_call(body, (size_t)(close - body));
    if (call) {
        json_array_append_new(news->calls, call);
        st->n_calls++;
    } else {
        news->text = p;
        news->text_len = whole;
    }
    st->pos += whole;
    return 1;
}
