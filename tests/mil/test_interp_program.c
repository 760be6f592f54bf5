/* The interpreter on whole programs: the hand-written attention block from
 * the corpus against numpy's attention (tools/mil_goldens.py: an exact
 * float64 result for fp32 mode and a numpy simulation of the fp16 model for
 * fp16 mode), a prepared function run many times with changing inputs, state
 * that persists across runs, and clear errors for bad inputs. */
#include <math.h>
#include <stdint.h>

#include "../test.h"
#include "base/half.h"
#include "io/npy.h"
#include "mil/interp.h"
#include "mil/check.h"
#include "mil/interp_priv.h"
#include "mil/ops.h"
#include "mil/parse.h"

#define ATTN "mil-corpus/joshuaswarren__mil-hwx-compiler__tests__fixtures__attention.mil"

/* Max |got - want| over the output, NaN counted as infinite. */
static double max_abs_diff(const mil_interp_view *got, const nc_npy *want) {
    double m = 0;
    for (size_t i = 0; i < got->count; i++) {
        double w = want->dtype == NC_NPY_F16 ? nc_fp16_to_f32(((uint16_t *)want->data)[i])
                                             : ((float *)want->data)[i];
        double d = fabs(got->f32[i] - w);
        if (!(d <= m)) m = isnan(d) ? INFINITY : d;
    }
    return m;
}

static void attention_case(mil_interp_mode mode, const char *golden, double tol) {
    const char *path = nc_test_fixture_path(ATTN);
    CHECKF(path, "tests/fixtures/mil-corpus attention.mil missing");
    nc_error err;
    mil_program *prog;
    mil_interp *it;
    nc_npy x, want;
    CHECK_OK(mil_parse_file(path, &prog, &err), &err);
    CHECK_OK(mil_interp_new(prog, "main", mode, &it, &err), &err);
    CHECK_OK(nc_npy_read("tests/fixtures/mil/attention/x.npy", &x, &err), &err);
    CHECK_OK(nc_npy_read(golden, &want, &err), &err);
    CHECK_OK(mil_interp_set_input_npy(it, "x", &x, &err), &err);
    CHECK_OK(mil_interp_run(it, &err), &err);
    mil_interp_view y;
    CHECK_OK(mil_interp_get(it, "y", &y, &err), &err);
    CHECK(y.rank == 4 && y.shape[1] == 64 && y.shape[3] == 64 && y.count == want.count);
    double d = max_abs_diff(&y, &want);
    printf("  attention %s: max |interp - numpy| = %.3g (tolerance %.3g)\n",
           mode == MIL_INTERP_FP16 ? "fp16" : "fp32", d, tol);
    CHECKF(d <= tol, "max abs difference %g", d);
    nc_npy_free(&x);
    nc_npy_free(&want);
    mil_interp_free(it);
    mil_program_free(prog);
}

/* fp16 mode against numpy's simulation of the same model (each op rounded
 * to fp16, fp32 accumulation): differences come only from summation order
 * and libm, a few fp16 ulps of values below ~4. */
static void test_attention_fp16_matches_numpy_fp16_model(void) {
    attention_case(MIL_INTERP_FP16, "tests/fixtures/mil/attention/y.f16.npy", 2e-3);
}

static void test_attention_fp32_matches_numpy_float64(void) {
    attention_case(MIL_INTERP_FP32, "tests/fixtures/mil/attention/y.f32.npy", 2e-5);
}

/* The fp16 model stays close to the exact result too (what the ANE's error
 * budget looks like for one attention block). */
static void test_attention_fp16_close_to_exact(void) {
    attention_case(MIL_INTERP_FP16, "tests/fixtures/mil/attention/y.f32.npy", 5e-3);
}

/* Runs tests/fixtures/mil/programs/<name> in `mode` and returns the max and
 * mean |y - numpy's float64 RMSNorm|, and how many elements are off by more
 * than 0.1. */
static int run_rmsnorm(const char *name, mil_interp_mode mode, double *max_err, double *mean_err,
                       size_t *n_off) {
    char path[256];
    nc_error err;
    mil_program *prog;
    mil_interp *it;
    nc_npy x, want;
    snprintf(path, sizeof path, "tests/fixtures/mil/programs/%s/model.mil", name);
    if (mil_parse_file(path, &prog, &err) != NC_OK) return printf("  %s\n", err.msg), -1;
    int rc = -1;
    if (mil_check_strict(prog, 1, &err) != NC_OK) printf("  %s\n", err.msg); /* ANE-clean programs */
    else if (mil_interp_new(prog, NULL, mode, &it, &err) == NC_OK) {
        snprintf(path, sizeof path, "tests/fixtures/mil/programs/%s/x.npy", name);
        nc_npy_read(path, &x, &err);
        snprintf(path, sizeof path, "tests/fixtures/mil/programs/%s/y.f32.npy", name);
        nc_npy_read(path, &want, &err);
        mil_interp_view y;
        if (mil_interp_set_input_npy(it, "x", &x, &err) == NC_OK && mil_interp_run(it, &err) == NC_OK &&
            mil_interp_get(it, "y", &y, &err) == NC_OK && y.count == want.count) {
            double sum = 0;
            *max_err = 0;
            *n_off = 0;
            for (size_t i = 0; i < y.count; i++) {
                double d = fabs(y.f32[i] - ((float *)want.data)[i]);
                if (!(d <= 1e30)) d = 1e30; /* NaN, inf */
                sum += d;
                *max_err = nc_worse(*max_err, d);
                *n_off += d > 0.1;
            }
            *mean_err = sum / (double)y.count;
            rc = 0;
        } else {
            printf("  %s\n", err.msg);
        }
        nc_npy_free(&x);
        nc_npy_free(&want);
        mil_interp_free(it);
    }
    mil_program_free(prog);
    return rc;
}

/* RMSNorm of activations around 300 in the ANE layout (docs/ane-rules.md): the
 * naive program squares x, which overflows fp16, and the fp16 model shows it
 * (while fp32 mode matches numpy); the program that squares x/128 instead
 * matches numpy in fp16 mode too. */
static void test_rmsnorm_fp16_overflow_shows_and_rescaling_fixes_it(void) {
    double mx, mean;
    size_t off;
    CHECK(run_rmsnorm("rmsnorm_naive", MIL_INTERP_FP32, &mx, &mean, &off) == 0);
    printf("  naive, fp32 mode:    max %.3g mean %.3g\n", mx, mean);
    CHECK(mx < 1e-4);
    CHECK(run_rmsnorm("rmsnorm_naive", MIL_INTERP_FP16, &mx, &mean, &off) == 0);
    printf("  naive, fp16 mode:    %zu of 2048 off by > 0.1\n", off);
    CHECK(off > 1000);
    CHECK(run_rmsnorm("rmsnorm_scaled", MIL_INTERP_FP16, &mx, &mean, &off) == 0);
    printf("  rescaled, fp16 mode: max %.3g mean %.3g\n", mx, mean);
    CHECK(mx < 1e-2 && mean < 1e-3);
}

static const char *AXPY =
    "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
    "    func main<ios18>(tensor<fp16, [2, 3]> x, tensor<fp16, [3]> y) {\n"
    "        fp16 a = const()[name = string(\"a\"), val = fp16(0x1.8p+1)];\n"
    "        tensor<fp16, [2, 3]> ax = mul(x = x, y = a)[name = string(\"ax\")];\n"
    "        tensor<fp16, [2, 3]> z = add(x = ax, y = y)[name = string(\"z\")];\n"
    "    } -> (z);\n}\n";

/* Prepared once, run with different inputs: each run gives 3x + y. */
static void test_prepared_function_reruns_with_new_inputs(void) {
    nc_error err;
    mil_program *prog;
    mil_interp *it;
    CHECK_OK(mil_parse(AXPY, strlen(AXPY), "axpy.mil", &prog, &err), &err);
    CHECK_OK(mil_interp_new(prog, NULL, MIL_INTERP_FP16, &it, &err), &err);
    int64_t sx[2] = {2, 3}, sy[1] = {3};
    for (int r = 0; r < 5; r++) {
        float x[6], y[3];
        for (int i = 0; i < 6; i++) x[i] = (float)(i - r);
        for (int i = 0; i < 3; i++) y[i] = 0.5f * (float)(r + i);
        CHECK_OK(mil_interp_set_input(it, "x", MIL_DT_FP32, 2, sx, x, &err), &err);
        CHECK_OK(mil_interp_set_input(it, "y", MIL_DT_FP32, 1, sy, y, &err), &err);
        CHECK_OK(mil_interp_run(it, &err), &err);
        float z[6];
        CHECK_OK(mil_interp_copy_out(it, "z", MIL_DT_FP32, z, 6, &err), &err);
        for (int i = 0; i < 6; i++) CHECK_NEAR(z[i], 3.0 * x[i] + y[i % 3], 1e-6);
    }
    mil_interp_free(it);
    mil_program_free(prog);
}

static const char *ROUND =
    "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
    "    func main<ios18>(tensor<fp16, [12]> x) {\n"
    "        tensor<fp16, [12]> y = round(x = x)[name = string(\"y\")];\n"
    "    } -> (y);\n}\n";

/* round takes halves to the even neighbour, as numpy does (roundf's away
 * from zero survived the op fixtures, whose inputs hold no exact halves).
 * Expected values: numpy.round of the same fp16 inputs, in both modes. */
static void test_round_takes_halves_to_even_like_numpy(void) {
    static const float x[12] = {-3.5f, -2.5f,         -1.5f,  -0.5f,  0.5f,  1.5f,
                                2.5f,  3.5f,          0.49951171875f, -1.25f, 2.75f, 1023.5f};
    static const float want[12] = {-4, -2, -2, -0.0f, 0, 2, 2, 4, 0, -1, 3, 1024};
    for (int fp16 = 0; fp16 <= 1; fp16++) {
        nc_error err;
        mil_program *prog;
        mil_interp *it;
        CHECK_OK(mil_parse(ROUND, strlen(ROUND), "round.mil", &prog, &err), &err);
        CHECK_OK(mil_interp_new(prog, NULL, fp16 ? MIL_INTERP_FP16 : MIL_INTERP_FP32, &it, &err),
                 &err);
        int64_t sh[1] = {12};
        CHECK_OK(mil_interp_set_input(it, "x", MIL_DT_FP32, 1, sh, x, &err), &err);
        CHECK_OK(mil_interp_run(it, &err), &err);
        float y[12];
        CHECK_OK(mil_interp_copy_out(it, "y", MIL_DT_FP32, y, 12, &err), &err);
        for (int i = 0; i < 12; i++)
            CHECKF(y[i] == want[i] && signbit(y[i]) == signbit(want[i]),
                   "%s mode: round(%g) = %g, numpy %g", fp16 ? "fp16" : "fp32", (double)x[i],
                   (double)y[i], (double)want[i]);
        mil_interp_free(it);
        mil_program_free(prog);
    }
}

static const char *ACCUM =
    "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
    "    func main<ios18>(state<tensor<fp16, [1, 4]>> acc, tensor<fp16, [1, 4]> x) {\n"
    "        tensor<fp16, [1, 4]> old = read_state(input = acc)[name = string(\"rd\")];\n"
    "        tensor<fp16, [1, 4]> s = add(x = old, y = x)[name = string(\"s\")];\n"
    "        write_state(data = s, input = acc)[name = string(\"wr\")];\n"
    "    } -> (s);\n}\n";

/* A state keeps its value between runs (starting at zero). */
static void test_state_persists_across_runs(void) {
    nc_error err;
    mil_program *prog;
    mil_interp *it;
    CHECK_OK(mil_parse(ACCUM, strlen(ACCUM), "accum.mil", &prog, &err), &err);
    CHECK_OK(mil_interp_new(prog, NULL, MIL_INTERP_FP16, &it, &err), &err);
    int64_t sh[2] = {1, 4};
    float x[4] = {1, -2, 0.25f, 100};
    CHECK_OK(mil_interp_set_input(it, "x", MIL_DT_FP32, 2, sh, x, &err), &err);
    for (int r = 0; r < 3; r++) CHECK_OK(mil_interp_run(it, &err), &err);
    float acc[4];
    CHECK_OK(mil_interp_copy_out(it, "acc", MIL_DT_FP32, acc, 4, &err), &err);
    for (int i = 0; i < 4; i++) CHECK_NEAR(acc[i], 3.0 * x[i], 0);
    mil_interp_free(it);
    mil_program_free(prog);
}

/* Wrong input names, shapes and dtypes, unset inputs and unknown functions
 * fail with a message that names them. */
static void test_bad_inputs_are_reported(void) {
    nc_error err;
    mil_program *prog;
    mil_interp *it;
    CHECK_OK(mil_parse(AXPY, strlen(AXPY), "axpy.mil", &prog, &err), &err);
    CHECK(mil_interp_new(prog, "nope", MIL_INTERP_FP16, &it, &err) == NC_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "nope") != NULL);
    CHECK_OK(mil_interp_new(prog, "main", MIL_INTERP_FP16, &it, &err), &err);
    CHECK(mil_interp_run(it, &err) != NC_OK && strstr(err.msg, "'x'"));
    int64_t s3[1] = {3}, s4[1] = {4};
    float v[4] = {0};
    int32_t iv[3] = {0};
    CHECK(mil_interp_set_input(it, "w", MIL_DT_FP32, 1, s3, v, &err) == NC_ERR_NOT_FOUND);
    CHECK(mil_interp_set_input(it, "y", MIL_DT_FP32, 1, s4, v, &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "tensor<fp16, [3]>") != NULL);
    CHECK(mil_interp_set_input(it, "y", MIL_DT_INT32, 1, s3, iv, &err) == NC_ERR_INVALID);
    mil_interp_free(it);
    mil_program_free(prog);
}

/* The trace names each op with its output's range and non-finite count. */
static void test_trace_reports_each_op(void) {
    nc_error err;
    mil_program *prog;
    mil_interp *it;
    CHECK_OK(mil_parse(AXPY, strlen(AXPY), "axpy.mil", &prog, &err), &err);
    CHECK_OK(mil_interp_new(prog, NULL, MIL_INTERP_FP16, &it, &err), &err);
    FILE *f = tmpfile();
    CHECK(f != NULL);
    mil_interp_set_trace(it, f);
    int64_t sx[2] = {2, 3}, sy[1] = {3};
    float x[6] = {1, 2, 3, 30000, 5, 6}, y[3] = {0, 0, 0};
    CHECK_OK(mil_interp_set_input(it, "x", MIL_DT_FP32, 2, sx, x, &err), &err);
    CHECK_OK(mil_interp_set_input(it, "y", MIL_DT_FP32, 1, sy, y, &err), &err);
    CHECK_OK(mil_interp_run(it, &err), &err);
    char text[1024] = {0};
    rewind(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    CHECK(n > 0);
    /* 3 * 30000 overflows fp16 in mul 'ax' (line 6) */
    CHECKF(strstr(text, "mul 'ax' (axpy.mil:6) -> ax fp16 [2, 3] 3 .. 18, 1 inf, 0 nan") != NULL, "%s", text);
    CHECKF(strstr(text, "add 'z' (axpy.mil:7) -> z fp16 [2, 3]") != NULL, "%s", text);
    mil_interp_free(it);
    mil_program_free(prog);
}

static const char *BAD_SHAPE =
    "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
    "    func main<ios18>(tensor<fp16, [2, 3]> x) {\n"
    "        tensor<fp16, [3, 3]> z = relu(x = x)[name = string(\"r\")];\n"
    "    } -> (z);\n}\n";

/* An output whose computed shape disagrees with its declaration is an error
 * naming the op and its line. */
static void test_declared_shape_mismatch_names_op(void) {
    nc_error err;
    mil_program *prog;
    mil_interp *it;
    CHECK_OK(mil_parse(BAD_SHAPE, strlen(BAD_SHAPE), "bad.mil", &prog, &err), &err);
    CHECK_OK(mil_interp_new(prog, NULL, MIL_INTERP_FP16, &it, &err), &err);
    int64_t sh[2] = {2, 3};
    float x[6] = {0};
    CHECK_OK(mil_interp_set_input(it, "x", MIL_DT_FP32, 2, sh, x, &err), &err);
    CHECK(mil_interp_run(it, &err) == NC_ERR_FORMAT);
    CHECKF(strstr(err.msg, "relu 'r'") && strstr(err.msg, "bad.mil:5"), "%s", err.msg);
    mil_interp_free(it);
    mil_program_free(prog);
}

static const char *HEAVY =
    "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
    "    func main<ios18>(tensor<fp16, [2, 48, 37]> x, tensor<fp16, [40, 48, 1]> w,\n"
    "                     tensor<fp16, [40, 12, 3]> w3) {\n"
    "        tensor<fp16, [2, 40, 37]> c = conv(weight = w, x = x)[name = string(\"c\")];\n"
    "        int32 g = const()[name = string(\"g\"), val = int32(4)];\n"
    "        tensor<fp16, [2, 40, 35]> c3 = conv(groups = g, weight = w3, x = x)[name = string(\"c3\")];\n"
    "        bool bf = const()[name = string(\"bf\"), val = bool(false)];\n"
    "        bool bt = const()[name = string(\"bt\"), val = bool(true)];\n"
    "        tensor<fp16, [2, 40, 40]> s = matmul(transpose_x = bf, transpose_y = bt, x = c, y = c)[name = string(\"s\")];\n"
    "        tensor<int32, [2]> ws = const()[name = string(\"ws\"), val = tensor<int32, [2]>([40, 35])];\n"
    "        fp16 wv = const()[name = string(\"wv\"), val = fp16(0x1p-4)];\n"
    "        tensor<fp16, [40, 35]> wl = fill(shape = ws, value = wv)[name = string(\"wl\")];\n"
    "        tensor<fp16, [2, 40, 40]> l = linear(weight = wl, x = c3)[name = string(\"l\")];\n"
    "    } -> (s, l);\n}\n";

/* Filling inputs with a fixed pseudo-random sequence. */
static void fill_pattern(float *v, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 9) & 0xffff) / 32768.0f - 1.0f;
    }
}

static void run_heavy(nc_pool *pool, float *s_out, float *l_out) {
    nc_error err;
    mil_program *prog;
    mil_interp *it;
    CHECK_OK(mil_parse(HEAVY, strlen(HEAVY), "heavy.mil", &prog, &err), &err);
    CHECK_OK(mil_interp_new(prog, NULL, MIL_INTERP_FP16, &it, &err), &err);
    mil_interp_set_pool(it, pool);
    static float x[2 * 48 * 37], w[40 * 48], w3[40 * 12 * 3];
    fill_pattern(x, 2 * 48 * 37, 1);
    fill_pattern(w, 40 * 48, 2);
    fill_pattern(w3, 40 * 12 * 3, 3);
    int64_t sx[3] = {2, 48, 37}, sw[3] = {40, 48, 1}, sw3[3] = {40, 12, 3};
    CHECK_OK(mil_interp_set_input(it, "x", MIL_DT_FP32, 3, sx, x, &err), &err);
    CHECK_OK(mil_interp_set_input(it, "w", MIL_DT_FP32, 3, sw, w, &err), &err);
    CHECK_OK(mil_interp_set_input(it, "w3", MIL_DT_FP32, 3, sw3, w3, &err), &err);
    CHECK_OK(mil_interp_run(it, &err), &err);
    CHECK_OK(mil_interp_copy_out(it, "s", MIL_DT_FP32, s_out, 2 * 40 * 40, &err), &err);
    CHECK_OK(mil_interp_copy_out(it, "l", MIL_DT_FP32, l_out, 2 * 40 * 40, &err), &err);
    mil_interp_free(it);
    mil_program_free(prog);
}

/* Splitting matmul, conv and linear over a thread pool gives bit-identical
 * results to a serial run. */
static void test_thread_pool_gives_identical_results(void) {
    static float s1[3200], l1[3200], s2[3200], l2[3200];
    nc_pool *pool;
    nc_error err;
    run_heavy(NULL, s1, l1);
    CHECK(!nc_test_failed_);
    CHECK_OK(nc_pool_new(3, &pool, &err), &err);
    run_heavy(pool, s2, l2);
    nc_pool_free(pool);
    CHECK(!nc_test_failed_);
    CHECK(!memcmp(s1, s2, sizeof s1) && !memcmp(l1, l2, sizeof l1));
    double mx = 0;
    for (int i = 0; i < 3200; i++) mx = fmax(mx, fabs(s1[i]));
    CHECK(mx > 1); /* the program computed something */
}

/* Every op type of the op table (ops.c) has an interpreter implementation. */
static void test_every_table_op_is_interpreted(void) {
    int n;
    const mil_op_def *t = mil_op_table(&n);
    CHECK(n > 50);
    for (int i = 0; i < n; i++)
        CHECKF(!strcmp(t[i].type, "const") || mil_interp_lookup(t[i].type), "no implementation of %s",
               t[i].type);
}

int main(void) {
    RUN(test_every_table_op_is_interpreted);
    RUN(test_attention_fp16_matches_numpy_fp16_model);
    RUN(test_attention_fp32_matches_numpy_float64);
    RUN(test_attention_fp16_close_to_exact);
    RUN(test_rmsnorm_fp16_overflow_shows_and_rescaling_fixes_it);
    RUN(test_prepared_function_reruns_with_new_inputs);
    RUN(test_state_persists_across_runs);
    RUN(test_round_takes_halves_to_even_like_numpy);
    RUN(test_thread_pool_gives_identical_results);
    RUN(test_trace_reports_each_op);
    RUN(test_bad_inputs_are_reported);
    RUN(test_declared_shape_mismatch_names_op);
    return nc_test_exit_code();
}
