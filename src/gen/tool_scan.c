/* The tool-call scanner (see tool_scan.h), by the family's call form
 * (text/chat_call_form.h). With tags (Qwen3, Qwen3.5) what is held back is
 * the same for both; only a call's body is read by family. Without tags (Llama 3)
 * a reply that may still be a call (blanks, then "{" or the lead token's
 * text) is held back whole until the output is complete, then read as one
 * call or passed on as text. A JSON body (Qwen3, Llama 3): an object with
 * a string "name"; the arguments member (Qwen3 "arguments", Llama 3
 * "parameters" or "arguments": an object, or a string holding a JSON
 * object) becomes OpenAI's arguments string.
 * Qwen3.5: <function=NAME> with <parameter=KEY> elements, each value
 * stripped of the one newline the template puts on either side and typed
 * by the tool's schema (tool_value.h: a string stays a string; a number,
 * boolean, null, object or array is read as JSON when the schema says so
 * and it parses; else it stays a string, as it does for unknown
 * parameters). Anything
 * else between the tags is passed on as text, tags included, so no output
 * is ever lost. */
#include "gen/tool_scan.h"

#include <stdlib.h>
#include <string.h>

#include "base/random_id.h"
#include "gen/tool_value.h"
#include "text/chat_call_form.h"
#include "text/chat_tojson.h"

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

/* OpenAI's call object for a name and an arguments text (NULL: none). */
static json_t *make_call(const char *name, const char *arguments) {
    char id[48];
    if (!arguments || nc_random_id("call", id, sizeof id) != 0) return NULL;
    return json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "type", "function", "function", "name",
                     name, "arguments", arguments);
}

/* Whether a JSON string's text is itself a JSON object: clients parse
 * OpenAI's arguments string as one, so any other text is no call. */
static int holds_object(const json_t *s) {
    json_error_t je;
    json_t *v =
        json_loadb(json_string_value(s), json_string_length(s), JSON_REJECT_DUPLICATES, &je);
    int ok = json_is_object(v);
    json_decref(v);
    return ok;
}

/* A JSON body: the arguments under the form's first key present. */
static json_t *parse_call_json(const chat_call_form *form, const char *body, size_t n) {
    json_error_t je;
    json_t *o = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je);
    json_t *name = json_object_get(o, "name"), *args = NULL;
    for (int k = 0; k < 2 && !args && form->args_keys[k]; k++)
        args = json_object_get(o, form->args_keys[k]);
    char *text = NULL;
    if (json_is_string(name) && (!args || json_is_object(args)))
        text = args ? json_dumps(args, JSON_COMPACT) : strdup("{}");
    else if (json_is_string(name) && json_is_string(args) && holds_object(args))
        text = strdup(json_string_value(args));
    json_t *call = text ? make_call(json_string_value(name), text) : NULL;
    free(text);
    json_decref(o);
    return call;
}

/* ---- Qwen3.5's XML body ---------------------------------------------------- */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_space(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

static int take(cursor *c, const char *lit) {
    size_t k = strlen(lit);
    if ((size_t)(c->end - c->p) < k || memcmp(c->p, lit, k) != 0) return 0;
    c->p += k;
    return 1;
}

/* "<tag=NAME>": NAME (1..256 bytes, no '<', '>' or newline) into out. */
/* tag, then a name up to '>' (no '<' or newline in it), as a new string:
 * any length, since a schema may name a key of any length and the
 * constraint then makes the model write it whole (NULL: not there). */
static char *take_named(cursor *c, const char *tag) {
    if (!take(c, tag)) return NULL;
    const char *s = c->p;
    while (c->p < c->end && *c->p != '>' && *c->p != '<' && *c->p != '\n')
        c->p++;
    size_t n = (size_t)(c->p - s);
    if (n == 0 || !take(c, ">")) return NULL;
    return strndup(s, n);
}

/* The parameters schema of the tool called name, or NULL (borrowed from
 * *defs, which the caller frees). */
static const json_t *tool_params(const gen_tool_scan *st, const char *name, json_t **def) {
    *def = NULL;
    for (size_t i = 0; i < st->n_tools; i++) {
        json_error_t je;
        json_t *t = json_loads(st->tools[i], 0, &je);
        json_t *f = json_object_get(t, "function");
        const char *tn = json_string_value(json_object_get(f, "name"));
        if (tn && !strcmp(tn, name)) {
            *def = t;
            return json_object_get(f, "parameters");
        }
        json_decref(t);
    }
    return NULL;
}

static json_t *parse_call_xml(const gen_tool_scan *st, const char *body, size_t n) {
    cursor c = {body, body + n};
    skip_space(&c);
    char *name = take_named(&c, "<function=");
    if (!name) return NULL;
    json_t *def, *args = json_object();
    const json_t *params = tool_params(st, name, &def);
    int ok = 0;
    for (;;) {
        skip_space(&c);
        if (take(&c, "</function>")) {
            skip_space(&c);
            ok = c.p == c.end;
            break;
        }
        char *key = take_named(&c, "<parameter=");
        if (!key) break;
        const char *v = c.p, *close = NULL;
        for (const char *q = v; q + 12 <= c.end && !close; q++)
            if (!memcmp(q, "</parameter>", 12)) close = q;
        int bad = !close || json_object_get(args, key); /* unclosed, or a key twice */
        if (!bad) {
            c.p = close + 12;
            size_t len = (size_t)(close - v);
            if (len && v[0] == '\n') v++, len--;
            if (len && v[len - 1] == '\n') len--;
            bad = json_object_set_new(args, key,
                                      gen_tool_value_read(gen_tool_value_type(params, key), v,
                                                          len)) != 0;
        }
        free(key);
        if (bad) break;
    }
    char *text = NULL;
    nc_error err;
    json_t *call = NULL;
    if (ok && chat_tojson(args, &text, &err) == NC_OK) call = make_call(name, text);
    free(text);
    free(name);
    json_decref(args);
    json_decref(def);
    return call;
}

/* The call in body[0..n), or NULL when it is not one. */
static json_t *parse_call(const gen_tool_scan *st, const chat_call_form *form, const char *body,
                          size_t n) {
    return form->body == CHAT_CALL_XML ? parse_call_xml(st, body, n)
                                       : parse_call_json(form, body, n);
}

/* ---- tagless: the whole reply is one call or none ----------------------- */

/* out[0..len) past blanks and the lead token's text; *is_open: that much
 * may still become a call (it is blank, a part of the lead, or starts
 * with "{"). */
static size_t call_start(const chat_call_form *form, const char *out, size_t len, int *is_open) {
    cursor c = {out, out + len};
    skip_space(&c);
    size_t left = (size_t)(c.end - c.p), k = form->lead ? strlen(form->lead) : 0;
    if (k && left < k && !memcmp(c.p, form->lead, left)) {
        *is_open = 1;
        return len;
    }
    if (k && take(&c, form->lead)) skip_space(&c);
    *is_open = c.p == c.end || *c.p == '{';
    return (size_t)(c.p - out);
}

static int scan_whole(gen_tool_scan *st, const chat_call_form *form, const char *out, size_t len,
                      int is_final, gen_tool_news *news) {
    if (st->pos == 0) { /* nothing passed on yet: may it be a call? */
        int is_open;
        size_t at = call_start(form, out, len, &is_open);
        if (is_open && !is_final) return 0; /* wait for the whole reply */
        json_t *call = is_open ? parse_call(st, form, out + at, len - at) : NULL;
        if (call) {
            json_array_append_new(news->calls, call);
            st->n_calls++;
            st->pos = len;
            return 1;
        }
    }
    news->text = out + st->pos; /* text, as it comes from here on */
    news->text_len = len - st->pos;
    st->pos = len;
    return news->text_len > 0;
}

int gen_tool_scan_next(gen_tool_scan *st, const char *out, size_t len, int is_final,
                       gen_tool_news *news) {
    memset(news, 0, sizeof *news);
    news->calls = json_array();
    const chat_call_form *form = chat_call_form_of(st->family);
    if (!*form->open) return scan_whole(st, form, out, len, is_final, news);
    const char *open_tag = form->open, *close_tag = form->close;
    const char *p = out + st->pos;
    size_t n = len - st->pos;
    const char *open = find(p, n, open_tag);
    if (!open) { /* text, less what may be the start of a tag */
        size_t keep = is_final ? 0 : partial_tag(p, n, open_tag);
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
    const char *body = p + strlen(open_tag);
    const char *close = find(body, n - strlen(open_tag), close_tag);
    if (!close) {
        if (!is_final) return 0; /* wait for the end of the call */
        news->text = p;          /* unfinished: the model stopped inside it */
        news->text_len = n;
        st->pos = len;
        return 1;
    }
    size_t whole = (size_t)(close + strlen(close_tag) - p);
    json_t *call = parse_call(st, form, body, (size_t)(close - body));
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
