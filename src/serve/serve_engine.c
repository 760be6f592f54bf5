/* Engine-independent helpers of the serve_engine seam. */
#include "serve/serve_engine.h"

#include <stdio.h>
#include <string.h>

void serve_engine_close(serve_engine *e) {
    if (e && e->destroy) e->destroy(e);
    if (e) memset(e, 0, sizeof *e);
}

int serve_engine_is_eog(const serve_engine *e, int32_t id) {
    for (int i = 0; i < e->n_eog; i++)
        if (e->eog[i] == id) return 1;
    return 0;
}

void serve_engine_set_eog(serve_engine *e, const int32_t *ids, int n) {
    e->n_eog = 0;
    for (int i = 0; i < n && e->n_eog < SERVE_MAX_EOG; i++)
        if (!serve_engine_is_eog(e, ids[i])) e->eog[e->n_eog++] = ids[i];
    /* Chat turns end with <|im_end|> even when the config names another eos. */
    static const char *const names[] = {"<|im_end|>", "<|endoftext|>"};
    for (int k = 0; k < 2; k++) {
        int32_t id = e->tok ? tok_find(e->tok, names[k]) : -1;
        if (id >= 0 && !serve_engine_is_eog(e, id) && e->n_eog < SERVE_MAX_EOG)
            e->eog[e->n_eog++] = id;
    }
}

void serve_engine_set_id(serve_engine *e, const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    snprintf(e->model_id, sizeof e->model_id, "%.*s", (int)(n - b), dir + b);
}
