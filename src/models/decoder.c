/* What every decoder behind models/decoder.h shares. */
#include "models/decoder.h"

void decoder_close(decoder *d) {
    if (d->model) d->ops->free(d->model);
    d->model = NULL;
}
