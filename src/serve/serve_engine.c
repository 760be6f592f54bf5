/* Engine-independent helpers of the serve_engine seam. */
#include "serve/serve_engine.h"

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
