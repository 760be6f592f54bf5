/* The encoder's LayerNorm as lowered (mb_lower_layer_norm: x / a with
 * eps / a^2) through the fp16 interpreter against float64, on activations of
 * ordinary size and at ModernBERT's outlier scale (|x| up to 3e4, reported
 * for the real checkpoints), where the textbook form's squares overflow. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "lower/modernbert_lower.h"
#include "mil/interp.h"

#define D 64
#define S 32

static float rnd(unsigned *s) { /* deterministic, roughly N(0, 1) */
    float t = 0;
    for (int i = 0; i < 4; i++) {
        *s = *s * 1664525u + 1013904223u;
        t += (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    return t * 1.7f;
}

/* The textbook form written in fp16 ops: mean, center, square, mean, rsqrt. */
static mil_var *textbook(mil_builder *b, mil_var *x, mil_var *w) {
    int32_t ax[1] = {1};
    mil_var *inv = mil_build_const_scalar(b, "tb_inv", MIL_DT_FP16, 1.0 / D);
    mil_var *mu =
        mil_build_mul(b, "tb_mu", mil_build_reduce(b, "reduce_sum", "tb_s", x, 1, ax, 1), inv);
    mil_var *xc = mil_build_binary(b, "sub", "tb_xc", x, mu);
    mil_var *v = mil_build_mul(
        b, "tb_v",
        mil_build_reduce(b, "reduce_sum", "tb_ss", mil_build_mul(b, "tb_sq", xc, xc), 1, ax, 1),
        inv);
    mil_var *r = mil_build_rsqrt(b, "tb_r", v, 1e-5);
    return mil_build_mul(b, "tb_y", mil_build_mul(b, "tb_n", xc, r), w);
}

/* Max |error| of both forms against float64 for activations scaled by k. */
static int run(double k, double *err_lowered, double *err_textbook, nc_error *err) {
    mil_builder *b;
    if (mil_builder_new(&b, NULL, err)) return 1;
    float wv[D];
    for (int i = 0; i < D; i++)
        wv[i] = 0.5f + (float)i / D;
    int64_t xd[4] = {1, D, 1, S}, wd[4] = {1, D, 1, 1};
    mil_build_function(b, "main", "ios18");
    mil_var *x =
        mil_build_input(b, "x", mil_type_tensor(mil_builder_program(b), MIL_DT_FP16, 4, xd));
    mil_var *w = mil_build_const_fp16(b, "w", 4, wd, wv);
    mil_var *outs[2] = {mb_lower_layer_norm(b, "ln", x, D, 1e-5, w, "y"), textbook(b, x, w)};
    mil_program *prog = NULL;
    if (!outs[0] || !outs[1] || mil_build_done(b, outs, 2) || mil_builder_finish(b, &prog, err)) {
        if (!prog) {
            *err = *mil_builder_error(b);
            mil_builder_free(b);
        }
        return 1;
    }
    float xv[D * S];
    unsigned seed = 7;
    for (int i = 0; i < D * S; i++)
        xv[i] = (float)(rnd(&seed) * k);
    xv[5 * S + 3] = (float)(30000.0 * (k / 1e4 > 1 ? 1 : k / 1e4)); /* an outlier channel */
    mil_interp *it = NULL;
    int bad = mil_interp_new(prog, "main", MIL_INTERP_FP16, &it, err) ||
              mil_interp_set_input(it, "x", MIL_DT_FP32, 4, xd, xv, err) || mil_interp_run(it, err);
    mil_interp_view y1, y2;
    bad = bad || mil_interp_get(it, "y", &y1, err) || mil_interp_get(it, "tb_y", &y2, err);
    *err_lowered = *err_textbook = 0;
    for (int t = 0; !bad && t < S; t++) {
        /* the fp16 input as the interpreter holds it, then LayerNorm in float64 */
        double mu = 0, var = 0, xs[D];
        for (int c = 0; c < D; c++)
            mu += xs[c] = nc_fp16_to_f32(nc_f32_to_fp16(xv[c * S + t]));
        mu /= D;
        for (int c = 0; c < D; c++)
            var += (xs[c] - mu) * (xs[c] - mu);
        var /= D;
        for (int c = 0; c < D; c++) {
            double ref = (xs[c] - mu) / sqrt(var + 1e-5) * nc_fp16_to_f32(nc_f32_to_fp16(wv[c]));
            double e1 = fabs(ref - y1.f32[c * S + t]), e2 = fabs(ref - y2.f32[c * S + t]);
            *err_lowered = nc_worse(*err_lowered, e1);
            *err_textbook = isfinite(y2.f32[c * S + t]) ? fmax(*err_textbook, e2) : INFINITY;
        }
    }
    mil_interp_free(it);
    mil_program_free(prog);
    return bad;
}

static void test_layernorm_fp16_matches_float64_at_unit_scale(void) {
    nc_error err = {0};
    double e1, e2;
    CHECKF(!run(1.0, &e1, &e2, &err), "%s", err.msg);
    printf("  unit scale: lowered max error %.2e, textbook %.2e\n", e1, e2);
    CHECKF(e1 <= 1e-2, "max error %g", e1); /* outputs up to ~5; fp16 steps there are 4e-3 */
}

static void test_layernorm_fp16_survives_outlier_activations(void) {
    nc_error err = {0};
    double e1, e2;
    CHECKF(!run(1e4, &e1, &e2, &err), "%s", err.msg);
    printf("  |x| up to 3e4: lowered max error %.2e, textbook %.2e\n", e1, e2);
    CHECKF(e1 <= 1e-2, "max error %g", e1);
    CHECKF(e2 > 0.5, "the textbook form should fail here (error %g)", e2);
}

int main(void) {
    RUN(test_layernorm_fp16_matches_float64_at_unit_scale);
    RUN(test_layernorm_fp16_survives_outlier_activations);
    return nc_test_exit_code();
}
