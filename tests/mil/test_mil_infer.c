/* Shape/type inference for awkward cases, with the expected shapes worked
 * out by hand from NumPy / coremltools semantics (conv output size from
 * pad/stride/dilation/groups, matmul batch broadcasting and 1-D promotion,
 * reshape's -1 and 0 per opset, negative axes and strides, gather with
 * batch_dims, iOS18 palettization). Each case is one op in a tiny program.
 * A second table comes from coremltools' own type inference (fixture). */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "base/mmap.h"
#include "mil/ops.h"
#include "mil/parse.h"

typedef struct {
    const char *opset;
    const char *inputs; /* function parameter list */
    const char *expr;   /* the op call, e.g. "matmul(x = a, y = b)" */
    const char *want;   /* inferred type of output 0, or "!substring" of the error */
} infer_case;

static const infer_case cases[] = {
    /* conv: (in + pads - dilation*(k-1) - 1) / stride + 1; same: ceil(in / stride) */
    {"ios18", "tensor<fp16, [1, 3, 32, 32]> x, tensor<fp16, [8, 3, 3, 3]> w",
     "conv(x = x, weight = w, strides = tensor<int32, [2]>([2, 2]), pad_type = string(\"custom\"), "
     "pad = tensor<int32, [4]>([1, 1, 1, 1]))",
     "tensor<fp16, [1, 8, 16, 16]>"},
    {"ios18", "tensor<fp16, [1, 4, 10, 10]> x, tensor<fp16, [6, 2, 3, 3]> w",
     "conv(x = x, weight = w, dilations = tensor<int32, [2]>([2, 2]), groups = int32(2))",
     "tensor<fp16, [1, 6, 6, 6]>"},
    {"ios18", "tensor<fp16, [1, 4, 1, 33]> x, tensor<fp16, [4, 4, 1, 3]> w",
     "conv(x = x, weight = w, strides = tensor<int32, [2]>([1, 2]), pad_type = string(\"same\"))",
     "tensor<fp16, [1, 4, 1, 17]>"},
    {"ios18", "tensor<fp16, [1, 4, 1, 8]> x, tensor<fp16, [4, 3, 1, 1]> w",
     "conv(x = x, weight = w)", "!x has 4 channels but weight expects 3 x 1 groups"},
    /* matmul */
    {"ios18", "tensor<fp16, [2, 1, 3, 4]> a, tensor<fp16, [5, 4, 6]> b", "matmul(x = a, y = b)",
     "tensor<fp16, [2, 5, 3, 6]>"},
    {"ios18", "tensor<fp16, [1, 4, 64, 16]> a, tensor<fp16, [1, 4, 32, 16]> b",
     "matmul(x = a, y = b, transpose_y = bool(true))", "tensor<fp16, [1, 4, 64, 32]>"},
    {"ios18", "tensor<fp32, [4]> a, tensor<fp32, [4, 6]> b", "matmul(x = a, y = b)",
     "tensor<fp32, [6]>"},
    {"ios18", "tensor<fp32, [3, 4]> a, tensor<fp32, [4]> b", "matmul(x = a, y = b)",
     "tensor<fp32, [3]>"},
    {"ios18", "tensor<fp32, [3, 4]> a, tensor<fp32, [4, 3]> b",
     "matmul(x = a, y = b, transpose_x = bool(true))",
     "!inner dimensions differ: x gives 3, y gives 4"},
    {"ios18", "tensor<fp32, [2, 3, 4]> a, tensor<fp32, [3, 4, 5]> b", "matmul(x = a, y = b)",
     "!cannot broadcast"},
    {"ios18", "tensor<fp16, [1, 2, 4]> x",
     "linear(x = x, weight = tensor<fp16, [3, 4]>([0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, "
     "0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0]))",
     "tensor<fp16, [1, 2, 3]>"},
    {"ios18", "tensor<fp16, [1, 64, 256]> x, tensor<fp16, [128, 256]> w",
     "linear(x = x, weight = w)", "!argument 'weight' must be a compile-time constant"},
    /* reshape: iOS17 right-aligns 0; iOS15 copies by position only at equal rank */
    {"ios18", "tensor<fp16, [2, 3, 4]> x", "reshape(x = x, shape = tensor<int32, [2]>([0, -1]))",
     "tensor<fp16, [3, 8]>"},
    {"ios15", "tensor<fp16, [2, 3, 4]> x", "reshape(x = x, shape = tensor<int32, [3]>([0, 0, -1]))",
     "tensor<fp16, [2, 3, 4]>"},
    {"ios15", "tensor<fp16, [2, 3, 4]> x", "reshape(x = x, shape = tensor<int32, [2]>([0, -1]))",
     "!shape uses 0"},
    {"ios18", "tensor<fp16, [?, 4]> x", "reshape(x = x, shape = tensor<int32, [2]>([-1, 2]))",
     "tensor<fp16, [?, 2]>"},
    /* axes and permutations */
    {"ios18", "tensor<fp16, [1, 2, 3, 4]> x",
     "transpose(x = x, perm = tensor<int32, [4]>([0, 2, -3, -1]))", "tensor<fp16, [1, 3, 2, 4]>"},
    {"ios18", "tensor<fp16, [1, 2, 3, 4]> x",
     "transpose(x = x, perm = tensor<int32, [4]>([0, 2, 2, 1]))", "!perm is not a permutation"},
    {"ios18", "tensor<fp16, [3, 4]> x", "expand_dims(x = x, axes = tensor<int32, [2]>([-1, 0]))",
     "tensor<fp16, [1, 3, 4, 1]>"},
    {"ios18", "tensor<fp16, [1, 4, 1, 5]> x", "squeeze(x = x)", "tensor<fp16, [4, 5]>"},
    {"ios18", "tensor<fp16, [1, 4, 1, 5]> x", "squeeze(x = x, axes = tensor<int32, [1]>([1]))",
     "!cannot squeeze axis 1 of size 4"},
    {"ios18", "tensor<fp16, [2, 3, 4]> x", "reduce_mean(x = x, axes = tensor<int32, [1]>([-1]))",
     "tensor<fp16, [2, 3]>"},
    {"ios18", "tensor<fp16, [2, 3, 4]> x", "reduce_sum(x = x, keep_dims = bool(true))",
     "tensor<fp16, [1, 1, 1]>"},
    {"ios18", "tensor<fp32, [2, 5]> x", "reduce_argmax(x = x, axis = int32(-1))",
     "tensor<int32, [2]>"},
    /* slicing: numpy x[8:2:-2] has 3 elements; squeeze_mask drops the dim */
    {"ios18", "tensor<fp16, [10]> x",
     "slice_by_index(x = x, begin = tensor<int32, [1]>([8]), end = tensor<int32, [1]>([2]), stride "
     "= tensor<int32, [1]>([-2]))",
     "tensor<fp16, [3]>"},
    {"ios18", "tensor<fp16, [4, 5]> x",
     "slice_by_index(x = x, begin = tensor<int32, [2]>([1, 0]), end = tensor<int32, [2]>([2, 5]), "
     "squeeze_mask = tensor<bool, [2]>([true, false]))",
     "tensor<fp16, [5]>"},
    {"ios18", "tensor<fp16, [4, 5]> x",
     "slice_by_index(x = x, begin = tensor<int32, [2]>([-3, 7]), end = tensor<int32, [2]>([100, "
     "9]))",
     "tensor<fp16, [3, 0]>"},
    {"ios18", "tensor<fp16, [4, 6]> x",
     "slice_by_size(x = x, begin = tensor<int32, [2]>([1, 2]), size = tensor<int32, [2]>([-1, 3]))",
     "tensor<fp16, [3, 3]>"},
    {"ios18", "tensor<fp16, [4, 6]> x",
     "slice_by_size(x = x, begin = tensor<int32, [2]>([1, 4]), size = tensor<int32, [2]>([1, 3]))",
     "!dim 1: slice [4, +3) exceeds size 6"},
    /* gathers */
    {"ios18", "tensor<fp16, [10, 5, 7]> x, tensor<int32, [2, 3]> i",
     "gather(x = x, indices = i, axis = int32(1))", "tensor<fp16, [10, 2, 3, 7]>"},
    {"ios18", "tensor<fp16, [4, 10, 7]> x, tensor<int32, [4, 3]> i",
     "gather(x = x, indices = i, axis = int32(1), batch_dims = int32(1))",
     "tensor<fp16, [4, 3, 7]>"},
    {"ios15", "tensor<fp16, [10, 5]> x, tensor<int32, [3]> i",
     "gather(x = x, indices = i, batch_dims = int32(0))", "!unknown argument 'batch_dims'"},
    {"ios18", "tensor<fp16, [4, 10]> x, tensor<int32, [4, 2]> i",
     "gather_along_axis(x = x, indices = i, axis = int32(-1))", "tensor<fp16, [4, 2]>"},
    /* broadcasting */
    {"ios18", "tensor<bool, [1, 4]> c, tensor<fp16, [3, 1]> a",
     "select(cond = c, a = a, b = fp16(0x0p+0))", "tensor<fp16, [3, 4]>"},
    {"ios18", "tensor<fp16, [2, 3]> a, tensor<fp16, [4]> b", "add(x = a, y = b)",
     "!cannot broadcast 'x' tensor<fp16, [2, 3]> with 'y' tensor<fp16, [4]>"},
    {"ios18", "tensor<fp16, [?, 3]> a, tensor<fp16, [5, 1]> b", "less(x = a, y = b)",
     "tensor<bool, [5, 3]>"},
    {"ios18", "tensor<fp16, [2, 3]> a, tensor<fp32, [2, 3]> b", "mul(x = a, y = b)",
     "!argument 'y' is fp32 but 'x' is fp16"},
    /* padding, tiling, concat, fill, cast */
    {"ios18", "tensor<fp16, [1, 3, 4]> x", "pad(x = x, pad = tensor<int32, [2]>([1, 2]))",
     "tensor<fp16, [1, 3, 7]>"},
    {"ios18", "tensor<fp16, [2, 3]> x", "tile(x = x, reps = tensor<int32, [2]>([2, 1]))",
     "tensor<fp16, [4, 3]>"},
    {"ios18", "tensor<fp16, [1, 4, 1, ?]> a, tensor<fp16, [1, 4, 1, 8]> b",
     "concat(values = (a, b, a), axis = int32(1))", "tensor<fp16, [1, 12, 1, 8]>"},
    {"ios18", "tensor<fp16, [1, 4]> a", "concat(values = a, axis = int32(1))", "!must be a tuple"},
    {"ios18", "tensor<fp16, [1]> a",
     "fill(shape = tensor<int32, [3]>([2, 1, 5]), value = fp16(0x1p+0))",
     "tensor<fp16, [2, 1, 5]>"},
    {"ios15", "tensor<fp16, [2]> x", "cast(x = x, dtype = string(\"int8\"))",
     "!dtype 'int8' is not a cast target"},
    {"ios17", "tensor<fp16, [2]> x", "cast(x = x, dtype = string(\"int8\"))", "tensor<int8, [2]>"},
    /* compile-time decompression (shapes from the real encoder file) */
    {"ios18", "tensor<fp16, [1]> unused",
     "constexpr_lut_to_dense(indices = tensor<uint4, [4, 4]>([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "
     "11, 12, 13, 14, 15]), lut = tensor<fp16, [2, 1, 16, 1]>([0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, "
     "0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, "
     "0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, "
     "0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0]))",
     "tensor<fp16, [4, 4]>"},
    {"ios16", "tensor<fp16, [1]> unused",
     "constexpr_lut_to_dense()[indices = tensor<uint8, [8]>([0, 0, 0, 0, 0, 0, 0, 0]), lut = "
     "tensor<fp16, [16]>([0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, "
     "0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0, 0x0p+0]), shape = tensor<uint32, [2]>([4, "
     "4])]",
     "tensor<fp16, [4, 4]>"},
    {"ios18", "tensor<fp16, [1, 4, 1, 16]> x",
     "layer_norm(x = x, axes = tensor<int32, [1]>([1]), gamma = tensor<fp16, [3]>([0x1p+0, 0x1p+0, "
     "0x1p+0]))",
     "!gamma has 3 elements, the normalised axes hold 4"},
    {"ios18", "tensor<fp16, [1, 8, 4]> q, tensor<fp16, [1, 6, 4]> k, tensor<fp16, [1, 6, 5]> v",
     "scaled_dot_product_attention(query = q, key = k, value = v)", "tensor<fp16, [1, 8, 5]>"},
    {"ios18", "state<tensor<fp16, [1, 4]>> s", "read_state(input = s)", "tensor<fp16, [1, 4]>"},
};

static void run_case(const infer_case *c) {
    char src[4096];
    snprintf(src, sizeof src,
             "program(1.3)\n{\n    func main<%s>(%s) {\n            fp16 out = %s;\n        } -> "
             "(out);\n}\n",
             c->opset, c->inputs, c->expr);
    mil_program *p;
    nc_error err;
    CHECK_OK(mil_parse(src, strlen(src), "case.mil", &p, &err), &err);
    mil_infer_out out;
    nc_status st = mil_op_infer(p, p->functions[0]->ops[0], &out, &err);
    char got[512];
    if (st == NC_OK)
        mil_type_str(out.types[0], got, sizeof got);
    else
        snprintf(got, sizeof got, "!%s", err.msg);
    mil_program_free(p);
    if (c->want[0] == '!')
        CHECKF(st != NC_OK && strstr(got, c->want + 1), "%s\n    got  %s\n    want %s", c->expr,
               got, c->want);
    else
        CHECKF(st == NC_OK && !strcmp(got, c->want), "%s\n    got  %s\n    want %s", c->expr, got,
               c->want);
}

static void test_inference_matches_hand_computed_shapes(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_case(&cases[i]);
        if (nc_test_failed_) return;
    }
}

static void test_split_outputs_and_lookup_by_opset(void) {
    const char *src = "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 10, 4]> x) {\n"
                      "            fp16 a, fp16 b, fp16 c = split(x = x, split_sizes = "
                      "tensor<int32, [3]>([2, 3, 5]), axis = int32(-2));\n"
                      "        } -> (a);\n}\n";
    mil_program *p;
    nc_error err;
    CHECK_OK(mil_parse(src, strlen(src), "s.mil", &p, &err), &err);
    mil_infer_out out;
    CHECK_OK(mil_op_infer(p, p->functions[0]->ops[0], &out, &err), &err);
    CHECK(out.n == 3 && out.types[0]->dims[1] == 2 && out.types[1]->dims[1] == 3 &&
          out.types[2]->dims[1] == 5);
    mil_program_free(p);
    /* the newest row not above the opset wins */
    CHECK(mil_op_lookup("gather", 15)->opset == 15);
    CHECK(mil_op_lookup("gather", 16)->opset == 16);
    CHECK(mil_op_lookup("gather", 18)->opset == 17);
    CHECK(mil_op_lookup("slice_update", 17) == NULL);
    CHECK(mil_op_lookup("slice_update", 18) != NULL);
    CHECK(mil_opset_version("CoreML8") == 18 && mil_opset_version("ios16") == 16);
    /* every op the issue names has a row */
    static const char *needed[] = {"const",
                                   "conv",
                                   "matmul",
                                   "linear",
                                   "add",
                                   "sub",
                                   "mul",
                                   "real_div",
                                   "pow",
                                   "rsqrt",
                                   "sqrt",
                                   "exp",
                                   "tanh",
                                   "sigmoid",
                                   "silu",
                                   "relu",
                                   "gelu",
                                   "softmax",
                                   "reduce_sum",
                                   "reduce_mean",
                                   "reduce_max",
                                   "layer_norm",
                                   "transpose",
                                   "reshape",
                                   "expand_dims",
                                   "squeeze",
                                   "slice_by_index",
                                   "slice_by_size",
                                   "concat",
                                   "split",
                                   "gather",
                                   "gather_along_axis",
                                   "select",
                                   "cast",
                                   "greater",
                                   "less",
                                   "equal",
                                   "fill",
                                   "band_part",
                                   "pad",
                                   "tile",
                                   "scatter",
                                   "scatter_along_axis",
                                   "scatter_nd",
                                   "slice_update",
                                   "read_state",
                                   "write_state",
                                   "constexpr_lut_to_dense",
                                   "constexpr_affine_dequantize",
                                   "greater_equal",
                                   "tensor_buffer_to_tensor",
                                   "tensor_to_tensor_buffer"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        CHECKF(mil_op_lookup(needed[i], 0), "%s", needed[i]);
}

/* coremltools' own type inference (tools/mil_infer_fixtures.py) on the same
 * ops: every type it computes, nectar must compute; every op it rejects,
 * nectar must reject. */
static void test_inference_matches_coremltools(void) {
    char *text;
    size_t len;
    nc_error err;
    CHECK_OK(nc_read_file("tests/fixtures/mil_infer/cases.txt", &text, &len, &err), &err);
    int n_cases = 0, n_bad = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        char *field[4];
        int nf = 0;
        for (char *p = line; nf < 4; nf++) {
            field[nf] = p;
            p = strchr(p, '\t');
            if (!p) {
                nf++;
                break;
            }
            *p++ = 0;
        }
        if (nf != 4) {
            n_bad++;
            printf("  malformed fixture line: %.60s\n", line);
            continue;
        }
        size_t cap = strlen(field[1]) + strlen(field[2]) + 256;
        char *src = malloc(cap);
        if (!src) break;
        snprintf(src, cap,
                 "program(1.3)\n{\n    func main<%s>(%s) {\n            fp16 out = %s;\n        } "
                 "-> (out);\n}\n",
                 field[0], field[1], field[2]);
        mil_program *p;
        char got[2048] = "";
        if (mil_parse(src, strlen(src), "case.mil", &p, &err) != NC_OK) {
            snprintf(got, sizeof got, "parse error: %s", err.msg);
        } else {
            mil_infer_out out;
            if (mil_op_infer(p, p->functions[0]->ops[0], &out, &err) != NC_OK) {
                snprintf(got, sizeof got, "!");
            } else {
                size_t pos = 0;
                for (int i = 0; i < out.n && pos < sizeof got - 300; i++) {
                    char t[256];
                    pos += (size_t)snprintf(got + pos, sizeof got - pos, "%s%s", i ? " ; " : "",
                                            mil_type_str(out.types[i], t, sizeof t));
                }
            }
            mil_program_free(p);
        }
        if (strcmp(got, field[3])) {
            n_bad++;
            printf("  %.120s\n    nectar      %s%s%s\n    coremltools %s\n", field[2], got,
                   got[0] == '!' ? " " : "", got[0] == '!' ? err.msg : "", field[3]);
        }
        free(src);
        n_cases++;
    }
    free(text);
    CHECKF(n_bad == 0, "%d of %d cases differ from coremltools", n_bad, n_cases);
    CHECKF(n_cases >= 50, "only %d cases", n_cases);
}

int main(void) {
    RUN(test_inference_matches_hand_computed_shapes);
    RUN(test_split_outputs_and_lookup_by_opset);
    RUN(test_inference_matches_coremltools);
    return nc_test_exit_code();
}
