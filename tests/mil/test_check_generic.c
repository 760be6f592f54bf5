/* The checker's generic checks (no --target): unknown ops and arguments,
 * missing and non-constant arguments, disallowed dtypes, ops newer than the
 * function's opset, declared types that disagree with inference and broken
 * BLOBFILE references, each reported with its line, all in one run; and the
 * numpy-generated op fixtures (tools/mil_goldens.py) pass clean. */
#include "../test.h"
#include "base/json.h"
#include "mil/check.h"
#include "mil/parse.h"

static const char *HEAD = "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n";

/* Parses `body` (the lines after the header) and checks it without the ANE
 * rules. */
static int check_body(const char *body, mil_diagnostics *d) {
    char text[4096];
    snprintf(text, sizeof text, "%s%s", HEAD, body);
    nc_error err;
    mil_program *prog;
    memset(d, 0, sizeof *d);
    if (mil_parse(text, strlen(text), "g.mil", &prog, &err) != NC_OK) {
        printf("  parse: %s\n", err.msg);
        return -1;
    }
    mil_check_options opt = {0, NULL, NULL};
    nc_status st = mil_check_program(prog, &opt, d, &err);
    mil_program_free(prog);
    return st == NC_OK ? 0 : -1;
}

/* 1 when some error at `line` mentions `word`. */
static int has_error(const mil_diagnostics *d, int line, const char *word) {
    for (int i = 0; i < d->n; i++)
        if (d->items[i].severity == MIL_SEV_ERROR && d->items[i].line == line &&
            strstr(d->items[i].msg, word))
            return 1;
    return 0;
}

static void expect_error(const char *body, int line, const char *word) {
    mil_diagnostics d;
    CHECK(check_body(body, &d) == 0);
    int ok = has_error(&d, line, word);
    if (!ok) {
        printf("  wanted an error at line %d mentioning '%s'; got:\n", line, word);
        mil_diagnostics_print(&d, stdout);
    }
    mil_diagnostics_free(&d);
    CHECK(ok);
}

#define FN(params) "    func main<ios18>(" params ") {\n"
#define END(out) "    } -> (" out ");\n}\n"

static void test_unknown_op_is_reported(void) {
    expect_error(FN("tensor<fp16, [2, 3]> x")
                 "        tensor<fp16, [2, 3]> y = frobnicate(x = x)[name = string(\"f\")];\n" END("y"),
                 5, "frobnicate");
}

static void test_unknown_argument_is_reported(void) {
    expect_error(FN("tensor<fp16, [2, 3]> x")
                 "        tensor<fp16, [2, 3]> y = relu(x = x, alpha = x)[name = string(\"r\")];\n" END("y"),
                 5, "alpha");
}

static void test_missing_required_argument_is_reported(void) {
    expect_error(FN("tensor<fp16, [2, 3]> x")
                 "        tensor<fp16, [2, 3]> y = add(x = x)[name = string(\"a\")];\n" END("y"), 5, "'y'");
}

static void test_non_constant_argument_is_reported(void) {
    expect_error(FN("tensor<fp16, [2, 3]> x, tensor<int32, [2]> p")
                 "        tensor<fp16, [3, 2]> y = transpose(perm = p, x = x)[name = string(\"t\")];\n" END("y"),
                 5, "perm");
}

static void test_disallowed_dtype_is_reported(void) {
    expect_error(FN("tensor<int32, [2, 3]> x")
                 "        tensor<int32, [2, 3]> y = relu(x = x)[name = string(\"r\")];\n" END("y"), 5, "int32");
}

static void test_op_newer_than_opset_is_reported(void) {
    expect_error("    func main<ios17>(tensor<fp16, [4]> x, tensor<fp16, [2]> u) {\n"
                 "        tensor<int32, [1]> b = const()[name = string(\"b\"), val = tensor<int32, [1]>([0])];\n"
                 "        tensor<int32, [1]> e = const()[name = string(\"e\"), val = tensor<int32, [1]>([2])];\n"
                 "        tensor<fp16, [4]> y = slice_update(begin = b, end = e, update = u, x = x)[name = string(\"s\")];\n"
                 END("y"),
                 7, "18");
}

static void test_declared_type_mismatch_is_reported(void) {
    expect_error(FN("tensor<fp16, [2, 1]> x, tensor<fp16, [4]> y")
                 "        tensor<fp16, [2, 3]> z = add(x = x, y = y)[name = string(\"a\")];\n" END("z"),
                 5, "tensor<fp16, [2, 4]>");
}

static void test_missing_weight_file_is_reported(void) {
    expect_error(FN("tensor<fp16, [4]> x")
                 "        tensor<fp16, [4]> w = const()[name = string(\"w\"), val = tensor<fp16, [4]>(BLOBFILE(path = "
                 "string(\"@model_path/weights/nothere.bin\"), offset = uint64(64)))];\n"
                 "        tensor<fp16, [4]> y = add(x = x, y = w)[name = string(\"a\")];\n" END("y"),
                 5, "nothere.bin");
}

/* BLOBFILE references are checked against the weight file: a record whose
 * dtype differs from the declared type, and an offset that is no record. */
static void test_bad_blob_references_are_reported(void) {
    const char *text =
        "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
        "    func main<ios18>(tensor<fp16, [24]> x) {\n"
        "        tensor<fp16, [24]> a = const()[name = string(\"a\"), val = tensor<fp16, [24]>(BLOBFILE(path = "
        "string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];\n"
        "        tensor<fp16, [24]> b = const()[name = string(\"b\"), val = tensor<fp16, [24]>(BLOBFILE(path = "
        "string(\"@model_path/weights/weight.bin\"), offset = uint64(100)))];\n"
        "        tensor<fp16, [24]> c = add(x = a, y = b)[name = string(\"c\")];\n"
        "        tensor<fp16, [24]> y = add(x = x, y = c)[name = string(\"y\")];\n"
        "    } -> (y);\n}\n";
    nc_error err;
    mil_program *prog;
    CHECK_OK(mil_parse(text, strlen(text), "b.mil", &prog, &err), &err);
    /* a real weight.bin whose first record holds uint4 indices */
    CHECK_OK(mil_program_set_model_dir(prog, "tests/fixtures/mil/ops/constexpr_lut_to_dense_ios18_blob", &err),
             &err);
    mil_diagnostics d = {0};
    mil_check_options opt = {0, NULL, NULL};
    CHECK_OK(mil_check_program(prog, &opt, &d, &err), &err);
    int at5 = 0, at6 = 0;
    for (int i = 0; i < d.n; i++) {
        if (!strcmp(d.items[i].rule, "blob") && d.items[i].line == 5) at5 = 1;
        if (!strcmp(d.items[i].rule, "blob") && d.items[i].line == 6) at6 = 1;
    }
    if (!(at5 && at6)) mil_diagnostics_print(&d, stdout);
    CHECK(at5 && at6 && d.n_errors == 2);
    mil_diagnostics_free(&d);
    mil_program_free(prog);
}

/* One run reports every problem, each at its own line, and goes on after
 * the first. */
static void test_every_problem_is_reported_in_one_run(void) {
    mil_diagnostics d;
    CHECK(check_body(FN("tensor<fp16, [2, 3]> x")
                     "        tensor<fp16, [2, 3]> a = relu(x = x, beta = x)[name = string(\"a\")];\n"
                     "        tensor<fp16, [2, 3]> b = sigmoid(x = x)[name = string(\"b\")];\n"
                     "        tensor<fp16, [3, 3]> c = tanh(x = b)[name = string(\"c\")];\n"
                     "        tensor<fp16, [2, 3]> d = nosuchop(x = c)[name = string(\"d\")];\n" END("d"),
                     &d) == 0);
    CHECK(d.n_errors == 3);
    CHECK(has_error(&d, 5, "beta") && has_error(&d, 7, "tensor<fp16, [3, 3]>") && has_error(&d, 8, "nosuchop"));
    mil_diagnostics_free(&d);
}

static void test_clean_program_has_no_diagnostics(void) {
    mil_diagnostics d;
    CHECK(check_body(FN("tensor<fp16, [2, 3]> x")
                     "        int32 ax = const()[name = string(\"ax\"), val = int32(-1)];\n"
                     "        tensor<fp16, [2, 3]> y = softmax(axis = ax, x = x)[name = string(\"s\")];\n" END("y"),
                     &d) == 0);
    if (d.n) mil_diagnostics_print(&d, stdout);
    CHECK(d.n == 0);
    mil_diagnostics_free(&d);
}

/* The fixtures written by numpy's side (one program per op) are valid MIL. */
static void test_op_fixture_programs_pass_the_checker(void) {
    json_t *root;
    nc_error err;
    CHECK_OK(nc_json_load_file("tests/fixtures/mil/ops/cases.json", &root, &err), &err);
    size_t i, bad = 0;
    json_t *c;
    json_array_foreach(json_object_get(root, "cases"), i, c) {
        char path[512];
        snprintf(path, sizeof path, "tests/fixtures/mil/ops/%s/model.mil",
                 json_string_value(json_object_get(c, "name")));
        mil_program *prog;
        if (mil_parse_file(path, &prog, &err) != NC_OK) {
            printf("  %s\n", err.msg);
            bad++;
            continue;
        }
        mil_diagnostics d = {0};
        mil_check_options opt = {0, NULL, NULL};
        if (mil_check_program(prog, &opt, &d, &err) != NC_OK || d.n_errors) {
            mil_diagnostics_print(&d, stdout);
            bad++;
        }
        mil_diagnostics_free(&d);
        mil_program_free(prog);
    }
    json_decref(root);
    CHECKF(bad == 0, "%zu fixture programs fail the checker", bad);
}

/* mil_check_strict: OK for a clean program, else the count and the first
 * error in one message. */
static void test_strict_check_summarises_errors(void) {
    const char *bad = "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
                      "    func main<ios18>(tensor<fp16, [1, 16]> x) {\n"
                      "        tensor<fp16, [1, 16]> y = relu(x = x, q = x)[name = string(\"r\")];\n"
                      "    } -> (y);\n}\n";
    nc_error err;
    mil_program *prog;
    CHECK_OK(mil_parse(bad, strlen(bad), "s.mil", &prog, &err), &err);
    CHECK(mil_check_strict(prog, 0, &err) == NC_ERR_FORMAT);
    CHECKF(strstr(err.msg, "1 error; first: s.mil:5:") && strstr(err.msg, "'q'"), "%s", err.msg);
    CHECK(mil_check_strict(prog, 1, &err) == NC_ERR_FORMAT);
    CHECKF(strstr(err.msg, "3 errors"), "%s", err.msg); /* + input and output width */
    mil_program_free(prog);
    const char *good = "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
                       "    func main<ios18>(tensor<fp16, [1, 32]> x) {\n"
                       "        tensor<fp16, [1, 32]> y = exp(x = x)[name = string(\"e\")];\n"
                       "    } -> (y);\n}\n";
    CHECK_OK(mil_parse(good, strlen(good), "g.mil", &prog, &err), &err);
    CHECK_OK(mil_check_strict(prog, 1, &err), &err); /* a warning only */
    mil_program_free(prog);
}

int main(void) {
    RUN(test_strict_check_summarises_errors);
    RUN(test_unknown_op_is_reported);
    RUN(test_unknown_argument_is_reported);
    RUN(test_missing_required_argument_is_reported);
    RUN(test_non_constant_argument_is_reported);
    RUN(test_disallowed_dtype_is_reported);
    RUN(test_op_newer_than_opset_is_reported);
    RUN(test_declared_type_mismatch_is_reported);
    RUN(test_missing_weight_file_is_reported);
    RUN(test_bad_blob_references_are_reported);
    RUN(test_every_problem_is_reported_in_one_run);
    RUN(test_clean_program_has_no_diagnostics);
    RUN(test_op_fixture_programs_pass_the_checker);
    return nc_test_exit_code();
}
