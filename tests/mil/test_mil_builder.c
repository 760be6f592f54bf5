/* The builder: programs it writes round-trip through the printer and parser,
 * large constants land in weight.bin at coremlc's offsets and read back as
 * the fp16 of the given floats, weights are shared between functions, and a
 * wrong argument name, dtype or shape fails at that call with a message
 * naming the op. The attention block is rebuilt and compared with the
 * hand-written corpus file's declared types. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "base/half.h"
#include "mil/builder.h"
#include "mil/compare.h"
#include "mil/mil_blob.h"
#include "mil/parse.h"
#include "mil/print.h"

static char tmp_dir[256];

static const char *model_dir(void) {
    if (!tmp_dir[0]) {
        snprintf(tmp_dir, sizeof tmp_dir, "/tmp/nectar_test_mil_builder_XXXXXX");
        if (!mkdtemp(tmp_dir)) return NULL;
    }
    return tmp_dir;
}

static const mil_type *t4(mil_builder *b, mil_dtype dt, int64_t a, int64_t c, int64_t d,
                          int64_t e) {
    int64_t dims[4] = {a, c, d, e};
    return mil_type_tensor(mil_builder_program(b), dt, 4, dims);
}

/* Text of a program, reparsed and compared; returns the printed text. */
static char *round_trip(const mil_program *p, const char *dir, int *ok) {
    char *t1, *t2;
    size_t n1, n2;
    nc_error err;
    mil_program *q;
    *ok = 0;
    if (mil_print_string(p, &t1, &n1, &err)) return NULL;
    if (mil_parse(t1, n1, "built.mil", &q, &err)) {
        printf("  reparse failed: %s\n", err.msg);
        return t1;
    }
    if (dir) mil_program_set_model_dir(q, dir, &err);
    if (mil_print_string(q, &t2, &n2, &err) == NC_OK) {
        char why[256];
        *ok = mil_program_equal(p, q, why, sizeof why) && n1 == n2 && !memcmp(t1, t2, n1);
        if (!*ok) printf("  round trip differs: %s\n", why);
        free(t2);
    }
    mil_program_free(q);
    return t1;
}

static void test_conv_block_with_weights_round_trips(void) {
    mil_builder *b;
    nc_error err;
    CHECK_OK(mil_builder_new(&b, model_dir(), &err), &err);
    CHECK_OK(mil_build_function(b, "main", "ios18"), mil_builder_error(b));
    mil_var *x = mil_build_input(b, "x", t4(b, MIL_DT_FP16, 1, 64, 1, 32));
    float *w = malloc(64 * 64 * sizeof *w), bias[64];
    for (int i = 0; i < 64 * 64; i++)
        w[i] = (float)((i % 97) - 48) / 64.0f;
    for (int i = 0; i < 64; i++)
        bias[i] = (float)i * 0.1f;
    mil_var *y = mil_build_conv1x1(b, "conv0", x, 64, 64, w, bias);
    y = mil_build_unary(b, "relu", "relu0", y);
    mil_var *z = mil_build_conv1x1(b, "conv1", y, 64, 64, w, bias);
    CHECKF(z, "%s", mil_builder_error(b)->msg);
    CHECK(z->type->rank == 4 && z->type->dims[1] == 64 && z->type->dims[3] == 32);
    CHECK_OK(mil_build_done(b, &z, 1), mil_builder_error(b));
    mil_program *p;
    CHECK_OK(mil_builder_finish(b, &p, &err), &err);
    /* the weights went to the blob at coremlc's offsets (weight, bias, weight, bias) */
    const mil_function *fn = p->functions[0];
    const mil_value *w0 = mil_function_var(fn, "conv0_weight")->cval,
                    *b0 = mil_function_var(fn, "conv0_bias")->cval;
    const mil_value *w1 = mil_function_var(fn, "conv1_weight")->cval;
    CHECK(w0->kind == MIL_VALUE_BLOB && w0->blob_offset == 64 && b0->blob_offset == 8320 &&
          w1->blob_offset == 8512);
    CHECK(!strcmp(w0->blob_path, "@model_path/weights/weight.bin"));
    const uint8_t *bytes;
    size_t nb;
    CHECK_OK(mil_value_bytes(p, w0, &bytes, &nb, &err), &err);
    CHECK(nb == 64 * 64 * 2);
    for (int i = 0; i < 64 * 64; i++) {
        uint16_t h;
        memcpy(&h, bytes + 2 * i, 2);
        CHECK(h == nc_f32_to_fp16(w[i]));
    }
    double d;
    CHECK_OK(mil_value_to_f64(p, b0, 7, &d, &err), &err);
    CHECK(d == nc_round_fp16(0.7f));
    free(w);
    int ok;
    char *text = round_trip(p, model_dir(), &ok);
    CHECK(ok);
    CHECK(strstr(text, "tensor<fp16, [64, 64, 1, 1]> conv0_weight = const()[name = "
                       "string(\"conv0_weight\"), val = tensor<fp16, [64, 64, 1, 1]>(BLOBFILE(path "
                       "= string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];"));
    CHECK(strstr(
        text, "tensor<fp16, [1, 64, 1, 32]> conv0 = conv(bias = conv0_bias, dilations = "
              "conv0_dilations, groups = conv0_groups, pad = conv0_pad, pad_type = conv0_pad_type, "
              "strides = conv0_strides, weight = conv0_weight, x = x)[name = string(\"conv0\")];"));
    /* the buildInfo line direct-ANE projects send (docs/references.md §4) */
    static const char head[] =
        "program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-component-MIL\", "
        "\"3510.2.1\"}, "
        "{\"coremlc-version\", \"3505.4.1\"}, {\"coremltools-component-milinternal\", \"\"}, "
        "{\"coremltools-version\", \"9.0\"}})]\n{\n";
    CHECK(!strncmp(text, head, strlen(head)));
    free(text);
    mil_program_free(p);
}

static void test_build_info_entries_stay_sorted_and_replace(void) {
    mil_builder *b;
    nc_error err;
    CHECK_OK(mil_builder_new(&b, NULL, &err), &err);
    CHECK_OK(mil_builder_build_info(b, "ane-nonce", "7"), mil_builder_error(b));
    CHECK_OK(mil_builder_build_info(b, "coremlc-version", "3600.25.1"), mil_builder_error(b));
    CHECK_OK(mil_builder_build_info(b, "zz", "last"), mil_builder_error(b));
    const mil_value *bi = mil_program_attr(mil_builder_program(b), "buildInfo");
    CHECK(bi && bi->kind == MIL_VALUE_DICT && bi->n == 6);
    static const char *keys[] = {"ane-nonce",           "coremlc-component-MIL",
                                 "coremlc-version",     "coremltools-component-milinternal",
                                 "coremltools-version", "zz"};
    for (int i = 0; i < 6; i++)
        CHECK(!strcmp(mil_value_str(bi->items[2 * i]), keys[i]));
    CHECK(!strcmp(mil_value_str(bi->items[5]), "3600.25.1"));
    mil_builder_free(b);
}

/* The corpus's hand-written attention block, rebuilt: every op's inferred
 * type must equal the type the file declares. */
static void test_attention_block_matches_corpus_types(void) {
    const char *path = nc_test_fixture_path(
        "mil-corpus/joshuaswarren__mil-hwx-compiler__tests__fixtures__attention.mil");
    CHECKF(path, "tests/fixtures/mil-corpus attention.mil missing");
    nc_error err;
    mil_program *ref;
    CHECK_OK(mil_parse_file(path, &ref, &err), &err);
    mil_builder *b;
    CHECK_OK(mil_builder_new(&b, NULL, &err), &err);
    CHECK_OK(mil_build_function(b, "main", "ios18"), mil_builder_error(b));
    mil_var *x = mil_build_input(b, "x", t4(b, MIL_DT_FP16, 1, 64, 4, 192));
    int32_t size[4] = {1, 64, 4, 64}, bq[4] = {0, 0, 0, 0}, bk[4] = {0, 0, 0, 64},
            bv[4] = {0, 0, 0, 128};
    int32_t pq[4] = {0, 2, 3, 1}, pk[4] = {0, 2, 1, 3}, po[4] = {0, 3, 1, 2};
    mil_var *q0 = mil_build_slice_by_size(b, "Q0", x, 4, bq, size);
    mil_var *k0 = mil_build_slice_by_size(b, "K0", x, 4, bk, size);
    mil_var *v0 = mil_build_slice_by_size(b, "V0", x, 4, bv, size);
    mil_var *q = mil_build_transpose(b, "Q", q0, 4, pq);
    mil_var *k = mil_build_transpose(b, "K", k0, 4, pk);
    mil_var *s = mil_build_matmul(b, "scores", q, k, 0, 0);
    mil_var *sc =
        mil_build_mul(b, "scaled", s, mil_build_const_scalar(b, "scale", MIL_DT_FP16, 0.125));
    mil_var *pr = mil_build_softmax(b, "probabilities", sc, -1);
    mil_var *v = mil_build_transpose(b, "V", v0, 4, pq);
    mil_var *c = mil_build_matmul(b, "context", pr, v, 0, 0);
    mil_var *cn = mil_build_transpose(b, "context_nchw", c, 4, po);
    mil_var *y = mil_build_reshape(b, "y", cn, 4, size);
    CHECKF(y, "%s", mil_builder_error(b)->msg);
    CHECK_OK(mil_build_done(b, &y, 1), mil_builder_error(b));
    mil_program *p;
    CHECK_OK(mil_builder_finish(b, &p, &err), &err);
    static const char *names[] = {"Q0", "K0",      "V0",           "Q",
                                  "K",  "scores",  "scaled",       "probabilities",
                                  "V",  "context", "context_nchw", "y"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const mil_var *mine = mil_function_var(p->functions[0], names[i]);
        const mil_var *theirs = mil_function_var(ref->functions[0], names[i]);
        CHECKF(mine && theirs && mil_type_equal(mine->type, theirs->type), "%s", names[i]);
    }
    int ok;
    free(round_trip(p, NULL, &ok));
    CHECK(ok);
    mil_program_free(p);
    mil_program_free(ref);
}

static void test_functions_share_one_weight(void) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/shared", model_dir());
    mil_builder *b;
    nc_error err;
    CHECK_OK(mil_builder_new(&b, dir, &err), &err);
    float w[32 * 32];
    for (int i = 0; i < 32 * 32; i++)
        w[i] = (float)i;
    const mil_value *shared = NULL;
    static const char *fns[] = {"prefill", "decode"};
    for (int f = 0; f < 2; f++) {
        CHECK_OK(mil_build_function(b, fns[f], "ios18"), mil_builder_error(b));
        mil_var *x = mil_build_input(b, "x", t4(b, MIL_DT_FP16, 1, 32, 1, f ? 32 : 64));
        mil_var *wv;
        if (!shared) {
            int64_t wd[4] = {32, 32, 1, 1};
            wv = mil_build_const_fp16(b, "w", 4, wd, w);
            shared = wv ? wv->cval : NULL;
        } else {
            wv = mil_build_const(b, "w", shared);
        }
        mil_var *y = mil_build_conv(b, "proj", x, wv, NULL, 1);
        CHECKF(y, "%s", mil_builder_error(b)->msg);
        CHECK_OK(mil_build_done(b, &y, 1), mil_builder_error(b));
    }
    mil_program *p;
    CHECK_OK(mil_builder_finish(b, &p, &err), &err);
    const mil_value *a = mil_function_var(p->functions[0], "w")->cval,
                    *c = mil_function_var(p->functions[1], "w")->cval;
    CHECK(a->kind == MIL_VALUE_BLOB && c->kind == MIL_VALUE_BLOB &&
          a->blob_offset == c->blob_offset);
    char path[400];
    snprintf(path, sizeof path, "%s/weights/weight.bin", dir);
    mil_blob_file f;
    CHECK_OK(mil_blob_open(path, &f, &err), &err);
    CHECK(f.count == 1); /* written once */
    mil_blob_close(&f);
    CHECK(mil_function_var(p->functions[1], "proj")->type->dims[3] == 32);
    mil_program_free(p);
    remove(path);
    snprintf(path, sizeof path, "%s/weights", dir);
    rmdir(path);
    rmdir(dir);
}

/* Each bad call fails right there, names the op, and poisons the builder. */
static void expect_fail(mil_builder *b, mil_var *result, const char *needle) {
    const nc_error *e = mil_builder_error(b);
    CHECKF(!result && e->code != NC_OK && strstr(e->msg, needle), "expected '%s', got '%s'", needle,
           e->msg);
}

static mil_builder *fresh(mil_var **x, mil_var **y) {
    mil_builder *b;
    nc_error err;
    if (mil_builder_new(&b, NULL, &err)) return NULL;
    mil_build_function(b, "main", "ios18");
    *x = mil_build_input(b, "x", t4(b, MIL_DT_FP16, 1, 4, 8, 16));
    *y = mil_build_input(b, "y", t4(b, MIL_DT_FP16, 1, 4, 32, 16));
    return b;
}

static void test_builder_errors_name_the_op_at_the_call(void) {
    mil_var *x, *y;
    mil_builder *b = fresh(&x, &y);
    CHECK(b);
    expect_fail(b, mil_build_matmul(b, "qk", x, y, 0, 0),
                "matmul 'qk': inner dimensions differ: x gives 16, y gives 32");
    CHECK(mil_build_unary(b, "relu", "r", x) == NULL); /* sticky */
    mil_builder_free(b);

    b = fresh(&x, &y);
    mil_build_arg bad[] = {{.name = "x", .var = x}, {.name = "z", .var = x}};
    expect_fail(b, mil_build_op(b, "add", "s", bad, 2), "add 's': unknown argument 'z'");
    mil_builder_free(b);

    b = fresh(&x, &y);
    expect_fail(b, mil_build_add(b, "a", x, mil_build_const_i32(b, "one", 1)),
                "add 'a': argument 'y' is int32 but 'x' is fp16");
    mil_builder_free(b);

    b = fresh(&x, &y);
    int32_t shape[2] = {7, -1};
    expect_fail(b, mil_build_reshape(b, "rs", x, 2, shape),
                "reshape 'rs': cannot infer -1: 512 elements do not divide by 7");
    mil_builder_free(b);

    b = fresh(&x, &y);
    mil_build_arg miss[] = {{.name = "x", .var = x}};
    expect_fail(b, mil_build_op(b, "sub", "d", miss, 1), "sub 'd': missing required argument 'y'");
    mil_builder_free(b);

    b = fresh(&x, &y);
    expect_fail(b, mil_build_softmax(b, "sm", x, 4),
                "softmax 'sm': axis 4 is out of range for rank 4");
    mil_builder_free(b);

    b = fresh(&x, &y);
    expect_fail(b, mil_build_unary(b, "frobnicate", "f", x), "frobnicate 'f': unknown op type");
    mil_builder_free(b);

    b = fresh(&x, &y);
    mil_build_arg ref[] = {{.name = "x", .ref = "nope"}};
    expect_fail(b, mil_build_op(b, "relu", "r", ref, 1),
                "relu 'r': argument 'x' refers to unknown variable 'nope'");
    mil_builder_free(b);

    b = fresh(&x, &y); /* by name works */
    mil_build_arg ok_ref[] = {{.name = "x", .ref = "x"}};
    CHECK(mil_build_op(b, "relu", "r", ok_ref, 1));
    expect_fail(b, mil_build_unary(b, "relu", "r", x), "name 'r' is already defined");
    mil_builder_free(b);

    b = fresh(&x, &y); /* a non-constant where a constant is required */
    mil_build_arg nc[] = {{.name = "x", .var = x}, {.name = "perm", .var = x}};
    expect_fail(b, mil_build_op(b, "transpose", "t", nc, 2),
                "transpose 't': argument 'perm' must be a compile-time constant");
    mil_builder_free(b);

    b = fresh(&x, &y); /* read_state does not exist before iOS18 */
    mil_builder *b2;
    nc_error err;
    CHECK_OK(mil_builder_new(&b2, NULL, &err), &err);
    mil_build_function(b2, "main", "ios17");
    mil_var *x2 = mil_build_input(b2, "x", t4(b2, MIL_DT_FP16, 1, 4, 8, 16));
    expect_fail(
        b2, mil_build_op(b2, "slice_update", "su", (mil_build_arg[]){{.name = "x", .var = x2}}, 1),
        "slice_update 'su': not available before ios18");
    mil_builder_free(b2);
    mil_program *p;
    CHECK(mil_builder_finish(b, &p, &err) == NC_ERR_INVALID); /* main still open */
    CHECK(p == NULL);
}

static void test_split_concat_and_friends_infer_shapes(void) {
    mil_var *x, *y, *parts[4];
    mil_builder *b = fresh(&x, &y);
    CHECK(b);
    int n = mil_build_split(b, "sp", y, 2, 4, NULL, parts, 4);
    CHECKF(n == 4, "%s", mil_builder_error(b)->msg);
    CHECK(parts[3]->type->dims[2] == 8 && !strcmp(parts[3]->name, "sp_3"));
    mil_var *cat = mil_build_concat(b, "cat", parts, 3, -2);
    CHECK(cat && cat->type->dims[2] == 24);
    int32_t sizes[2] = {30, 2};
    n = mil_build_split(b, "sp2", y, -2, 2, sizes, parts, 4);
    CHECK(n == 2 && parts[0]->type->dims[2] == 30 && parts[1]->type->dims[2] == 2);
    int32_t ax[1] = {1};
    mil_var *r = mil_build_reduce(b, "reduce_sum", "rs", x, 1, ax, 1);
    CHECK(r && r->type->rank == 4 && r->type->dims[1] == 1);
    mil_var *c = mil_build_cast(b, "c32", r, MIL_DT_FP32);
    CHECK(c && c->type->dtype == MIL_DT_FP32);
    mil_var *rs = mil_build_rsqrt(b, "inv", c, 1e-6);
    CHECK(rs && rs->type->dtype == MIL_DT_FP32);
    int32_t beg[4] = {0, 0, -4, 0}, end[4] = {1, 4, 8, 16}, str[4] = {1, 1, 2, 3};
    mil_var *sl = mil_build_slice_by_index(b, "sl", x, 4, beg, end, str);
    CHECK(sl && sl->type->dims[2] == 2 && sl->type->dims[3] == 6);
    mil_var *g = mil_build_gelu(b, "g", x, "EXACT");
    CHECK(g);
    mil_var *outs[2] = {cat, g};
    CHECK_OK(mil_build_done(b, outs, 2), mil_builder_error(b));
    mil_program *p;
    nc_error err;
    CHECK_OK(mil_builder_finish(b, &p, &err), &err);
    int ok;
    free(round_trip(p, NULL, &ok));
    CHECK(ok);
    mil_program_free(p);
}

int main(void) {
    RUN(test_conv_block_with_weights_round_trips);
    RUN(test_build_info_entries_stay_sorted_and_replace);
    RUN(test_attention_block_matches_corpus_types);
    RUN(test_functions_share_one_weight);
    RUN(test_builder_errors_name_the_op_at_the_call);
    RUN(test_split_concat_and_friends_infer_shapes);
    char path[400];
    snprintf(path, sizeof path, "%s/weights/weight.bin", model_dir());
    remove(path);
    snprintf(path, sizeof path, "%s/weights", model_dir());
    rmdir(path);
    rmdir(model_dir());
    return nc_test_exit_code();
}
