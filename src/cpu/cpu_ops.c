/* fp32 elementwise steps of the decoder (see cpu_ops.h). */
#include "cpu/cpu_ops.h"

#include <math.h>

void cpu_rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    double ss = 0.0;
    for (int i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float r = 1.0f / sqrtf((float)(ss / n) + eps);
    for (int i = 0; i < n; i++)
        out[i] = w[i] * (x[i] * r);
}

void cpu_rope_inv_freq(float *inv_freq, int head_dim, float theta) {
    for (int i = 0; i < head_dim / 2; i++)
        inv_freq[i] = 1.0f / powf(theta, (float)(2 * i) / (float)head_dim);
}

void cpu_rope_angles(float *cos_out, float *sin_out, const float *inv_freq, int head_dim, int pos) {
    for (int i = 0; i < head_dim / 2; i++) {
        float a = (float)pos * inv_freq[i]; /* rounded to fp32 as in torch */
        cos_out[i] = (float)cos((double)a);
        sin_out[i] = (float)sin((double)a);
    }
}

void cpu_silu_mul(float *g, const float *u, int n) {
    for (int i = 0; i < n; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void cpu_gelu_tanh_mul(float *g, const float *u, int n) {
    const float beta = (float)(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = 0.044715f;
    for (int i = 0; i < n; i++) {
        float x = g[i], cube = x * x * x, inner = beta * (x + kappa * cube);
        g[i] = 0.5f * x * (1.0f + tanhf(inner)) * u[i];
    }
}

void cpu_softmax(float *x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++)
        x[i] *= inv;
}
