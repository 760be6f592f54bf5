/* Structural comparison of programs (see compare.h). Literal data compares
 * bit for bit, so an fp16 NaN payload or -0 that changes is a difference. */
#include "mil/compare.h"

#include <stdio.h>
#include <string.h>

static int streq(const char *a, const char *b) {
    return a == b || (a && b && !strcmp(a, b));
}

int mil_value_equal(const mil_value *a, const mil_value *b) {
    if (a == b) return 1;
    if (!a || !b || a->kind != b->kind || a->n != b->n || !mil_type_equal(a->type, b->type))
        return 0;
    switch (a->kind) {
    case MIL_VALUE_TENSOR:
        if (a->type->dtype == MIL_DT_STRING) {
            for (size_t i = 0; i < a->n; i++)
                if (strcmp(a->strs[i], b->strs[i])) return 0;
            return 1;
        }
        return !a->n || !memcmp(a->data, b->data, a->n * mil_dtype_storage_bytes(a->type->dtype));
    case MIL_VALUE_BLOB:
        return a->blob_offset == b->blob_offset && streq(a->blob_path, b->blob_path);
    case MIL_VALUE_DICT:
    case MIL_VALUE_LIST:
    case MIL_VALUE_TUPLE: {
        size_t n = a->kind == MIL_VALUE_DICT ? 2 * a->n : a->n;
        for (size_t i = 0; i < n; i++)
            if (!mil_value_equal(a->items[i], b->items[i])) return 0;
        return 1;
    }
    }
    return 0;
}

static int var_equal(const mil_var *a, const mil_var *b) {
    if (!streq(a->name, b->name)) return 0;
    if (!a->name) return mil_value_equal(a->cval, b->cval); /* inline literals */
    return mil_type_equal(a->type, b->type);
}

static int attrs_equal(const mil_attr *a, int na, const mil_attr *b, int nb, int ordered) {
    if (na != nb) return 0;
    for (int i = 0; i < na; i++) {
        const mil_attr *m = NULL;
        if (ordered)
            m = streq(a[i].name, b[i].name) ? &b[i] : NULL;
        else
            for (int j = 0; j < nb && !m; j++)
                if (streq(a[i].name, b[j].name)) m = &b[j];
        if (!m || !mil_value_equal(a[i].value, m->value)) return 0;
    }
    return 1;
}

static int op_equal(const mil_op *a, const mil_op *b, char *why, size_t n) {
    if (!streq(a->type, b->type) || !streq(a->opset, b->opset) || a->n_args != b->n_args ||
        a->n_outputs != b->n_outputs) {
        snprintf(why, n, "op %s vs %s: type, opset or counts differ", a->type, b->type);
        return 0;
    }
    for (int i = 0; i < a->n_args; i++) {
        const mil_arg *x = &a->args[i], *y = mil_op_arg(b, x->name);
        int ok = y && x->is_tuple == y->is_tuple && x->n_items == y->n_items;
        for (int j = 0; ok && j < x->n_items; j++)
            ok = var_equal(x->items[j], y->items[j]);
        if (!ok) {
            snprintf(why, n, "op %s: argument '%s' differs", a->type, x->name);
            return 0;
        }
    }
    if (!attrs_equal(a->attrs, a->n_attrs, b->attrs, b->n_attrs, 0)) {
        snprintf(why, n, "op %s: attributes differ", a->type);
        return 0;
    }
    for (int i = 0; i < a->n_outputs; i++)
        if (!var_equal(a->outputs[i], b->outputs[i])) {
            snprintf(why, n, "op %s: output %d differs", a->type, i);
            return 0;
        }
    return 1;
}

int mil_program_equal(const mil_program *a, const mil_program *b, char *why, size_t why_size) {
    char tmp[256];
    if (!why) {
        why = tmp;
        why_size = sizeof tmp;
    }
    why[0] = 0;
    if (!streq(a->version, b->version) ||
        !attrs_equal(a->attrs, a->n_attrs, b->attrs, b->n_attrs, 1) ||
        a->n_functions != b->n_functions) {
        snprintf(why, why_size, "program version, attributes or function count differ");
        return 0;
    }
    for (int f = 0; f < a->n_functions; f++) {
        const mil_function *x = a->functions[f], *y = b->functions[f];
        if (!streq(x->name, y->name) || !streq(x->opset, y->opset) || x->n_inputs != y->n_inputs ||
            x->n_ops != y->n_ops || x->n_outputs != y->n_outputs ||
            !attrs_equal(x->attrs, x->n_attrs, y->attrs, y->n_attrs, 1)) {
            snprintf(why, why_size, "function %s: header or counts differ", x->name);
            return 0;
        }
        for (int i = 0; i < x->n_inputs; i++)
            if (!var_equal(x->inputs[i], y->inputs[i])) {
                snprintf(why, why_size, "function %s: input %d differs", x->name, i);
                return 0;
            }
        for (int i = 0; i < x->n_ops; i++)
            if (!op_equal(x->ops[i], y->ops[i], why, why_size)) return 0;
        for (int i = 0; i < x->n_outputs; i++)
            if (!streq(x->outputs[i]->name, y->outputs[i]->name)) {
                snprintf(why, why_size, "function %s: output %d differs", x->name, i);
                return 0;
            }
    }
    return 1;
}
