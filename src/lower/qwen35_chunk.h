/* prefill_sS of a Qwen3.5 linear-attention layer in the chunked form of the
 * gated delta rule (the UT transform, as HF's torch_chunk_gated_delta_rule
 * and fla's chunk_gated_delta_rule), written for fp16: the bucket's S
 * tokens in sub-chunks of C, everything but the state carried between
 * sub-chunks computed for all sub-chunks and heads at once, so the delta
 * rule's sequential depth is about 2 C + 2 S / C ops instead of the
 * unrolled form's ~7 S. Same inputs and outputs as
 * lower_qwen35_prefill_function; docs/qwen35.md has the math, the fp16
 * choices, the op counts and the error table. */
#ifndef NC_LOWER_QWEN35_CHUNK_H
#define NC_LOWER_QWEN35_CHUNK_H

#include "lower/qwen35_lower.h"

/* C, the sub-chunk nectar compile emits. 32 keeps every matmul's
 * contracted axis a multiple of 32 (ane-matmul-inner) when dk and dv are,
 * as in every Qwen3.5 (128); 16 (fla's diagonal block) would cut the
 * sequential depth by ~30 ops but contracts 23 matmuls over 16. Both are
 * in the fp16 test. */
#define LOWER_Q35_SUBCHUNK 32

/* How the pieces with an fp16 hazard are written. SAFE is what nectar
 * compile emits; the other two are the textbook forms, kept so the fp16
 * test can show where they break (tests/lower/test_qwen35_step_fp16.c). */
typedef enum lower_q35_chunk_variant {
    LOWER_Q35_CHUNK_SAFE = 0,     /* decay sums direct; (I + A)^-1 by forward substitution */
    LOWER_Q35_CHUNK_CUMSUM = 1,   /* decays as differences of a cumulative sum */
    LOWER_Q35_CHUNK_DOUBLING = 2, /* (I + A)^-1 as the product (I - A)(I + A^2)(I + A^4)... */
} lower_q35_chunk_variant;

/* Writes prefill_sS (S a multiple of C, C a power of two <= S) into the
 * function the builder is writing. */
void lower_qwen35_prefill_chunked_function(mil_builder *b, const qwen35_config *c,
                                           lower_linear_weights *w, int S, int C,
                                           lower_q35_chunk_variant variant);

#endif
