/* The rules between lowering forms (forms_rules.h). */
#include "bundle/forms_rules.h"

nc_status lower_forms_check(const lower_forms *f, int kernels_per_layer,
                            const lower_forms_model *m, nc_error *err) {
    int kpl = kernels_per_layer ? kernels_per_layer : 4;
    /* Qwen3.5's full-attention layers load q_proj with the output gate's
     * rows (qwen35_compile.c): the grouped order is not written there */
    if (m->recurrent && f->attention == LOWER_ATTN_GROUPED)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "--attention grouped: a Qwen3.5 bundle has the broadcast form only");
    if (f->attention == LOWER_ATTN_GROUPED && f->rope != LOWER_ROPE_CONV)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "--attention grouped takes --rope conv (the matmul form broadcasts over "
                       "the per-head view)");
    if (f->kv_update == LOWER_KV_HOST && kpl < 3)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "--kv-update host takes --kernels-per-layer 4 or 3 (the host writes the "
                       "cache between qkv and attn, which %d kernels fuse)",
                       kpl);
    if (f->bucket_form == LOWER_BUCKETS_ENUMERATED) {
        /* the KV spread of an S-wide function is a constant of S (the
         * placement matrix or the gather indices j mod S), which one
         * function over every S cannot hold: the host writes the cache */
        if (f->kv_update != LOWER_KV_HOST)
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "--bucket-form enumerated takes --kv-update host (the %s spread is a "
                           "constant of the bucket's width S, which one function over every "
                           "bucket cannot hold; docs/lowering.md)",
                           lower_kv_update_name(f->kv_update));
        if (m->recurrent || m->windows)
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "--bucket-form enumerated: Qwen3 and Llama layers only (Qwen3.5's "
                           "mixers and Gemma 3's windows are lowered per bucket)");
    }
    if (m->recurrent && f->program_split != LOWER_SPLIT_LAYER)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "--program-split %s: a Qwen3.5 bundle has one program per layer (its "
                       "linear layers' mixers and states are planned per program)",
                       lower_program_split_name(f->program_split));
    int64_t rows = f->head_rows > 0 ? f->head_rows : LOWER_HEAD_ROWS_DEFAULT;
    int64_t chunks = (m->vocab + rows - 1) / rows;
    if (chunks > LOWER_MAX_HEAD_CHUNKS)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "--head-rows %lld: a vocabulary of %lld rows needs %lld chunks (at most %d)",
                       (long long)rows, (long long)m->vocab, (long long)chunks,
                       LOWER_MAX_HEAD_CHUNKS);
    return NC_OK;
}
