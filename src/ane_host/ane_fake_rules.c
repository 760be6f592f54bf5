/* The fake device's rules and settings (ane_fake_rules.h). */
#include "ane_host/ane_fake_rules.h"

#include <stddef.h>
#include <string.h>

#include "mil/ane_rules.h"

typedef struct rule_row {
    const char *name;
    unsigned bit;
    const char *what; /* for --ane-device help */
} rule_row;

static const rule_row RULES[] = {
    {"gather", ANE_REJECT_GATHER, "any gather op (ironmill's op matrix marks gather rejected)"},
    {"multi-function", ANE_REJECT_MULTI_FUNCTION,
     "a program of more than one function (maderix/ANE, Orion, ironmill use one main)"},
    {"mixed-shapes", ANE_REJECT_MIXED_SHAPES,
     "functions of one program whose I/O differ in names or shapes (a probe saw "
     "InvalidProcedure)"},
    {"multi-output", ANE_REJECT_MULTI_OUTPUT,
     "a function with more than one output (a public runtime refuses them)"},
    {"elementwise-only", ANE_REJECT_ELEMENTWISE_ONLY,
     "a function with no conv or matmul (ane-bridge-rs: refused at load)"},
    {"broadcast-matmul", ANE_REJECT_BROADCAST_MATMUL,
     "a matmul whose operands differ in batch dims (GQA by broadcast)"},
    {"wide-conv", ANE_REJECT_WIDE_CONV,
     "a conv of more than 16,384 output channels (Anemll, ironmill stay below)"},
    {"palettized", ANE_REJECT_PALETTIZED,
     "palettized weights, constexpr_lut_to_dense (no public runtime reports them on the ANE "
     "for these shapes)"},
};
#define N_RULES (sizeof RULES / sizeof RULES[0])

static const struct {
    const char *name;
    size_t off;
    const char *what;
} FLAGS[] = {
    {"shuffle-status", offsetof(ane_fake_behaviour, shuffle_status),
     "NetworkStatusList entries in another order than ANEFModelProcedures"},
    {"nameless-status", offsetof(ane_fake_behaviour, nameless_status),
     "NetworkStatusList entries without Name"},
    {"padded-strides", offsetof(ane_fake_behaviour, padded_strides),
     "surfaces with rows 64 bytes wider than packed, as RowStride reports"},
};
#define N_FLAGS (sizeof FLAGS / sizeof FLAGS[0])

void ane_fake_behaviour_help(FILE *f) {
    fprintf(f, "--ane-device fake[:SETTING[:SETTING...]], settings:\n"
               "  reject=RULE[,RULE...]  refuse at compile time (as ANECCompile() FAILED)\n"
               "                         the programs with these constructs; RULE is one of:\n");
    for (size_t i = 0; i < N_RULES; i++)
        fprintf(f, "    %-18s %s\n", RULES[i].name, RULES[i].what);
    fprintf(f, "    %-18s every rule above\n", "all");
    for (size_t i = 0; i < N_FLAGS; i++)
        fprintf(f, "  %-22s %s\n", FLAGS[i].name, FLAGS[i].what);
}

/* Calls item(s, len, o, err) for each sep-separated item of the len
 * bytes at text. */
typedef nc_status (*item_fn)(const char *s, size_t len, ane_fake_behaviour *o, nc_error *err);
static nc_status each_item(const char *text, size_t len, char sep, item_fn item,
                           ane_fake_behaviour *o, nc_error *err) {
    const char *p = text, *end = text + len;
    while (p <= end) {
        const char *c = memchr(p, sep, (size_t)(end - p));
        if (!c) c = end;
        NC_TRY(item(p, (size_t)(c - p), o, err));
        p = c + 1;
    }
    return NC_OK;
}

/* One rule name of a reject= list (len bytes of s). */
static nc_status add_rule(const char *s, size_t len, ane_fake_behaviour *o, nc_error *err) {
    if (len == 3 && !strncmp(s, "all", 3)) {
        o->reject |= ANE_REJECT_ALL;
        return NC_OK;
    }
    for (size_t i = 0; i < N_RULES; i++)
        if (strlen(RULES[i].name) == len && !strncmp(s, RULES[i].name, len)) {
            o->reject |= RULES[i].bit;
            return NC_OK;
        }
    return nc_fail(err, NC_ERR_INVALID,
                   "--ane-device fake: reject=%.*s is not a rule (gather, multi-function, "
                   "mixed-shapes, multi-output, elementwise-only, broadcast-matmul, wide-conv, "
                   "palettized, all; --ane-device help lists them)",
                   (int)len, s);
}

static nc_status parse_setting(const char *s, size_t len, ane_fake_behaviour *o, nc_error *err) {
    if (len > 7 && !strncmp(s, "reject=", 7))
        return each_item(s + 7, len - 7, ',', add_rule, o, err);
    for (size_t i = 0; i < N_FLAGS; i++)
        if (strlen(FLAGS[i].name) == len && !strncmp(s, FLAGS[i].name, len)) {
            *(int *)((char *)o + FLAGS[i].off) = 1;
            return NC_OK;
        }
    return nc_fail(err, NC_ERR_INVALID,
                   "--ane-device fake: '%.*s' is not a setting (reject=RULE[,RULE...], "
                   "shuffle-status, nameless-status, padded-strides; --ane-device help)",
                   (int)len, s);
}

nc_status ane_fake_behaviour_parse(const char *text, ane_fake_behaviour *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    if (!text || !*text) return NC_OK;
    return each_item(text, strlen(text), ':', parse_setting, out, err);
}

/* --- the checks ----------------------------------------------------------- */

static nc_status refuse(nc_error *err, const char *rule, const char *kind, const char *fn,
                        const char *detail) {
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "compileModel: ANECCompile() FAILED <- %s: function '%s': %s (fake device: "
                   "reject=%s)",
                   kind, fn, detail, rule);
}

static int same_type(const mil_type *a, const mil_type *b) {
    if (!a || !b || a->rank != b->rank || a->dtype != b->dtype) return a == b;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

static int same_ios(mil_var *const *a, int na, mil_var *const *b, int nb) {
    if (na != nb) return 0;
    for (int i = 0; i < na; i++)
        if (strcmp(a[i]->name, b[i]->name) || !same_type(a[i]->type, b[i]->type)) return 0;
    return 1;
}

static const mil_type *tensor_type(const mil_var *v) {
    return v && v->type && v->type->kind == MIL_TYPE_TENSOR ? v->type : NULL;
}

/* A matmul whose operands' batch dims (all but the last two) differ. */
static int is_broadcast_matmul(const mil_op *op) {
    const mil_type *x = tensor_type(mil_op_input(op, "x")), *y = tensor_type(mil_op_input(op, "y"));
    if (!x || !y) return 0;
    if (x->rank != y->rank) return x->rank > 2 || y->rank > 2;
    for (int i = 0; i + 2 < x->rank; i++)
        if (x->dims[i] != y->dims[i]) return 1;
    return 0;
}

static int64_t conv_out_channels(const mil_op *op) {
    const mil_type *t = op->n_outputs ? tensor_type(op->outputs[0]) : NULL;
    return t && t->rank >= 2 ? t->dims[1] : 0;
}

static nc_status check_ops(const mil_function *fn, unsigned reject, nc_error *err) {
    char d[200];
    for (int k = 0; k < fn->n_ops; k++) {
        const mil_op *op = fn->ops[k];
        const char *out = op->n_outputs && op->outputs[0]->name ? op->outputs[0]->name : "?";
        if ((reject & ANE_REJECT_GATHER) && !strncmp(op->type, "gather", 6)) {
            snprintf(d, sizeof d, "unsupported op %s ('%s')", op->type, out);
            return refuse(err, "gather", "InvalidMILProgram", fn->name, d);
        }
        if ((reject & ANE_REJECT_BROADCAST_MATMUL) && !strcmp(op->type, "matmul") &&
            is_broadcast_matmul(op)) {
            snprintf(d, sizeof d, "matmul '%s' broadcasts over batch dims", out);
            return refuse(err, "broadcast-matmul", "CompilationFailure", fn->name, d);
        }
        if ((reject & ANE_REJECT_PALETTIZED) && !strcmp(op->type, "constexpr_lut_to_dense")) {
            snprintf(d, sizeof d, "unsupported op constexpr_lut_to_dense ('%s')", out);
            return refuse(err, "palettized", "InvalidMILProgram", fn->name, d);
        }
        int64_t ch = !strcmp(op->type, "conv") ? conv_out_channels(op) : 0;
        if ((reject & ANE_REJECT_WIDE_CONV) && ch > ANE_FAKE_WIDE_CONV) {
            snprintf(d, sizeof d, "conv of %lld channels ('%s') exceeds %d", (long long)ch, out,
                     ANE_FAKE_WIDE_CONV);
            return refuse(err, "wide-conv", "CompilationFailure", fn->name, d);
        }
    }
    return NC_OK;
}

nc_status ane_fake_check_program(const mil_program *prog, unsigned reject, nc_error *err) {
    if (!reject || prog->n_functions < 1) return NC_OK;
    const mil_function *f0 = prog->functions[0];
    char d[200];
    if ((reject & ANE_REJECT_MULTI_FUNCTION) && prog->n_functions > 1) {
        snprintf(d, sizeof d, "%d procedures in one program", prog->n_functions);
        return refuse(err, "multi-function", "InvalidProcedure", f0->name, d);
    }
    for (int i = 0; i < prog->n_functions; i++) {
        const mil_function *fn = prog->functions[i];
        if ((reject & ANE_REJECT_MIXED_SHAPES) &&
            (!same_ios(fn->inputs, fn->n_inputs, f0->inputs, f0->n_inputs) ||
             !same_ios(fn->outputs, fn->n_outputs, f0->outputs, f0->n_outputs))) {
            snprintf(d, sizeof d, "I/O differ from function '%s'", f0->name);
            return refuse(err, "mixed-shapes", "InvalidProcedure", fn->name, d);
        }
        if ((reject & ANE_REJECT_MULTI_OUTPUT) && fn->n_outputs > 1) {
            snprintf(d, sizeof d, "%d outputs", fn->n_outputs);
            return refuse(err, "multi-output", "InvalidProcedure", fn->name, d);
        }
        if ((reject & ANE_REJECT_ELEMENTWISE_ONLY) && mil_function_is_elementwise_only(fn))
            return refuse(err, "elementwise-only", "CompilationFailure", fn->name,
                          "elementwise only (no conv or matmul)");
        NC_TRY(check_ops(fn, reject, err));
    }
    return NC_OK;
}
