/* fp32 elementwise steps of the decoder (see cpu_ops.h). */
#include "cpu/cpu_ops.h"

#include <math.h>

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
