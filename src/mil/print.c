/* MIL printer (see print.h). Floats are printed with %a on the value widened
 * to double, which is exact for fp16/bf16/fp32/fp64; the parser reads them
 * back bit for bit, so parse -> print is a fixed point after one step. */
#include "mil/print.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "base/mmap.h"

typedef struct {
    FILE *f;
    int dialect_a; /* program(1.0): rank-0 types as tensor<T, []> */
} printer;

static void print_type(printer *pr, const mil_type *t) {
    if (t->kind == MIL_TYPE_TENSOR && t->rank == 0 && pr->dialect_a) {
        fprintf(pr->f, "tensor<%s, []>", mil_dtype_name(t->dtype));
        return;
    }
    if (t->kind == MIL_TYPE_TENSOR || t->kind == MIL_TYPE_BUFFER) {
        char buf[1024];
        /* nested element types are printed recursively below; tensors are flat */
        if (t->rank <= 64 && t->n_params == 0) {
            fputs(mil_type_str(t, buf, sizeof buf), pr->f);
            return;
        }
        if (t->kind == MIL_TYPE_BUFFER) {
            fprintf(pr->f, "tensor_buffer<%s", mil_dtype_name(t->dtype));
            for (int i = 0; i < t->n_params; i++) {
                fprintf(pr->f, ", %s=[", t->param_names[i]);
                for (int j = 0; j < t->param_lens[i]; j++)
                    fprintf(pr->f, j ? ", %lld" : "%lld", (long long)t->param_vals[i][j]);
                fputc(']', pr->f);
            }
            fputc('>', pr->f);
            return;
        }
    }
    switch (t->kind) {
    case MIL_TYPE_LIST:
        fputs("list<", pr->f);
        print_type(pr, t->elems[0]);
        if (t->list_len < 0)
            fputs(", ?>", pr->f);
        else
            fprintf(pr->f, ", %lld>", (long long)t->list_len);
        return;
    case MIL_TYPE_TUPLE:
    case MIL_TYPE_DICT:
    case MIL_TYPE_STATE:
        fputs(t->kind == MIL_TYPE_TUPLE  ? "tuple<"
              : t->kind == MIL_TYPE_DICT ? "dict<"
                                         : "state<",
              pr->f);
        for (int i = 0; i < t->n_elems; i++) {
            if (i) fputs(", ", pr->f);
            print_type(pr, t->elems[i]);
        }
        fputc('>', pr->f);
        return;
    default:
        return;
    }
}

static void print_string(printer *pr, const char *s) {
    fputc('"', pr->f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(pr->f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", pr->f);
        else if (c == '\t')
            fputs("\\t", pr->f);
        else if (c == '\r')
            fputs("\\r", pr->f);
        else if (c < 32 || c == 127)
            fprintf(pr->f, "\\x%02x", c);
        else
            fputc(c, pr->f);
    }
    fputc('"', pr->f);
}

static void print_double(printer *pr, double d) {
    if (isnan(d))
        fputs(signbit(d) ? "-nan" : "nan", pr->f);
    else if (isinf(d))
        fputs(d < 0 ? "-inf" : "inf", pr->f);
    else
        fprintf(pr->f, "%a", d);
}

static void print_element(printer *pr, const mil_value *v, size_t i) {
    mil_dtype dt = v->type->dtype;
    if (dt == MIL_DT_STRING) {
        print_string(pr, v->strs[i]);
        return;
    }
    const uint8_t *p = (const uint8_t *)v->data + i * mil_dtype_storage_bytes(dt);
    if (dt == MIL_DT_BOOL) {
        fputs(*p ? "true" : "false", pr->f);
    } else if (dt == MIL_DT_UINT64) {
        uint64_t u;
        memcpy(&u, p, 8);
        fprintf(pr->f, "%llu", (unsigned long long)u);
    } else {
        double d;
        int64_t x;
        mil_value_to_f64(NULL, v, i, &d, NULL);
        mil_value_to_i64(NULL, v, i, &x, NULL);
        if (mil_dtype_is_float(dt))
            print_double(pr, d);
        else
            fprintf(pr->f, "%lld", (long long)x);
    }
}

static void print_value(printer *pr, const mil_value *v, int typed);

/* The raw part of a literal (no type prefix). */
static void print_raw(printer *pr, const mil_value *v) {
    switch (v->kind) {
    case MIL_VALUE_TENSOR:
        if (v->type->rank == 0 && v->n == 1) {
            print_element(pr, v, 0);
            return;
        }
        fputc('[', pr->f);
        for (size_t i = 0; i < v->n; i++) {
            if (i) fputs(", ", pr->f);
            print_element(pr, v, i);
        }
        fputc(']', pr->f);
        return;
    case MIL_VALUE_BLOB: /* only reached for a BLOBFILE nested in a container */
        print_value(pr, v, 1);
        return;
    case MIL_VALUE_LIST:
    case MIL_VALUE_TUPLE:
        fputc(v->kind == MIL_VALUE_LIST ? '[' : '(', pr->f);
        for (size_t i = 0; i < v->n; i++) {
            if (i) fputs(", ", pr->f);
            print_raw(pr, v->items[i]);
        }
        fputc(v->kind == MIL_VALUE_LIST ? ']' : ')', pr->f);
        return;
    case MIL_VALUE_DICT:
        fputc('{', pr->f);
        for (size_t i = 0; i < v->n; i++) {
            fputs(i ? ", {" : "{", pr->f);
            print_raw(pr, v->items[2 * i]);
            fputs(", ", pr->f);
            print_raw(pr, v->items[2 * i + 1]);
            fputc('}', pr->f);
        }
        fputc('}', pr->f);
        return;
    }
}

static void print_value(printer *pr, const mil_value *v, int typed) {
    (void)typed;
    print_type(pr, v->type);
    fputc('(', pr->f);
    if (v->kind == MIL_VALUE_BLOB) {
        fputs("BLOBFILE(path = ", pr->f);
        fputs(pr->dialect_a ? "tensor<string, []>(" : "string(", pr->f);
        print_string(pr, v->blob_path);
        fprintf(pr->f, "), offset = %s(%llu))", pr->dialect_a ? "tensor<uint64, []>" : "uint64",
                (unsigned long long)v->blob_offset);
    } else if (!(v->kind == MIL_VALUE_TENSOR && v->n == 0 && v->type->rank == 0)) {
        print_raw(pr, v);
    }
    fputc(')', pr->f);
}

static void print_attrs(printer *pr, const mil_attr *attrs, int n, int sorted) {
    if (!n) return;
    const mil_attr *order[256];
    int m = n < 256 ? n : 256;
    for (int i = 0; i < m; i++)
        order[i] = &attrs[i];
    if (sorted) /* insertion sort: attribute lists are short */
        for (int i = 1; i < m; i++)
            for (int j = i; j > 0 && strcmp(order[j - 1]->name, order[j]->name) > 0; j--) {
                const mil_attr *t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
    fputc('[', pr->f);
    for (int i = 0; i < m; i++) {
        fprintf(pr->f, "%s%s = ", i ? ", " : "", order[i]->name);
        print_value(pr, order[i]->value, 1);
    }
    fputc(']', pr->f);
}

static void print_operand(printer *pr, const mil_var *v) {
    if (v->name)
        fputs(v->name, pr->f);
    else if (v->cval)
        print_value(pr, v->cval, 1);
    else
        fputs("?", pr->f);
}

static void print_op(printer *pr, const mil_op *op) {
    fputs("            ", pr->f);
    for (int i = 0; i < op->n_outputs; i++) {
        if (i) fputs(", ", pr->f);
        print_type(pr, op->outputs[i]->type);
        fprintf(pr->f, " %s", op->outputs[i]->name);
    }
    if (op->n_outputs) fputs(" = ", pr->f);
    fputs(op->type, pr->f);
    if (op->opset) fprintf(pr->f, "<%s>", op->opset);
    fputc('(', pr->f);
    const mil_arg *order[64];
    int m = op->n_args < 64 ? op->n_args : 64;
    for (int i = 0; i < m; i++)
        order[i] = &op->args[i];
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && strcmp(order[j - 1]->name, order[j]->name) > 0; j--) {
            const mil_arg *t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < m; i++) {
        const mil_arg *a = order[i];
        fprintf(pr->f, "%s%s = ", i ? ", " : "", a->name);
        if (a->is_tuple) fputc('(', pr->f);
        for (int j = 0; j < a->n_items; j++) {
            if (j) fputs(", ", pr->f);
            print_operand(pr, a->items[j]);
        }
        if (a->is_tuple) fputc(')', pr->f);
    }
    fputc(')', pr->f);
    print_attrs(pr, op->attrs, op->n_attrs, 1);
    fputs(";\n", pr->f);
}

static void print_function(printer *pr, const mil_function *fn) {
    fprintf(pr->f, "    func %s<%s>(", fn->name, fn->opset);
    for (int i = 0; i < fn->n_inputs; i++) {
        if (i) fputs(", ", pr->f);
        print_type(pr, fn->inputs[i]->type);
        fprintf(pr->f, " %s", fn->inputs[i]->name);
    }
    fputs(") ", pr->f);
    if (fn->n_attrs) {
        print_attrs(pr, fn->attrs, fn->n_attrs, 0);
        fputc(' ', pr->f);
    }
    fputs("{\n", pr->f);
    for (int i = 0; i < fn->n_ops; i++)
        print_op(pr, fn->ops[i]);
    fputs("        } -> (", pr->f);
    for (int i = 0; i < fn->n_outputs; i++)
        fprintf(pr->f, "%s%s", i ? ", " : "", fn->outputs[i]->name);
    fputs(");\n", pr->f);
}

nc_status mil_print(const mil_program *prog, FILE *f, nc_error *err) {
    printer pr = {f, prog->version && !strcmp(prog->version, "1.0")};
    fprintf(f, "program(%s)\n", prog->version ? prog->version : "1.3");
    if (prog->n_attrs) {
        print_attrs(&pr, prog->attrs, prog->n_attrs, 0);
        fputc('\n', f);
    }
    fputs("{\n", f);
    for (int i = 0; i < prog->n_functions; i++)
        print_function(&pr, prog->functions[i]);
    fputs("}\n", f);
    if (ferror(f)) return nc_fail(err, NC_ERR_IO, "writing MIL text failed");
    return NC_OK;
}

nc_status mil_print_string(const mil_program *prog, char **out, size_t *len, nc_error *err) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    nc_status st = mil_print(prog, f, err);
    if (fclose(f) != 0 && st == NC_OK) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    if (st != NC_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    if (len) *len = n;
    return NC_OK;
}

nc_status mil_print_file(const mil_program *prog, const char *path, nc_error *err) {
    char *text;
    size_t n;
    NC_TRY(mil_print_string(prog, &text, &n, err));
    nc_status st = nc_write_file_atomic(path, text, n, err);
    free(text);
    return st;
}
