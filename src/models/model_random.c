/* The family dispatch of model_random.h. */
#include "models/model_random.h"

nc_status model_random_write(const model_preset *p, const char *out, const model_random_options *o,
                             model_random_report *r, nc_error *err) {
    switch (p->family) {
    case MODEL_FAMILY_QWEN3:
        return qwen3_random_write(p, out, o, r, err);
    case MODEL_FAMILY_MODERNBERT:
        return modernbert_random_write(p, out, o, r, err);
    }
    return nc_fail(err, NC_ERR_INTERNAL, "%s: no random writer for this family", p->name);
}

const char *model_random_torch_dtype(st_dtype dt) {
    return dt == ST_BF16 ? "bfloat16" : dt == ST_F16 ? "float16" : "float32";
}
