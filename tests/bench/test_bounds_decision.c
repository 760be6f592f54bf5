/* `nectar bounds` for decision models (docs/decision.md): the study's
 * A = N(4D^2 + 3DI) + 12HD^2 and F_dense(B, L) = 2BLA + 4B(N + H)L^2 D.
 * Checked against (1) the study's own figures, by hand: mmBERT-base with
 * H = 2 read at 400 GB/s in fp16 takes 0.622 ms, and the English
 * ModernBERT-large 1.842 ms, the "24 or 30" attention/MLP blocks of the
 * two; (2) the matrices actually stored: for every decision fixture and
 * models/snake, A equals the element count of the encoder's Wqkv, Wo, Wi,
 * Wo and the head's qkv, out, mlp_in, mlp_out weights in the safetensors
 * files, the shape read from config.json + decision.json by
 * nc_encoder_shape_load (a head MLP other than 4D included). */
#include <math.h>

#include "../test.h"
#include "bench/bounds.h"
#include "io/safetensors.h"

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

/* Elements of the 2-D tensors of path whose names end in one of tails. */
static double matrix_elements(const char *path, const char *const *tails, int n_tails) {
    st_file *f;
    nc_error err;
    if (st_open(path, &f, &err) != NC_OK) {
        printf("  %s\n", err.msg);
        return NAN;
    }
    double total = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const st_tensor *t = &f->tensors[i];
        for (int k = 0; k < n_tails; k++)
            if (t->ndim == 2 && ends_with(t->name, tails[k]))
                total += (double)t->shape[0] * (double)t->shape[1];
    }
    st_close(f);
    return total;
}

static void test_study_figures_by_hand(void) {
    /* mmBERT-base: N = 22, D = 768, I = 1152; ModernBERT-large: 28, 1024, 2624 */
    const double D1 = 768, D2 = 1024;
    double a1 = 22 * (4 * D1 * D1 + 3 * D1 * 1152) + 12 * 2 * D1 * D1;
    double a2 = 28 * (4 * D2 * D2 + 3 * D2 * 2624) + 12 * 2 * D2 * D2;
    nc_encoder_shape s1 = {22, 768, 1152, 2, 0}, s2 = {28, 1024, 2624, 2, 0};
    CHECK(nc_encoder_params(&s1) == a1 && nc_encoder_params(&s2) == a2);
    /* the study: fp16 matrices read once at 400 GB/s: 0.622 and 1.842 ms */
    CHECKF(round(2 * a1 / 400e9 * 1e6) == 622, "%.4f ms", 2 * a1 / 400e9 * 1e3);
    CHECKF(round(2 * a2 / 400e9 * 1e6) == 1842, "%.4f ms", 2 * a2 / 400e9 * 1e3);
    CHECK(s1.n_layers + s1.n_head_layers == 24 && s2.n_layers + s2.n_head_layers == 30);
    /* F_dense at the study's shapes */
    double f96 = 2.0 * 1 * 96 * a1 + 4.0 * 1 * 24 * 96 * 96 * D1;
    double f64 = 2.0 * 3 * 64 * a1 + 4.0 * 3 * 24 * 64 * 64 * D1;
    printf("  mmBERT-base + 2 head layers: A = %.0f, F(1, 96) = %.4g, F(3, 64) = %.4g FLOP\n", a1,
           f96, f64);
    CHECK(nc_encoder_flops(&s1, 1, 96) == f96 && nc_encoder_flops(&s1, 3, 64) == f64);
    /* a head MLP of I_h = 4D is the study's 12D^2; another width is 4D^2 + 2D I_h */
    nc_encoder_shape w4 = {22, 768, 1152, 2, 4 * 768}, w2 = {22, 768, 1152, 2, 2 * 768};
    CHECK(nc_encoder_params(&w4) == a1);
    CHECK(nc_encoder_params(&w2) == a1 - 2 * (2 * D1 * 4 * D1) + 2 * (2 * D1 * 2 * D1));
}

static void test_folders_count_their_stored_matrices(void) {
    static const char *const enc[] = {"attn.Wqkv.weight", "attn.Wo.weight", "mlp.Wi.weight",
                                      "mlp.Wo.weight"};
    static const char *const head[] = {".qkv.weight", ".out.weight", ".mlp_in.weight",
                                       ".mlp_out.weight"};
    const char *dirs[] = {"tests/fixtures/decision/dm_multi", "tests/fixtures/decision/dm_compact",
                          "tests/fixtures/decision/dm_k3", "models/snake"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/config.json", dirs[i]);
        nc_encoder_shape s = {0, 0, 0, 0, 0};
        nc_error err;
        CHECK_OK(nc_encoder_shape_load(p, &s, &err), &err);
        snprintf(p, sizeof p, "%s/model.safetensors", dirs[i]);
        double stored = matrix_elements(p, enc, 4);
        snprintf(p, sizeof p, "%s/decision.safetensors", dirs[i]);
        stored += matrix_elements(p, head, 4);
        printf("  %s: N=%lld D=%lld I=%lld H=%lld I_h=%lld: A = %.0f, stored %.0f\n", dirs[i],
               (long long)s.n_layers, (long long)s.d_model, (long long)s.d_ff,
               (long long)s.n_head_layers, (long long)s.d_head_ff, nc_encoder_params(&s), stored);
        CHECKF(s.n_head_layers > 0 && nc_encoder_params(&s) == stored, "%s", dirs[i]);
    }
}

int main(void) {
    RUN(test_study_figures_by_hand);
    RUN(test_folders_count_their_stored_matrices);
    return nc_test_exit_code();
}
