/* Constrained output for one request (see out_constraint.h): the schema
 * graph, the matcher's state, and the mask/accept hooks the generation
 * pipeline calls on the scheduler thread. A forced tool call is the schema
 * {"name": the tool, "arguments": its parameters} between the template's
 * tags (Qwen3.5: the literal start of the call, no graph); parameters the
 * matcher cannot enforce fall back to any object (the call still parses),
 * while a response_format schema it cannot enforce is refused. With
 * several tools to choose from (Qwen3, "required"), each tool is a
 * candidate of its own, "<tool_call>\n{"name": "NAME", "arguments": " as a
 * literal start, then its parameters: a token is allowed when some live
 * candidate allows it, and a candidate that refuses one drops out, so once
 * the name is written only that tool's parameters are left (the matcher
 * alone cannot branch on a value it has read). */
#include "gen/out_constraint.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"

#define TOOL_PREFIX "<tool_call>\n"
#define TOOL_SUFFIX "\n</tool_call>"

#define CALL_HEAD "<tool_call>\n{\"name\": "
#define CALL_ARGS ", \"arguments\": "
#define CALL_TAIL "}\n</tool_call>"

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

/* The schema of a call forced to one tool as JSON text (malloc'ed). */
static char *call_schema(const gen_output_spec *r, int with_parameters) {
    json_t *names = json_array(), *args = NULL;
    for (size_t i = 0; i < r->n_tools; i++) {
        int is_it =
            r->tool_choice == GEN_TOOLS_REQUIRED || !strcmp(r->tool_names[i], r->tool_choice_name);
        if (!is_it) continue;
        json_array_append_new(names, json_string(r->tool_names[i]));
        if (with_parameters && !args) args = tool_parameters(r->tools[i]);
    }
    if (!args) args = json_pack("{s:s}", "type", "object");
    json_t *schema =
        json_pack("{s:s,s:{s:{s:o},s:o},s:[s,s]}", "type", "object", "properties", "name", "enum",
                  names, "arguments", args, "required", "name", "arguments");
    char *text = schema ? json_dumps(schema, JSON_COMPACT) : NULL;
    json_decref(schema);
    return text;
}

/* The forced start of a Qwen3.5 call: the tool's name when only one can be
 * called (malloc'ed). */
static char *call_start35(const gen_output_spec *r) {
    const char *only = r->tool_choice == GEN_TOOLS_NAMED ? r->tool_choice_name
                       : r->n_tools == 1                 ? r->tool_names[0]
                                                         : NULL;
    size_t n = strlen(TOOL_PREFIX "<function=>\n") + (only ? strlen(only) : 0) + 1;
    char *p = malloc(n);
    if (p && only) snprintf(p, n, TOOL_PREFIX "<function=%s>\n", only);
    if (p && !only) snprintf(p, n, "%s", TOOL_PREFIX "<function=");
    return p;
}

static void candidate_free(candidate *k) {
    js_free(&k->g);
    free(k->prefix);
}

/* Tool i as a candidate of its own: its call's head (name included) as
 * literal bytes, its parameters as the graph (any object when the matcher
 * cannot enforce them), the call's end as the suffix. */
static nc_status tool_candidate(const gen_output_spec *r, size_t i, candidate *k, nc_error *err) {
    json_t *name = json_string(r->tool_names[i]);
    char *quoted = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    json_decref(name);
    size_t n = strlen(CALL_HEAD CALL_ARGS) + (quoted ? strlen(quoted) : 0) + 1;
    k->prefix = quoted ? malloc(n) : NULL;
    if (k->prefix) snprintf(k->prefix, n, "%s%s%s", CALL_HEAD, quoted, CALL_ARGS);
    free(quoted);
    if (!k->prefix) return nc_fail(err, NC_ERR_NOMEM, "request: out of memory");
    json_t *params = tool_parameters(r->tools[i]);
    char *schema = params ? json_dumps(params, JSON_COMPACT) : NULL;
    json_decref(params);
    nc_status st = schema ? js_compile(schema, "tools", &k->g, err) : NC_ERR_INVALID;
    free(schema);
    if (st != NC_OK) st = js_any_object(&k->g, err);
    if (st != NC_OK) return st;
    k->gr = (jm_grammar){&k->g, k->prefix, CALL_TAIL, strlen(k->prefix), strlen(CALL_TAIL)};
    jm_start(&k->gr, &k->st);
    k->is_live = 1;
    return NC_OK;
}

/* "required" with several tools (Qwen3): one candidate per tool. */
static nc_status tool_candidates(const gen_output_spec *r, const tm_vocab *v, gen_out_constraint *c,
                                 nc_error *err) {
    c->cand = calloc(r->n_tools, sizeof *c->cand);
    c->row = malloc(2 * (size_t)tm_vocab_n(v) * sizeof *c->row);
    if (!c->cand || !c->row) return nc_fail(err, NC_ERR_NOMEM, "request: out of memory");
    for (size_t i = 0; i < r->n_tools; i++) {
        c->n_cand++;
        NC_TRY(tool_candidate(r, i, &c->cand[i], err));
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
    if (forced && f != CHAT_QWEN35 && r->tool_choice == GEN_TOOLS_REQUIRED && r->n_tools > 1) {
        nc_status st = tool_candidates(r, v, c, err);
        if (st != NC_OK) {
            *param = "tools";
            gen_out_constraint_free(c);
            return st;
        }
        *param = NULL;
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
    k->gr.g = &k->g;
    k->gr.prefix = k->gr.suffix = "";
    nc_status st;
    if (forced && f == CHAT_QWEN35) {
        k->prefix = call_start35(r);
        st = k->prefix ? NC_OK : NC_ERR_NOMEM;
        k->gr.g = NULL;
        k->gr.prefix = k->prefix ? k->prefix : "";
    } else if (forced) {
        char *schema = call_schema(r, 1);
        st = schema ? js_compile(schema, "tools", &k->g, err) : NC_ERR_NOMEM;
        free(schema);
        if (st != NC_OK) { /* parameters it cannot enforce: any object as arguments */
            schema = call_schema(r, 0);
            st = schema ? js_compile(schema, "tools", &k->g, err) : NC_ERR_NOMEM;
            free(schema);
        }
        k->gr.prefix = TOOL_PREFIX;
        k->gr.suffix = TOOL_SUFFIX;
        *param = "tools";
    } else if (r->format == GEN_FORMAT_JSON_OBJECT) {
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
    k->gr.prefix_len = strlen(k->gr.prefix);
    k->gr.suffix_len = strlen(k->gr.suffix);
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
