#include "cli_quantized.h"

#include "io/hf_weights.h"

nc_status cli_count_quantized(const char *dir, int *n, nc_error *err) {
    hf_weights *w;
    *n = 0;
    NC_TRY(hf_weights_open(dir, &w, err));
    for (int s = 0; s < w->n_shards; s++)
        for (int i = 0; i < w->shards[s]->n_tensors; i++)
            *n += w->shards[s]->tensors[i].dtype == ST_U8 && w->shards[s]->tensors[i].ndim == 2;
    hf_weights_close(w);
    return NC_OK;
}
