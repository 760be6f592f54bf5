/* Constrained output for one request (see out_constraint.h): the schema
 * graph, the matcher's state, and the mask/accept hooks the generation
 * pipeline calls on the scheduler thread. A forced tool call is one
 * candidate per tool that may be called, in the family's call form
 * (text/chat_call_form.h): the call's start up to and with the tool's name
 * as literal bytes, then its parameters, then the call's end. Qwen3:
 * "<tool_call>\n{"name": "NAME", "arguments": " PARAMETERS "}\n
 * </tool_call>", PARAMETERS as JSON; Llama 3: "{"name": "NAME",
 * "parameters": " PARAMETERS "}". Qwen3.5: "<tool_call>\n<function=NAME>\n",
 * the parameters in the XML form (json_match.h: xml_root), then
 * "\n</tool_call>"; a tool whose parameters that form cannot hold exactly
 * gets its literal start only. A token is allowed when some live
 * candidate allows it, and a candidate that refuses one drops out, so once
 * the name is written only that tool's parameters are left (the matcher
 * alone cannot branch on a value it has read). Parameters with keywords
 * the matcher cannot enforce are enforced without those keywords
 * (js_compile_relaxed), and any object as the last resort (the call still
 * parses); a response_format schema it cannot enforce is refused. */
#include "gen/out_constraint.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "text/chat_call_form.h"

/* One possible output: a graph between literal bytes, and the matcher's
 * state in it. */
typedef struct candidate {
    js_graph g;
    jm_grammar gr;
    char *prefix; /* owned: a Qwen3.5 call's start, or a named call's head */
    jm_state st;
    int is_live;
} candidate;

struct gen_out_constraint {
    candidate *cand;
    int n_cand;
    float *row; /* a logits row per candidate while several live */
    const tm_vocab *v;
    double mask_s;
    long n_masks;
};

/* The tool's function.parameters from its tojson text, or NULL. */
static json_t *tool_parameters(const char *tool_json) {
    json_error_t je;
    json_t *t = json_loads(tool_json, 0, &je);
    json_t *p = json_object_get(json_object_get(t, "function"), "parameters");
    if (p) json_incref(p);
    json_decref(t);
    return p;
}

static void candidate_free(candidate *k) {
    js_free(&k->g);
    free(k->prefix);
}

/* The literal start of a call to tool i, up to the parameters: the name
 * as is in an XML body, as a JSON string in a JSON one. */
static char *call_head(const gen_output_spec *r, size_t i, const chat_call_form *form) {
    const char *name = r->tool_names[i];
    char *quoted = NULL;
    if (form->body == CHAT_CALL_JSON) {
        json_t *js = json_string(name);
        quoted = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
        json_decref(js);
        if (!quoted) return NULL;
        name = quoted;
    }
    size_t n = strlen(form->head) + strlen(name) + strlen(form->mid) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s%s%s", form->head, name, form->mid);
    free(quoted);
    return p;
}

/* Tool i as a candidate of its own: its call's head (name included) as
 * literal bytes, its parameters as the graph, the call's end as the
 * suffix. */
static nc_status tool_candidate(const gen_output_spec *r, size_t i, chat_family f, candidate *k,
                                nc_error *err) {
    const chat_call_form *form = chat_call_form_of(f);
    int is_xml_body = form->body == CHAT_CALL_XML;
    k->prefix = call_head(r, i, form);
    if (!k->prefix) return nc_fail(err, NC_ERR_NOMEM, "request: out of memory");
    json_t *params = tool_parameters(r->tools[i]);
    char *schema = params ? json_dumps(params, JSON_COMPACT) : NULL;
    json_decref(params);
    nc_status st = schema ? js_compile(schema, "tools", &k->g, err) : NC_ERR_INVALID;
    if (st != NC_OK && schema) st = js_compile_relaxed(schema, "tools", &k->g, err);
    int held = is_xml_body && st == NC_OK ? js_xml_call_form(&k->g, schema) : 0;
    int xml = held == 1;
    free(schema);
    if (held < 0) return nc_fail(err, NC_ERR_NOMEM, "request: out of memory");
    const char *tail = form->tail;
    if (is_xml_body && !xml) { /* the literal start, then the model's own text */
        if (st == NC_OK) js_free(&k->g);
        memset(&k->g, 0, sizeof k->g);
        k->gr = (jm_grammar){NULL, k->prefix, "", strlen(k->prefix), 0, 0};
    } else {
        if (st != NC_OK) st = js_any_object(&k->g, err);
        if (st != NC_OK) return st;
        k->gr = (jm_grammar){&k->g, k->prefix, tail, strlen(k->prefix), strlen(tail), xml};
    }
    jm_start(&k->gr, &k->st);
    k->is_live = 1;
    return NC_OK;
}

/* A forced call: one candidate per tool it may name. */
static nc_status tool_candidates(const gen_output_spec *r, chat_family f, const tm_vocab *v,
                                 gen_out_constraint *c, nc_error *err) {
    c->cand = calloc(r->n_tools, sizeof *c->cand);
    c->row = malloc(2 * (size_t)tm_vocab_n(v) * sizeof *c->row);
    if (!c->cand || !c->row) return nc_fail(err, NC_ERR_NOMEM, "request: out of memory");
    for (size_t i = 0; i < r->n_tools; i++) {
        if (r->tool_choice == GEN_TOOLS_NAMED && strcmp(r->tool_names[i], r->tool_choice_name))
            continue;
        NC_TRY(tool_candidate(r, i, f, &c->cand[c->n_cand++], err));
    }
    return NC_OK;
}

nc_status gen_out_constraint_new(const gen_output_spec *r, chat_family f, const tm_vocab *v,
                               gen_out_constraint **out, const char **param, nc_error *err) {
    *out = NULL;
    *param = NULL;
    int forced = r->n_tools > 0 &&
                 (r->tool_choice == GEN_TOOLS_REQUIRED || r->tool_choice == GEN_TOOLS_NAMED);
    if (!forced && r->format == GEN_FORMAT_TEXT) return NC_OK;
    if (forced && r->format != GEN_FORMAT_TEXT) {
        *param = "response_format";
        return nc_fail(err, NC_ERR_INVALID,
                       "'response_format' cannot be combined with a forced tool call");
    }
    gen_out_constraint *c = calloc(1, sizeof *c);
    if (!c) return nc_fail(err, NC_ERR_NOMEM, "request: out of memory");
    c->v = v;
    if (forced) {
        nc_status st = tool_candidates(r, f, v, c, err);
        if (st != NC_OK) {
            *param = "tools";
            gen_out_constraint_free(c);
            return st;
        }
        *out = c;
        return NC_OK;
    }
    c->cand = calloc(1, sizeof *c->cand);
    if (!c->cand) {
        free(c);
        return nc_fail(err, NC_ERR_NOMEM, "request: out of memory");
    }
    c->n_cand = 1;
    candidate *k = c->cand;
    k->is_live = 1;
    k->gr = (jm_grammar){&k->g, "", "", 0, 0, 0};
    nc_status st;
    if (r->format == GEN_FORMAT_JSON_OBJECT) {
        st = js_any_object(&k->g, err);
    } else {
        st = js_compile(r->schema, "response_format.json_schema.schema", &k->g, err);
        *param = "response_format.json_schema.schema";
    }
    if (st != NC_OK) {
        if (st == NC_ERR_NOMEM) nc_fail(err, NC_ERR_NOMEM, "request: out of memory");
        gen_out_constraint_free(c);
        return st;
    }
    jm_start(&k->gr, &k->st);
    *param = NULL;
    *out = c;
    return NC_OK;
}

void gen_out_constraint_free(gen_out_constraint *c) {
    if (!c) return;
    for (int i = 0; i < c->n_cand; i++)
        candidate_free(&c->cand[i]);
    free(c->cand);
    free(c->row);
    free(c);
}

/* Several live candidates: a token stays when one of them allows it.
 * row holds the logits as they came, then one candidate's masked copy. */
static void mask_union(gen_out_constraint *c, float *logits) {
    int n = tm_vocab_n(c->v);
    float *orig = c->row, *one = c->row + n;
    memcpy(orig, logits, (size_t)n * sizeof *logits);
    for (int j = 0; j < n; j++)
        logits[j] = -INFINITY;
    for (int i = 0; i < c->n_cand; i++) {
        candidate *k = &c->cand[i];
        if (!k->is_live) continue;
        memcpy(one, orig, (size_t)n * sizeof *one);
        tm_mask(c->v, &k->gr, &k->st, one);
        for (int j = 0; j < n; j++)
            if (one[j] != -INFINITY) logits[j] = orig[j];
    }
}

static void mask(void *user, float *logits) {
    gen_out_constraint *c = user;
    int n_live = 0, last = -1;
    for (int i = 0; i < c->n_cand; i++)
        if (c->cand[i].is_live) n_live++, last = i;
    if (n_live == 0) return;
    candidate *k = &c->cand[last];
    if (n_live == 1 && k->st.stage == JM_STAGE_FREE)
        return; /* past a forced start: the model's own choice */
    double t0 = nc_now_s();
    if (n_live == 1)
        tm_mask(c->v, &k->gr, &k->st, logits);
    else
        mask_union(c, logits);
    c->mask_s += nc_now_s() - t0;
    c->n_masks++;
}

static void accept(void *user, int32_t token) {
    gen_out_constraint *c = user;
    int n_live = 0;
    for (int i = 0; i < c->n_cand; i++) {
        candidate *k = &c->cand[i];
        if (!k->is_live) continue;
        jm_state before;
        jm_copy(&before, &k->st);
        k->is_live = tm_accept(c->v, &k->gr, &k->st, token);
        if (!k->is_live) jm_copy(&k->st, &before);
        n_live += k->is_live;
    }
    /* A token no candidate took (the sampler ignored the mask): keep them
     * all, as the single-candidate path keeps its state. */
    if (!n_live)
        for (int i = 0; i < c->n_cand; i++)
            c->cand[i].is_live = 1;
}

void gen_out_constraint_restart(gen_out_constraint *c) {
    for (int i = 0; i < c->n_cand; i++) {
        jm_start(&c->cand[i].gr, &c->cand[i].st);
        c->cand[i].is_live = 1;
    }
}

gen_constraint gen_out_constraint_hooks(gen_out_constraint *c) {
    return (gen_constraint){mask, accept, c};
}

void gen_out_constraint_cost(const gen_out_constraint *c, double *mask_s, long *n_masks) {
    *mask_s = c->mask_s;
    *n_masks = c->n_masks;
}
