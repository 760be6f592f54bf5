/* nc_chat_request: tools, tool_choice and response_format on the code the
 * server runs: the fields parsed by gen/output_spec.c, the constraint of
 * gen/out_constraint.c over the model's vocabulary (gen/token_mask.c), the
 * template's tool parts (text/chat.c) and the call scanner
 * (gen/tool_scan.c). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_chat_request.h"
#include "api/api_model.h"
#include "gen/out_constraint.h"
#include "gen/tool_scan.h"
#include "text/chat.h"
#include "text/chat_tojson.h"

struct nc_chat_request {
    const nc_model *m;
    chat_family family;
    gen_output_spec spec;
    tm_vocab *vocab;        /* when constrained */
    gen_out_constraint *oc; /* NULL: nothing constrained */
    gen_constraint hooks;
    gen_tool_scan scan;
};

NC_API nc_status nc_chat_request_new(const nc_model *m, const char *request_json,
                                     nc_chat_request **out, nc_error *err) {
    if (!m || !request_json || !out)
        return nc_fail(err, NC_ERR_INVALID, "nc_chat_request_new: NULL argument");
    *out = NULL;
    if (m->kind != NC_MODEL_DECODER)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "nc_chat_request_new: an encoder has no chat template or tools");
    json_error_t je;
    json_t *root = json_loads(request_json, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(root)) {
        json_decref(root);
        return root ? nc_fail(err, NC_ERR_INVALID, "request: must be a JSON object")
                    : nc_fail(err, NC_ERR_FORMAT, "request:%d:%d: invalid JSON: %s", je.line,
                              je.column, je.text);
    }
    nc_chat_request *r = calloc(1, sizeof *r);
    if (!r) {
        json_decref(root);
        return nc_fail(err, NC_ERR_NOMEM, "nc_chat_request_new: out of memory");
    }
    r->m = m;
    r->family = m->gm->e->family->chat;
    char param[96];
    nc_status st = gen_output_spec_parse(root, 1, &r->spec, param, sizeof param, err);
    json_decref(root);
    if (st == NC_OK && gen_output_spec_is_constrained(&r->spec)) {
        const gen_model *gm = m->gm;
        const char *p;
        st = tm_vocab_new(gm->tok, gm->e->n_vocab, gm->eos, gm->n_eos, &r->vocab, err);
        if (st == NC_OK)
            st = gen_out_constraint_new(&r->spec, r->family, r->vocab, &r->oc, &p, err);
        if (st == NC_OK && r->oc) r->hooks = gen_out_constraint_hooks(r->oc);
    }
    if (st != NC_OK) {
        nc_chat_request_free(r);
        return st;
    }
    nc_chat_request_restart(r);
    *out = r;
    return NC_OK;
}

NC_API void nc_chat_request_free(nc_chat_request *r) {
    if (!r) return;
    gen_out_constraint_free(r->oc);
    tm_vocab_free(r->vocab);
    gen_output_spec_free(&r->spec);
    free(r);
}

NC_API int nc_chat_request_is_constrained(const nc_chat_request *r) {
    return r && r->oc != NULL;
}

NC_API int nc_chat_request_uses_tools(const nc_chat_request *r) {
    return r && gen_output_spec_uses_tools(&r->spec);
}

NC_API void nc_chat_request_restart(nc_chat_request *r) {
    if (!r) return;
    if (r->oc) gen_out_constraint_restart(r->oc);
    r->scan = (gen_tool_scan){0, 0, r->family, (const char *const *)r->spec.tools, r->spec.n_tools};
}

const gen_constraint *api_chat_request_constraint(nc_chat_request *r) {
    if (!r || !r->oc) return NULL;
    gen_out_constraint_restart(r->oc);
    return &r->hooks;
}

/* One message's OpenAI tool_calls array into calls (names and arguments
 * borrowed from, or tojson text kept in, *keep). */
static nc_status read_calls(const char *json, size_t mi, chat_tool_call **calls, size_t *n,
                            json_t **keep, nc_error *err) {
    json_error_t je;
    json_t *a = json_loads(json, JSON_REJECT_DUPLICATES, &je);
    *keep = a;
    *calls = NULL;
    *n = 0;
    if (!json_is_array(a))
        return nc_fail(err, NC_ERR_INVALID, "'messages[%zu].tool_calls' must be a JSON array", mi);
    *calls = calloc(json_array_size(a) + 1, sizeof **calls);
    if (!*calls) return nc_fail(err, NC_ERR_NOMEM, "nc_chat_request_render: out of memory");
    size_t k;
    json_t *call;
    json_array_foreach(a, k, call) {
        json_t *f = json_object_get(call, "function");
        json_t *name = json_object_get(f, "name"), *args = json_object_get(f, "arguments");
        if (!json_is_string(name))
            return nc_fail(err, NC_ERR_INVALID,
                           "'messages[%zu].tool_calls[%zu].function' must be an object with a "
                           "string 'name'",
                           mi, k);
        const char *text = "{}";
        if (json_is_string(args)) {
            text = json_string_value(args);
        } else if (args && !json_is_null(args)) { /* an object: as the template's tojson */
            char *t;
            if (chat_tojson(args, &t, err) != NC_OK) return NC_ERR_NOMEM;
            json_object_set_new(f, "arguments", json_string(t)); /* kept alive by *keep */
            free(t);
            text = json_string_value(json_object_get(f, "arguments"));
        }
        (*calls)[k] = (chat_tool_call){json_string_value(name), text};
        *n = k + 1;
    }
    return NC_OK;
}

NC_API nc_status nc_chat_request_render(const nc_chat_request *r, const nc_chat_message *msgs,
                                        size_t n_msgs, const char *const *tool_calls,
                                        unsigned flags, char **out, nc_error *err) {
    if (!r || !msgs || !out)
        return nc_fail(err, NC_ERR_INVALID, "nc_chat_request_render: NULL argument");
    if (flags & ~(NC_CHAT_ADD_GENERATION_PROMPT | NC_CHAT_NO_THINKING))
        return nc_fail(err, NC_ERR_INVALID, "nc_chat_request_render: unknown flags 0x%x", flags);
    size_t n = n_msgs ? n_msgs : 1;
    chat_message *cm = calloc(n, sizeof *cm);
    chat_tool_call **calls = calloc(n, sizeof *calls);
    size_t *n_calls = calloc(n, sizeof *n_calls);
    json_t **keep = calloc(n, sizeof *keep);
    nc_status st = cm && calls && n_calls && keep
                       ? NC_OK
                       : nc_fail(err, NC_ERR_NOMEM, "nc_chat_request_render: out of memory");
    for (size_t i = 0; i < n_msgs && st == NC_OK; i++) {
        cm[i] = (chat_message){msgs[i].role, msgs[i].content, msgs[i].reasoning_content};
        if (tool_calls && tool_calls[i])
            st = read_calls(tool_calls[i], i, &calls[i], &n_calls[i], &keep[i], err);
    }
    if (st == NC_OK) {
        /* constrained output starts at once: the answer, not a think block */
        chat_options o = {(flags & NC_CHAT_ADD_GENERATION_PROMPT) != 0,
                          !(flags & NC_CHAT_NO_THINKING) && !r->oc, 0};
        chat_tools tools = {(const char *const *)r->spec.tools,
                            r->spec.tool_choice == GEN_TOOLS_NONE ? 0 : r->spec.n_tools,
                            (const chat_tool_call *const *)calls, n_calls};
        st = chat_render_family(r->family, cm, n_msgs, &o, &tools, out, err);
    }
    for (size_t i = 0; i < n_msgs && calls; i++) {
        free(calls[i]);
        json_decref(keep ? keep[i] : NULL);
    }
    free(cm);
    free(calls);
    free(n_calls);
    free(keep);
    return st;
}

NC_API nc_status nc_chat_request_scan(nc_chat_request *r, const char *text, size_t len,
                                      int is_final, char **content, char **calls, nc_error *err) {
    if (!r || (!text && len) || !content || !calls)
        return nc_fail(err, NC_ERR_INVALID, "nc_chat_request_scan: NULL argument");
    *content = NULL;
    *calls = NULL;
    if (len < r->scan.pos)
        return nc_fail(err, NC_ERR_INVALID,
                       "nc_chat_request_scan: the text is shorter than what was scanned (%zu < "
                       "%zu bytes): restart the request for a new output",
                       len, r->scan.pos);
    char *shown = malloc(len - r->scan.pos + 1);
    json_t *all = json_array();
    size_t n_shown = 0;
    gen_tool_news news;
    int is_nomem = !shown || !all;
    if (!gen_output_spec_uses_tools(&r->spec)) { /* all of it is content */
        if (shown) memcpy(shown, text + r->scan.pos, len - r->scan.pos);
        n_shown = len - r->scan.pos;
        r->scan.pos = len;
    } else {
        while (!is_nomem && gen_tool_scan_next(&r->scan, text ? text : "", len, is_final, &news)) {
            memcpy(shown + n_shown, news.text ? news.text : "", news.text_len);
            n_shown += news.text_len;
            is_nomem = !news.calls || json_array_extend(all, news.calls) != 0;
            json_decref(news.calls);
        }
        if (!is_nomem) json_decref(news.calls);
    }
    char *dumped = is_nomem ? NULL : json_dumps(all, JSON_COMPACT);
    json_decref(all);
    if (!dumped) {
        free(shown);
        return nc_fail(err, NC_ERR_NOMEM, "nc_chat_request_scan: out of memory");
    }
    shown[n_shown] = '\0';
    *content = shown;
    *calls = dumped;
    return NC_OK;
}
