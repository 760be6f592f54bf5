/* RoPE frequency scaling that a decoder family's config may ask for
 * (transformers' rope_utils): Llama 3's ("rope_type": "llama3"): frequencies
 * whose wavelength exceeds original_max_position_embeddings / low_freq_factor
 * are divided by factor, those shorter than .../high_freq_factor are kept,
 * and the band between is blended linearly; or "linear" (Gemma 3's global
 * layers): every frequency divided by factor. The attention scale is
 * unchanged. */
#ifndef NC_MODELS_ROPE_SCALING_H
#define NC_MODELS_ROPE_SCALING_H

typedef struct rope_scaling {
    float factor; /* 0: no scaling (plain RoPE) */
    float low_freq_factor, high_freq_factor;
    int original_max_pos; /* original_max_position_embeddings */
    int linear;           /* "linear": only factor counts */
} rope_scaling;

/* Applies s to inv_freq[0..n) in place (nothing when s->factor is 0). */
void rope_scaling_apply(float *inv_freq, int n, const rope_scaling *s);

#endif
