/* TemplateProcessing and its simpler relatives (see post_template.h). The
 * single template is flattened at load into the ids before $A and the ids
 * after it, so wrapping is two copies. */
#include "text/post_template.h"

#include <stdlib.h>
#include <string.h>

#include "text/spec.h"

#define MAX_SPECIAL 64

struct tok_template {
    int32_t before[MAX_SPECIAL], after[MAX_SPECIAL];
    size_t n_before, n_after;
    int has_sequence; /* the template names $A (else the text is dropped, as HF does) */
};

static nc_status push(tok_template *t, int32_t id, const char *what, nc_error *err) {
    int32_t *dst = t->has_sequence ? t->after : t->before;
    size_t *n = t->has_sequence ? &t->n_after : &t->n_before;
    if (*n == MAX_SPECIAL)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: post_processor adds more than %d tokens", what,
                       MAX_SPECIAL);
    if (id < 0) return nc_fail(err, NC_ERR_FORMAT, "%s: post_processor: negative token id", what);
    dst[(*n)++] = id;
    return NC_OK;
}

/* special_tokens[name].ids, in order. */
static nc_status push_special(tok_template *t, const json_t *specials, const char *name,
                              const char *what, nc_error *err) {
    const json_t *ids = json_object_get(json_object_get(specials, name), "ids");
    if (!json_is_array(ids))
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: post_processor: special token '%s' has no 'ids' in special_tokens",
                       what, name);
    for (size_t i = 0; i < json_array_size(ids); i++) {
        const json_t *v = json_array_get(ids, i);
        if (!json_is_integer(v))
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: post_processor: special token '%s': ids[%zu] "
                           "must be an integer",
                           what, name, i);
        NC_TRY(push(t, (int32_t)json_integer_value(v), what, err));
    }
    return NC_OK;
}

static nc_status parse_template(tok_template *t, const json_t *spec, const char *what,
                                nc_error *err) {
    const json_t *single = json_object_get(spec, "single");
    const json_t *specials = json_object_get(spec, "special_tokens");
    if (!json_is_array(single))
        return nc_fail(err, NC_ERR_FORMAT, "%s: TemplateProcessing needs a 'single' list", what);
    for (size_t i = 0; i < json_array_size(single); i++) {
        const json_t *piece = json_array_get(single, i);
        const json_t *sp = json_object_get(piece, "SpecialToken");
        const json_t *seq = json_object_get(piece, "Sequence");
        if (json_is_object(sp)) {
            const char *name = NULL;
            NC_TRY(nc_json_str(sp, "id", &name, 1, what, err));
            NC_TRY(push_special(t, specials, name, what, err));
        } else if (json_is_object(seq) && !t->has_sequence) {
            const char *id = NULL;
            NC_TRY(nc_json_str(seq, "id", &id, 1, what, err));
            if (strcmp(id, "A"))
                return nc_fail(err, NC_ERR_FORMAT,
                               "%s: TemplateProcessing single template names $%s, not $A", what,
                               id);
            t->has_sequence = 1;
        } else {
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: TemplateProcessing single[%zu] must be a SpecialToken or the one "
                           "Sequence",
                           what, i);
        }
    }
    return NC_OK;
}

/* BertProcessing / RobertaProcessing: "cls": ["[CLS]", id], "sep": [...]. */
static nc_status parse_pair_style(tok_template *t, const json_t *spec, const char *what,
                                  nc_error *err) {
    const json_t *cls = json_object_get(spec, "cls"), *sep = json_object_get(spec, "sep");
    if (!json_is_integer(json_array_get(cls, 1)) || !json_is_integer(json_array_get(sep, 1)))
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: post_processor needs 'cls' and 'sep' as "
                       "[token, id]",
                       what);
    NC_TRY(push(t, (int32_t)json_integer_value(json_array_get(cls, 1)), what, err));
    t->has_sequence = 1;
    return push(t, (int32_t)json_integer_value(json_array_get(sep, 1)), what, err);
}

/* One post-processor of the pipeline (text/spec.h walks the Sequences). */
static nc_status parse_leaf(void *ctx, const json_t *spec, const char *type, const char *what,
                            nc_error *err) {
    tok_template *t = ctx;
    if (!strcmp(type, "ByteLevel")) return NC_OK; /* offsets only */
    if (t->n_before || t->n_after || t->has_sequence)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: more than one post_processor adds special tokens", what);
    if (!strcmp(type, "TemplateProcessing")) return parse_template(t, spec, what, err);
    if (!strcmp(type, "BertProcessing") || !strcmp(type, "RobertaProcessing"))
        return parse_pair_style(t, spec, what, err);
    return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: post_processor type '%s' is not supported", what,
                   type);
}

nc_status tok_template_new(const json_t *spec, const char *what, tok_template **out,
                           nc_error *err) {
    *out = NULL;
    tok_template *t = calloc(1, sizeof *t);
    if (!t) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    nc_status st = tok_spec_walk(spec, "post_processor", "processors", parse_leaf, t, what, err);
    if (st != NC_OK) {
        free(t);
        return st;
    }
    if (!t->has_sequence && !t->n_before) t->has_sequence = 1; /* nothing to add */
    *out = t;
    return NC_OK;
}

void tok_template_free(tok_template *t) {
    free(t);
}

void tok_template_counts(const tok_template *t, size_t *before, size_t *after) {
    *before = t ? t->n_before : 0;
    *after = t ? t->n_after : 0;
}

nc_status tok_template_wrap(const tok_template *t, int32_t **ids, size_t *n, nc_error *err) {
    if (!t || (!t->n_before && !t->n_after && t->has_sequence)) return NC_OK;
    size_t body = t->has_sequence ? *n : 0, total = t->n_before + body + t->n_after;
    int32_t *out = malloc((total ? total : 1) * sizeof *out);
    if (!out) return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory");
    memcpy(out, t->before, t->n_before * sizeof *out);
    if (body) memcpy(out + t->n_before, *ids, body * sizeof *out);
    memcpy(out + t->n_before + body, t->after, t->n_after * sizeof *out);
    free(*ids);
    *ids = out;
    *n = total;
    return NC_OK;
}
