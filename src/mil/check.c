/* The MIL checker's driver and generic checks: each op against the op table
 * (mil_op_validate: names, required and constant arguments, dtypes and type
 * variables per opset), its inferred output types against the declared ones,
 * every BLOBFILE reference against its weight file, and the function's
 * outputs. Each problem becomes one diagnostic with its line; checking goes
 * on after a problem so that one run reports them all. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mil/ane_rules.h"
#include "mil/check.h"
#include "mil/ops.h"

void mil_diag_add(mil_diagnostics *d, mil_severity sev, const char *rule, const char *source,
                  int line, const char *fmt, ...) {
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 16;
        mil_diag *p = realloc(d->items, (size_t)cap * sizeof *p);
        if (!p) return; /* out of memory: the diagnostic is dropped, counts stay right */
        d->items = p;
        d->cap = cap;
    }
    mil_diag *g = &d->items[d->n++];
    g->severity = sev;
    g->rule = rule;
    g->source = source;
    g->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->msg, sizeof g->msg, fmt, ap);
    va_end(ap);
    if (sev == MIL_SEV_ERROR)
        d->n_errors++;
    else
        d->n_warnings++;
}

void mil_diagnostics_print(const mil_diagnostics *d, FILE *f) {
    mil_diag *sorted = malloc((size_t)(d->n ? d->n : 1) * sizeof *sorted);
    const mil_diag *list = d->items;
    if (sorted && d->n) {
        memcpy(sorted, d->items, (size_t)d->n * sizeof *sorted);
        /* insertion sort: stable, so problems on one line keep their order */
        for (int i = 1; i < d->n; i++) {
            mil_diag key = sorted[i];
            int j = i - 1;
            while (j >= 0 && sorted[j].line > key.line) {
                sorted[j + 1] = sorted[j];
                j--;
            }
            sorted[j + 1] = key;
        }
        list = sorted;
    }
    for (int i = 0; i < d->n; i++) {
        const mil_diag *g = &list[i];
        fprintf(f, "%s:%d: %s: %s [%s]\n", g->source ? g->source : "<program>", g->line,
                g->severity == MIL_SEV_ERROR ? "error" : "warning", g->msg, g->rule);
    }
    free(sorted);
}

void mil_diagnostics_free(mil_diagnostics *d) {
    free(d->items);
    memset(d, 0, sizeof *d);
}

int mil_check_rule_listed(const char *list, const char *rule) {
    size_t n = strlen(rule);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, rule, n)) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

/* Every BLOBFILE value must resolve: file present, record sentinel, dtype
 * code and size agreeing with the declared type. */
static void check_blob_value(const mil_program *prog, const mil_value *v, int line,
                             mil_diagnostics *d) {
    if (!v) return;
    if (v->kind == MIL_VALUE_BLOB) {
        const uint8_t *bytes;
        size_t n;
        nc_error err;
        if (mil_value_bytes(prog, v, &bytes, &n, &err) != NC_OK)
            mil_diag_add(d, MIL_SEV_ERROR, "blob", prog->source, line, "%s", err.msg);
        return;
    }
    if (v->kind == MIL_VALUE_LIST || v->kind == MIL_VALUE_TUPLE)
        for (size_t i = 0; i < v->n; i++)
            check_blob_value(prog, v->items[i], line, d);
}

static void check_op(mil_program *prog, const mil_op *op, mil_diagnostics *d) {
    nc_error err;
    char label[200], decl[200], inf[200];
    const char *src = prog->source;
    for (int a = 0; a < op->n_attrs; a++)
        check_blob_value(prog, op->attrs[a].value, op->line, d);
    for (int a = 0; a < op->n_args; a++)
        for (int j = 0; j < op->args[a].n_items; j++) {
            const mil_var *v = op->args[a].items[j];
            if (!v->name) check_blob_value(prog, v->cval, op->line, d); /* inline literal */
        }
    if (!op->def) {
        mil_op_validate(op, &err); /* says "unknown op type" or which opset it needs */
        mil_diag_add(d, MIL_SEV_ERROR, "op", src, op->line, "%s", err.msg);
        return;
    }
    if (mil_op_validate(op, &err) != NC_OK) {
        mil_diag_add(d, MIL_SEV_ERROR, "arg", src, op->line, "%s", err.msg);
        return;
    }
    mil_infer_out out;
    out.n = 0;
    if (op->def->infer(prog, op, &out, &err) != NC_OK) {
        mil_diag_add(d, MIL_SEV_ERROR, "type", src, op->line, "%s", err.msg);
        return;
    }
    if (out.n != op->n_outputs) {
        mil_diag_add(d, MIL_SEV_ERROR, "type", src, op->line,
                     "%s: declares %d outputs, the op has %d",
                     mil_op_label(op, label, sizeof label), op->n_outputs, out.n);
        return;
    }
    for (int k = 0; k < out.n; k++) {
        const mil_type *dt = op->outputs[k]->type;
        if (!out.types[k] || !dt || mil_type_compatible(out.types[k], dt)) continue;
        mil_diag_add(d, MIL_SEV_ERROR, "type", src, op->line,
                     "%s: output '%s' is declared %s but the op gives %s",
                     mil_op_label(op, label, sizeof label),
                     op->outputs[k]->name ? op->outputs[k]->name : "?",
                     mil_type_str(dt, decl, sizeof decl),
                     mil_type_str(out.types[k], inf, sizeof inf));
    }
}

static void check_function(mil_program *prog, const mil_function *fn, const mil_check_options *opt,
                           const mil_ane_profile *profile, mil_diagnostics *d) {
    if (mil_opset_version(fn->opset) == 0)
        mil_diag_add(d, MIL_SEV_ERROR, "opset", prog->source, fn->line,
                     "function '%s': unknown opset '%s'", fn->name, fn->opset ? fn->opset : "");
    for (int k = 0; k < fn->n_ops; k++)
        check_op(prog, fn->ops[k], d);
    if (fn->n_outputs == 0)
        mil_diag_add(d, MIL_SEV_ERROR, "function", prog->source, fn->line,
                     "function '%s' returns nothing", fn->name);
    for (int i = 0; i < fn->n_outputs; i++)
        for (int j = 0; j < i; j++)
            if (fn->outputs[i] == fn->outputs[j])
                mil_diag_add(d, MIL_SEV_ERROR, "function", prog->source, fn->line,
                             "function '%s' returns '%s' twice", fn->name, fn->outputs[i]->name);
    if (opt && opt->target_ane) mil_ane_check_function(prog, fn, opt->skip_rules, profile, d);
}

nc_status mil_check_strict(const mil_program *prog, int target_ane, nc_error *err) {
    mil_diagnostics d = {0};
    mil_check_options opt = {target_ane, NULL, NULL};
    NC_TRY(mil_check_program(prog, &opt, &d, err));
    nc_status st = NC_OK;
    for (int i = 0; i < d.n; i++)
        if (d.items[i].severity == MIL_SEV_ERROR) {
            const mil_diag *g = &d.items[i];
            st = nc_fail(err, NC_ERR_FORMAT, "%d error%s; first: %s:%d: %s [%s]", d.n_errors,
                         d.n_errors == 1 ? "" : "s", g->source ? g->source : "<program>", g->line,
                         g->msg, g->rule);
            break;
        }
    mil_diagnostics_free(&d);
    return st;
}

nc_status mil_check_program(const mil_program *prog, const mil_check_options *opt,
                            mil_diagnostics *diags, nc_error *err) {
    return mil_check_program_profile(prog, opt, NULL, diags, err);
}

nc_status mil_check_program_profile(const mil_program *prog, const mil_check_options *opt,
                                    const mil_ane_profile *profile, mil_diagnostics *diags,
                                    nc_error *err) {
    /* Inference allocates the types it infers in the program's arena (a cache
     * the program owns); the program itself is not changed. */
    mil_program *p = (mil_program *)prog;
    int found = 0;
    for (int f = 0; f < prog->n_functions; f++) {
        const mil_function *fn = prog->functions[f];
        if (opt && opt->function && strcmp(opt->function, fn->name)) continue;
        found = 1;
        check_function(p, fn, opt, profile, diags);
    }
    if (opt && opt->function && !found)
        return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no function '%s'",
                       prog->source ? prog->source : "program", opt->function);
    if (prog->n_functions == 0)
        mil_diag_add(diags, MIL_SEV_ERROR, "program", prog->source, 0, "program has no functions");
    return NC_OK;
}
