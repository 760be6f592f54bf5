/* Value visitor (see walk.h). A const op's `val` is visited once even
 * though its output variable also points at it. */
#include "mil/walk.h"

static void visit(const mil_value *v, const mil_op *op, mil_value_visitor fn, void *ctx,
                  int depth) {
    if (!v || depth > 64) return;
    fn(ctx, v, op);
    if (v->kind == MIL_VALUE_LIST || v->kind == MIL_VALUE_TUPLE || v->kind == MIL_VALUE_DICT) {
        size_t n = v->kind == MIL_VALUE_DICT ? 2 * v->n : v->n;
        for (size_t i = 0; i < n; i++)
            visit(v->items[i], op, fn, ctx, depth + 1);
    }
}

void mil_program_visit_values(const mil_program *prog, mil_value_visitor fn, void *ctx) {
    for (int i = 0; i < prog->n_attrs; i++)
        visit(prog->attrs[i].value, NULL, fn, ctx, 0);
    for (int f = 0; f < prog->n_functions; f++) {
        const mil_function *F = prog->functions[f];
        for (int i = 0; i < F->n_attrs; i++)
            visit(F->attrs[i].value, NULL, fn, ctx, 0);
        for (int k = 0; k < F->n_ops; k++) {
            const mil_op *op = F->ops[k];
            for (int a = 0; a < op->n_args; a++)
                for (int j = 0; j < op->args[a].n_items; j++) {
                    const mil_var *v = op->args[a].items[j];
                    if (!v->name) visit(v->cval, op, fn, ctx, 0); /* inline literal */
                }
            for (int a = 0; a < op->n_attrs; a++)
                visit(op->attrs[a].value, op, fn, ctx, 0);
        }
    }
}
