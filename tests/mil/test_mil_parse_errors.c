/* Parser errors: each bad input gives exactly "file:line:col: expected X,
 * found Y" (or a named problem) at the position counted by hand, and no
 * program. Also BLOBFILE resolution against the model folder, including a
 * relative @model_path/../ path and a blob whose size contradicts the type. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "base/mmap.h"
#include "mil/mil_blob.h"
#include "mil/parse.h"

static void expect_error(const char *src, const char *want) {
    mil_program *p = (mil_program *)1;
    nc_error err;
    nc_status st = mil_parse(src, strlen(src), "t.mil", &p, &err);
    CHECKF(st == NC_ERR_FORMAT && p == NULL, "parse of bad input returned %d", (int)st);
    CHECKF(!strcmp(err.msg, want), "\n    got  '%s'\n    want '%s'", err.msg, want);
}

#define HEAD "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 4]> x) {\n"

static void test_errors_give_line_column_expected_and_found(void) {
    expect_error("", "t.mil:1:1: expected 'program', found end of file");
    expect_error("program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 4]> x) {\n"
                 "            tensor<fp16, [1, 4]> y = relu(x = x)\n        } -> (y);\n}\n",
                 "t.mil:5:9: expected ';', found '}'");
    expect_error(HEAD "            tensor<fp16, [1, 4]> y = relu(x = z);\n",
                 "t.mil:4:47: unknown variable 'z'");
    expect_error(HEAD "            tensor<fp17, [1, 4]> y = relu(x = x);\n",
                 "t.mil:4:20: expected a dtype (fp16, int32, ...), found 'fp17'");
    expect_error(
        HEAD "            tensor<fp16, [1, 4]> y = add(x = x, y = tensor<int32, [3]>([1, 2]));\n",
        "t.mil:4:72: expected 3 elements for the declared shape, found 2");
    expect_error(HEAD "            int8 c = const()[val = int8(300)];\n",
                 "t.mil:4:41: integer out of range for its dtype");
    expect_error(HEAD "            string c = const()[val = string(\"abc)];\n",
                 "t.mil:4:45: unterminated string");
    expect_error(HEAD "            fp16 c = const()[val = fp16(1.0)] $\n",
                 "t.mil:4:47: unexpected character '$'");
    expect_error(HEAD "            tensor<fp16, [-2]> c = const()[val = fp16(1.0)];\n",
                 "t.mil:4:27: expected a dimension (an integer >= 0, or ?), found '-2'");
    expect_error(HEAD "            bool c = const()[val = bool(maybe)];\n",
                 "t.mil:4:41: expected true or false, found 'maybe'");
    expect_error(HEAD "        } -> (nope);\n}\n", "t.mil:4:15: unknown variable 'nope'");
    expect_error(HEAD "            tensor<fp16, [1, 4]> y = add(x = x, x = x);\n",
                 "t.mil:4:49: argument given twice");
    expect_error(HEAD "        } -> (x);\n}\n}\n", "t.mil:6:1: expected end of file, found '}'");
    expect_error("program(1.3) { func main<ios18>() { } -> (); ",
                 "t.mil:1:46: expected '}', found end of file");
    expect_error(HEAD "            tensor<fp16, [1, 4]> w = const()[val = tensor<fp16, [1, "
                      "4]>(BLOBFILE(path = string(\"a\"), size = uint64(64)))];\n",
                 "t.mil:4:102: expected path or offset in BLOBFILE");
}

/* Integer literals at both ends of each dtype's range: the last value in
 * is taken, the first one out refused (int8(128) once slipped through and
 * wrapped to -128). */
static void test_integer_dtype_bounds_are_exact(void) {
    static const struct {
        const char *lit;
        int ok;
    } cases[] = {
        {"int8(127)", 1},     {"int8(128)", 0},     {"int8(-128)", 1},   {"int8(-129)", 0},
        {"uint8(255)", 1},    {"uint8(256)", 0},    {"int16(32767)", 1}, {"int16(32768)", 0},
        {"int16(-32768)", 1}, {"int16(-32769)", 0}, {"int4(7)", 1},      {"int4(8)", 0},
        {"int4(-8)", 1},      {"int4(-9)", 0},      {"uint4(15)", 1},    {"uint4(16)", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char src[256], dt[16];
        snprintf(dt, sizeof dt, "%.*s", (int)strcspn(cases[i].lit, "("), cases[i].lit);
        snprintf(src, sizeof src, HEAD "            %s c = const()[val = %s];\n        } -> (x);\n}\n",
                 dt, cases[i].lit);
        mil_program *p = NULL;
        nc_error err = {0};
        nc_status st = mil_parse(src, strlen(src), "t.mil", &p, &err);
        mil_program_free(p);
        CHECKF((st == NC_OK) == cases[i].ok &&
                   (cases[i].ok || strstr(err.msg, "integer out of range for its dtype")),
               "%s: status %d (%s)", cases[i].lit, (int)st, err.msg);
    }
}

static void test_byte_order_mark_and_crlf_are_accepted(void) {
    const char *src = "\xEF\xBB\xBFprogram(1.3)\r\n{\r\n    func main<ios18>(fp16 x) {\r\n        "
                      "} -> (x);\r\n}\r\n";
    mil_program *p;
    nc_error err;
    CHECK_OK(mil_parse(src, strlen(src), "bom.mil", &p, &err), &err);
    CHECK(p->n_functions == 1 && p->functions[0]->n_inputs == 1);
    mil_program_free(p);
    expect_error("\xEF\xBB\xBFprogram(1.3)\n{\n  oops", "t.mil:3:3: expected '}', found 'oops'");
}

/* Hostile nesting must not exhaust the stack. */
static void test_deep_nesting_is_an_error_not_a_crash(void) {
    char *src = malloc(200000);
    CHECK(src);
    strcpy(src, HEAD "            fp16 c = const()[val = tuple<");
    size_t n = strlen(src);
    for (int i = 0; i < 20000; i++) {
        memcpy(src + n, "tuple<", 6);
        n += 6;
    }
    src[n] = 0;
    mil_program *p;
    nc_error err;
    nc_status st = mil_parse(src, n, "deep.mil", &p, &err);
    free(src);
    CHECK(st == NC_ERR_FORMAT);
    CHECKF(strstr(err.msg, "nested too deeply"), "%s", err.msg);
}

static void write_text(const char *path, const char *text) {
    nc_error err;
    nc_write_file_atomic(path, text, strlen(text), &err);
}

static void test_blobfile_resolves_against_model_folder(void) {
    char root[] = "/tmp/nectar_test_mil_parse_XXXXXX";
    CHECK(mkdtemp(root));
    char model[128], weights[160], wpath[200], sibling[200], mil[200];
    snprintf(model, sizeof model, "%s/m.mlmodelc", root);
    snprintf(weights, sizeof weights, "%s/weights", model);
    snprintf(wpath, sizeof wpath, "%s/weight.bin", weights);
    snprintf(sibling, sizeof sibling, "%s/sibling.bin", root);
    snprintf(mil, sizeof mil, "%s/model.mil", model);
    CHECK(mkdir(model, 0777) == 0 && mkdir(weights, 0777) == 0);
    nc_error err;
    uint64_t off;
    uint16_t h[4] = {0x3c00, 0x4000, 0x4200, 0x4400}; /* 1, 2, 3, 4 */
    const char *paths[2] = {wpath, sibling};
    for (int i = 0; i < 2; i++) {
        mil_blob_writer w;
        CHECK_OK(mil_blob_writer_open(&w, paths[i], &err), &err);
        CHECK_OK(mil_blob_writer_add(&w, MIL_DT_FP16, 4, h, &off, &err), &err);
        CHECK_OK(mil_blob_writer_finish(&w, &err), &err);
    }
    write_text(
        mil,
        "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [4]> x) {\n"
        "            tensor<fp16, [4]> a = const()[val = tensor<fp16, [4]>(BLOBFILE(path = "
        "string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];\n"
        "            tensor<fp16, [4]> b = const()[val = tensor<fp16, [4]>(BLOBFILE(path = "
        "string(\"@model_path/../sibling.bin\"), offset = uint64(64)))];\n"
        "            tensor<fp16, [2, 4]> c = const()[val = tensor<fp16, [2, 4]>(BLOBFILE(path = "
        "string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];\n"
        "            tensor<fp16, [4]> d = const()[val = tensor<fp16, [4]>(BLOBFILE(path = "
        "string(\"@model_path/weights/weight.bin\"), offset = uint64(128)))];\n"
        "        } -> (x);\n}\n");
    mil_program *p;
    CHECK_OK(mil_parse_file(mil, &p, &err), &err);
    const mil_function *fn = p->functions[0];
    double v;
    CHECK_OK(mil_value_to_f64(p, mil_function_var(fn, "a")->cval, 3, &v, &err), &err);
    CHECK(v == 4.0);
    CHECK_OK(mil_value_to_f64(p, mil_function_var(fn, "b")->cval, 1, &v, &err), &err);
    CHECK(v == 2.0);
    const uint8_t *bytes;
    size_t nb;
    CHECK(mil_value_bytes(p, mil_function_var(fn, "c")->cval, &bytes, &nb, &err) == NC_ERR_FORMAT);
    CHECKF(strstr(err.msg, "has 8 bytes (padding 0 bits), 8 x fp16 needs 16"), "%s", err.msg);
    CHECK(mil_value_bytes(p, mil_function_var(fn, "d")->cval, &bytes, &nb, &err) == NC_ERR_RANGE);
    CHECKF(strstr(err.msg, "blob offset 128 is outside the file"), "%s", err.msg);
    mil_program_free(p);
    remove(wpath);
    remove(sibling);
    remove(mil);
    rmdir(weights);
    rmdir(model);
    rmdir(root);
}

/* Function attributes from text (what the builder cannot spell): a
 * FlexibleShapeInformation value lands on the function, readable by name;
 * bad text is an error naming what was expected, leaving it unchanged. */
static void test_function_attrs_from_text(void) {
    const char *src = "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, ?]> x) {\n"
                      "        tensor<fp16, [1, ?]> y = relu(x = x)[name = string(\"y\")];\n"
                      "    } -> (y);\n}\n";
    mil_program *p = NULL;
    nc_error err = {0};
    CHECK_OK(mil_parse(src, strlen(src), "t.mil", &p, &err), &err);
    if (!p) return;
    mil_function *fn = p->functions[0];
    CHECK_OK(mil_function_parse_attrs(
                 fn,
                 "[FlexibleShapeInformation = tuple<tuple<string, dict<string, tensor<int32, "
                 "[?]>>>, tuple<string, dict<string, dict<string, tensor<int32, [?]>>>>>(((\"Def"
                 "aultShapes\", {{\"x\", [1, 32]}}), (\"EnumeratedShapes\", {{\"0000abcd\", "
                 "{{\"x\", [1, 32]}}}, {\"0000abce\", {{\"x\", [1, 64]}}}})))]",
                 &err),
             &err);
    const mil_value *v = mil_function_attr(fn, "FlexibleShapeInformation");
    CHECK(v && v->kind == MIL_VALUE_TUPLE && v->n == 2);
    CHECK(mil_function_parse_attrs(fn, "[a = int32(1), ", &err) != NC_OK);
    CHECK(strstr(err.msg, "<attributes>") != NULL);
    CHECK(mil_function_parse_attrs(fn, "[a = int32(1)] extra", &err) != NC_OK);
    CHECK(strstr(err.msg, "end of the attributes") != NULL);
    CHECK(mil_function_attr(fn, "FlexibleShapeInformation") == v);
    mil_program_free(p);
}

int main(void) {
    RUN(test_errors_give_line_column_expected_and_found);
    RUN(test_integer_dtype_bounds_are_exact);
    RUN(test_byte_order_mark_and_crlf_are_accepted);
    RUN(test_deep_nesting_is_an_error_not_a_crash);
    RUN(test_blobfile_resolves_against_model_folder);
    RUN(test_function_attrs_from_text);
    return nc_test_exit_code();
}
