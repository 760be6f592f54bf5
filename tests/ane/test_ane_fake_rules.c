/* The fake device's rules (src/ane_host/ane_fake_rules.c): each refuses
 * the construct it names, written here as a small MIL program by hand, in
 * the framework's error shape naming the rule, and lets the same program
 * without it through; settings parse, and bad ones fail naming them. */
#include <string.h>

#include "../test.h"
#include "ane_host/ane_fake_rules.h"
#include "mil/parse.h"

#define HEAD "program(1.3)\n{\n"
#define T4(c, w) "tensor<fp16, [1, " #c ", 1, " #w "]>"
/* y = x + x: elementwise only */
#define FN_ADD(name, c)                                                                            \
    "    func " name                                                                               \
    "<ios18>(" T4(c, 32) " x) {\n"                                                                 \
                         "        " T4(c, 32) " y = add(x = x, y = x)[name = string(\"y\")];\n"    \
                                              "    } -> (y);\n"
/* y = matmul(a [1,A,32,32], b [1,B,32,32]) */
#define FN_MATMUL(a, b)                                                                            \
    "    func main<ios18>(tensor<fp16, [1, " #a ", 32, 32]> p, tensor<fp16, [1, " #b               \
    ", 32, 32]> q) {\n"                                                                            \
    "        bool tx = const()[name = string(\"tx\"), val = bool(false)];\n"                       \
    "        tensor<fp16, [1, 4, 32, 32]> y = matmul(transpose_x = tx, transpose_y = tx, x = p, "  \
    "y = q)[name = string(\"y\")];\n"                                                              \
    "    } -> (y);\n"
/* a 1x1 conv of C output channels over 32 inputs */
#define FN_CONV(c)                                                                                 \
    "    func main<ios18>(" T4(                                                                    \
        32, 32) " x) {\n"                                                                          \
                "        tensor<fp16, [" #c                                                        \
                ", 32, 1, 1]> w = const()[name = string(\"w\"), val = "                            \
                "tensor<fp16, [" #c                                                                \
                ", 32, 1, 1]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), "        \
                "offset = uint64(64)))];\n"                                                        \
                "        " T4(c, 32) " y = conv(weight = w, x = x)[name = string(\"y\")];\n"       \
                                     "    } -> (y);\n"

static nc_status check(const char *text, unsigned reject, nc_error *err) {
    mil_program *p = NULL;
    nc_status st = mil_parse(text, strlen(text), "test.mil", &p, err);
    if (!st) st = ane_fake_check_program(p, reject, err);
    mil_program_free(p);
    return st;
}

static void test_each_rule_refuses_its_construct_only(void) {
    static const struct {
        const char *rule, *refused, *accepted, *kind;
    } cases[] = {
        {"gather",
         HEAD "    func main<ios18>(" T4(
             4, 32) " x) {\n"
                    "        tensor<uint16, [4]> i = const()[name = string(\"i\"), val = "
                    "tensor<uint16, [4]>([0, 1, 2, 3])];\n"
                    "        int32 ax = const()[name = string(\"ax\"), val = int32(3)];\n"
                    "        " T4(4, 4) " y = gather(axis = ax, indices = i, x = x)[name = "
                                        "string(\"y\")];\n"
                                        "    } -> (y);\n}\n",
         HEAD FN_CONV(64) "}\n", "InvalidMILProgram"},
        {"multi-function", HEAD FN_ADD("a", 4) FN_ADD("b", 4) "}\n", HEAD FN_ADD("a", 4) "}\n",
         "InvalidProcedure"},
        {"mixed-shapes", HEAD FN_ADD("a", 4) FN_ADD("b", 8) "}\n",
         HEAD FN_ADD("a", 4) FN_ADD("b", 4) "}\n", "InvalidProcedure"},
        {"multi-output",
         HEAD "    func main<ios18>(" T4(
             4, 32) " x) {\n"
                    "        " T4(4, 32) " y = add(x = x, y = x)[name = string(\"y\")];\n"
                                         "        " T4(
                                             4,
                                             32) " z = mul(x = x, y = x)[name = string(\"z\")];\n"
                                                 "    } -> (y, z);\n}\n",
         HEAD FN_ADD("main", 4) "}\n", "InvalidProcedure"},
        {"elementwise-only", HEAD FN_ADD("main", 4) "}\n", HEAD FN_CONV(64) "}\n",
         "CompilationFailure"},
        {"broadcast-matmul", HEAD FN_MATMUL(1, 4) "}\n", HEAD FN_MATMUL(4, 4) "}\n",
         "CompilationFailure"},
        {"wide-conv", HEAD FN_CONV(16400) "}\n", HEAD FN_CONV(16384) "}\n", "CompilationFailure"},
        {"palettized",
         HEAD "    func main<ios18>(" T4(32, 4) " x) {\n"
              "        tensor<uint8, [4, 32, 1, 1]> wi = const()[name = string(\"wi\"), val = "
              "tensor<uint8, [4, 32, 1, 1]>(BLOBFILE(path = string(\"@model_path/weights/"
              "weight.bin\"), offset = uint64(64)))];\n"
              "        tensor<fp16, [1, 1, 1, 1, 256, 1]> wl = const()[name = string(\"wl\"), "
              "val = tensor<fp16, [1, 1, 1, 1, 256, 1]>(BLOBFILE(path = string(\"@model_path/"
              "weights/weight.bin\"), offset = uint64(256)))];\n"
              "        tensor<fp16, [4, 32, 1, 1]> w = constexpr_lut_to_dense(indices = wi, lut = "
              "wl)[name = string(\"w\")];\n"
              "        " T4(4, 4) " y = conv(weight = w, x = x)[name = string(\"y\")];\n"
              "    } -> (y);\n}\n",
         HEAD FN_CONV(64) "}\n", "InvalidMILProgram"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ane_fake_behaviour b;
        char spec[64];
        snprintf(spec, sizeof spec, "reject=%s", cases[i].rule);
        nc_error err = {0};
        CHECK_OK(ane_fake_behaviour_parse(spec, &b, &err), &err);
        CHECKF(check(cases[i].refused, b.reject, &err) == NC_ERR_UNSUPPORTED, "%s: %s",
               cases[i].rule, err.msg);
        char want[64];
        snprintf(want, sizeof want, "(fake device: reject=%s)", cases[i].rule);
        CHECKF(strstr(err.msg, "compileModel: ANECCompile() FAILED <- ") && strstr(err.msg, want) &&
                   strstr(err.msg, cases[i].kind),
               "%s", err.msg);
        CHECKF(check(cases[i].accepted, b.reject, &err) == NC_OK, "%s: %s", cases[i].rule, err.msg);
        CHECKF(check(cases[i].refused, ANE_REJECT_ALL, &err) == NC_ERR_UNSUPPORTED, "%s",
               cases[i].rule);
    }
}

static void test_settings_parse_and_bad_ones_are_named(void) {
    ane_fake_behaviour b;
    nc_error err = {0};
    CHECK_OK(
        ane_fake_behaviour_parse("reject=gather,wide-conv:shuffle-status:padded-strides", &b, &err),
        &err);
    CHECK(b.reject == (ANE_REJECT_GATHER | ANE_REJECT_WIDE_CONV) && b.shuffle_status &&
          b.padded_strides && !b.nameless_status);
    CHECK_OK(ane_fake_behaviour_parse("reject=all", &b, &err), &err);
    CHECK(b.reject == ANE_REJECT_ALL);
    CHECK_OK(ane_fake_behaviour_parse("", &b, &err), &err);
    CHECK(b.reject == 0 && !b.shuffle_status);
    CHECK(ane_fake_behaviour_parse("reject=gather,nope", &b, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "reject=nope is not a rule"));
    CHECK(ane_fake_behaviour_parse("reject=", &b, &err) == NC_ERR_INVALID);
    CHECK(ane_fake_behaviour_parse("shuffle", &b, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "'shuffle' is not a setting"));
}

int main(void) {
    RUN(test_each_rule_refuses_its_construct_only);
    RUN(test_settings_parse_and_bad_ones_are_named);
    return nc_test_exit_code();
}
