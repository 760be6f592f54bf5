/* Parser and printer against Apple's own output: every file of the real MIL
 * corpus (tests/fixtures/mil-corpus) parses; parse -> print -> parse gives the
 * same program and print is a fixed point after one step; files coremlc
 * wrote with hex floats reprint byte for byte; and the types coremlc
 * declared for every op equal what our inference computes. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "base/mmap.h"
#include "mil/compare.h"
#include "mil/ops.h"
#include "mil/parse.h"
#include "mil/print.h"

#define MAX_FILES 64

/* The corpus .mil files, sorted; 0 when the folder is missing. */
static int corpus_files(char paths[][1024], int max) {
    const char *dir = nc_test_fixture_path("mil-corpus");
    if (!dir) return 0;
    char root[1024];
    snprintf(root, sizeof root, "%s", dir);
    DIR *d = opendir(root);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".mil"))
            snprintf(paths[n++], 1024, "%s/%s", root, e->d_name);
    }
    closedir(d);
    qsort(paths, (size_t)n, 1024, (int (*)(const void *, const void *))strcmp);
    return n;
}

static void test_every_corpus_file_round_trips_to_the_same_program(void) {
    static char paths[MAX_FILES][1024];
    int n = corpus_files(paths, MAX_FILES);
    CHECKF(n, "tests/fixtures/mil-corpus is empty");
    CHECKF(n >= 6, "found only %d corpus files", n);
    for (int i = 0; i < n; i++) {
        nc_error err;
        mil_program *p1, *p2, *p3;
        char *t1, *t2;
        size_t n1, n2;
        CHECK_OK(mil_parse_file(paths[i], &p1, &err), &err);
        CHECK_OK(mil_print_string(p1, &t1, &n1, &err), &err);
        CHECK_OK(mil_parse(t1, n1, "reprint", &p2, &err), &err);
        char why[256];
        int same = mil_program_equal(p1, p2, why, sizeof why);
        CHECK_OK(mil_print_string(p2, &t2, &n2, &err), &err);
        CHECK_OK(mil_parse(t2, n2, "reprint2", &p3, &err), &err);
        int fixed = n1 == n2 && !memcmp(t1, t2, n1);
        int same3 = mil_program_equal(p2, p3, NULL, 0);
        free(t1);
        free(t2);
        mil_program_free(p1);
        mil_program_free(p2);
        mil_program_free(p3);
        CHECKF(same, "%s: reparsed program differs: %s", paths[i], why);
        CHECKF(fixed, "%s: print is not a fixed point", paths[i]);
        CHECK(same3);
    }
}

/* Files coremlc wrote entirely with hex floats must come back verbatim: our
 * printer writes the dialect coremlc writes. */
static void test_coremlc_files_reprint_byte_for_byte(void) {
    static const char *files[] = {
        "mil-corpus/"
        "751K__Apple-Neural-Engine-Microarchitecture-Study-M6__data__03_compile__hwx__model.mil",
        "mil-corpus/"
        "apple__coremltools__coremltools__modelrunner__ModelRunner__add_model.mlmodelc__model.mil",
        "mil-corpus/"
        "rebeckerspecialties__mlmodelc-export__tests__fixtures__flexible-multifunction__expected-"
        "macos.mlmodelc__model.mil",
        "mil-corpus/"
        "rebeckerspecialties__mlmodelc-export__tests__fixtures__quantized-constexpr__expected-"
        "macos.mlmodelc__model.mil",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const char *path = nc_test_fixture_path(files[i]);
        CHECKF(path, "tests/fixtures/%s missing", files[i]);
        char *orig, *text;
        size_t n_orig, n_text;
        nc_error err;
        mil_program *p;
        CHECK_OK(nc_read_file(path, &orig, &n_orig, &err), &err);
        CHECK_OK(mil_parse(orig, n_orig, files[i], &p, &err), &err);
        CHECK_OK(mil_print_string(p, &text, &n_text, &err), &err);
        /* some originals lack the final newline; we always write one */
        int same = (n_text == n_orig || (n_text == n_orig + 1 && text[n_orig] == '\n')) &&
                   !memcmp(orig, text, n_orig);
        if (!same)
            for (size_t k = 0; k < n_orig && k < n_text; k++)
                if (orig[k] != text[k]) {
                    printf("  first difference at byte %zu: ...%.40s\n", k,
                           text + (k > 20 ? k - 20 : 0));
                    break;
                }
        free(orig);
        free(text);
        mil_program_free(p);
        CHECKF(same, "%s does not reprint verbatim", files[i]);
    }
}

/* coremlc declared each op's output types; our inference must agree. */
static void test_inference_matches_coremlc_declared_types(void) {
    static char paths[MAX_FILES][1024];
    int n = corpus_files(paths, MAX_FILES);
    CHECKF(n, "tests/fixtures/mil-corpus is empty");
    int n_ops = 0;
    for (int i = 0; i < n; i++) {
        nc_error err;
        mil_program *p;
        CHECK_OK(mil_parse_file(paths[i], &p, &err), &err);
        for (int f = 0; f < p->n_functions; f++)
            for (int k = 0; k < p->functions[f]->n_ops; k++) {
                const mil_op *op = p->functions[f]->ops[k];
                mil_infer_out out;
                nc_status st = mil_op_infer(p, op, &out, &err);
                int ok = st == NC_OK && out.n == op->n_outputs;
                for (int o = 0; ok && o < out.n; o++)
                    ok = mil_type_equal(out.types[o], op->outputs[o]->type);
                if (!ok) {
                    char a[256] = "", b[256] = "";
                    if (st == NC_OK && out.n) mil_type_str(out.types[0], a, sizeof a);
                    if (op->n_outputs) mil_type_str(op->outputs[0]->type, b, sizeof b);
                    printf("  %s:%d: %s: %s inferred %s declared %s\n", paths[i], op->line,
                           op->type, st == NC_OK ? "" : err.msg, a, b);
                    mil_program_free(p);
                    CHECK(0);
                }
                n_ops++;
            }
        mil_program_free(p);
    }
    CHECKF(n_ops > 50, "only %d ops checked", n_ops);
}

/* Dialect A (program(1.0)) stays dialect A, with tensor<string, []> scalars. */
static void test_program_1_0_keeps_its_dialect(void) {
    const char *src = "program(1.0)\n[buildInfo = dict<tensor<string, []>, tensor<string, "
                      "[]>>({{\"k\", \"v\"}})]\n"
                      "{\n    func main<ios16>(tensor<fp16, [1, 10]> x) {\n"
                      "            tensor<fp16, [1, 10]> y = mul(x = x, y = x)[name = "
                      "tensor<string, []>(\"op\")];\n"
                      "        } -> (y);\n}\n";
    nc_error err;
    mil_program *p;
    char *text;
    size_t n;
    CHECK_OK(mil_parse(src, strlen(src), "a.mil", &p, &err), &err);
    CHECK(mil_type_is_scalar(mil_op_attr(p->functions[0]->ops[0], "name")->type));
    CHECK(!strcmp(mil_op_name(p->functions[0]->ops[0]), "op"));
    CHECK_OK(mil_print_string(p, &text, &n, &err), &err);
    int same = !strcmp(text, src);
    if (!same) printf("%s", text);
    free(text);
    mil_program_free(p);
    CHECK(same);
}

/* Literals that stress the lexer: escapes, hex and decimal floats, -inf,
 * 1-element tensors without brackets, nested containers, whitespace-free
 * text, comments, symbolic dims, a no-output op and a per-op opset. */
static void test_literals_and_layout_variants_round_trip(void) {
    const char *src =
        "program(1.3)\n{\nfunc main<ios18>(tensor<fp16,[1,?]> x,state<tensor<fp16, [1, 4]>> s) {\n"
        "// a comment\n"
        "tensor<fp16,[4]> c=const()[name=string(\"q\\\"uote\\\\ "
        "\\n\"),val=tensor<fp16,[4]>([0.125,-inf,0x1p-24,65504])];\n"
        "tensor<int32,[1]> one = const()[val = tensor<int32, [1]>(-1)];\n"
        "tensor<fp32, [2]> f = const()[val = tensor<fp32, [2]>([6.3110803182750176e-06, 0])];\n"
        "tensor<fp16, [1, 4]> r = read_state(input = s);\n"
        "write_state(data = r, input = s);\n"
        "tensor<fp16, [1, ?]> y = relu<ios17>(x = x)[d = dict<string, tuple<int32, list<bool, "
        "?>>>({{\"a\", (1, [true, false])}}), u = tensor<uint4, [3]>([1, 15, 0])];\n"
        "} -> (y, r);\n}\n";
    nc_error err;
    mil_program *p, *q;
    char *t1, *t2;
    size_t n1, n2;
    CHECK_OK(mil_parse(src, strlen(src), "v.mil", &p, &err), &err);
    const mil_function *fn = p->functions[0];
    CHECK(fn->n_ops == 6);
    CHECK(!strcmp(mil_op_name(fn->ops[0]), "q\"uote\\ \n"));
    double d;
    CHECK_OK(mil_value_to_f64(p, fn->ops[0]->outputs[0]->cval, 1, &d, &err), &err);
    CHECK(d < 0 && isinf(d));
    CHECK_OK(mil_value_to_f64(p, fn->ops[0]->outputs[0]->cval, 2, &d, &err), &err);
    CHECK(d == 0x1p-24);
    CHECK(fn->ops[4]->n_outputs == 0);
    CHECK(!strcmp(fn->ops[5]->opset, "ios17"));
    CHECK(fn->inputs[0]->type->dims[1] == MIL_DIM_UNKNOWN);
    CHECK_OK(mil_print_string(p, &t1, &n1, &err), &err);
    CHECK(strstr(t1, "[0x1p-3, -inf, 0x1p-24, 0x1.ffcp+15]"));
    CHECK(strstr(t1, "name = string(\"q\\\"uote\\\\ \\n\")"));
    CHECK_OK(mil_parse(t1, n1, "reprint", &q, &err), &err);
    CHECK(mil_program_equal(p, q, NULL, 0));
    CHECK_OK(mil_print_string(q, &t2, &n2, &err), &err);
    CHECK(!strcmp(t1, t2));
    free(t1);
    free(t2);
    mil_program_free(p);
    mil_program_free(q);
}

int main(void) {
    RUN(test_every_corpus_file_round_trips_to_the_same_program);
    RUN(test_coremlc_files_reprint_byte_for_byte);
    RUN(test_inference_matches_coremlc_declared_types);
    RUN(test_program_1_0_keeps_its_dialect);
    RUN(test_literals_and_layout_variants_round_trip);
    return nc_test_exit_code();
}
