/* RoPE frequency scaling (rope_scaling.h): Llama 3's as transformers'
 * _compute_llama3_parameters computes it, in double before the float
 * frequencies are stored; linear as _compute_linear_scaling_rope_parameters
 * (a float division). */
#include "models/rope_scaling.h"

#include <math.h>

void rope_scaling_apply(float *inv_freq, int n, const rope_scaling *s) {
    if (!(s->factor > 0)) return;
    if (s->linear) {
        for (int i = 0; i < n; i++)
            inv_freq[i] /= s->factor;
        return;
    }
    double old = s->original_max_pos, lo = s->low_freq_factor, hi = s->high_freq_factor;
    double low_wavelen = old / lo, high_wavelen = old / hi;
    for (int i = 0; i < n; i++) {
        double f = inv_freq[i], wavelen = 2 * M_PI / f;
        if (wavelen > low_wavelen) {
            f /= s->factor; /* long wavelengths: stretched */
        } else if (wavelen >= high_wavelen) {
            double smooth = (old / wavelen - lo) / (hi - lo);
            f = (1 - smooth) * f / s->factor + smooth * f;
        }
        inv_freq[i] = (float)f;
    }
}
