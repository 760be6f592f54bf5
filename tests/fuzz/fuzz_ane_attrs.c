/* Fuzz target: modelAttributes JSON (what a private framework reports,
 * parsed by src/ane_host/ane_attrs.c) must be accepted or rejected with an
 * error, never crash or leak; an accepted one is looked up by name. */
#include <stddef.h>
#include <stdint.h>

#include "ane_host/ane_attrs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ane_attrs a;
    nc_error err;
    if (ane_attrs_parse((const char *)data, size, "fuzz", &a, &err) != NC_OK) return 0;
    for (int i = 0; i < a.n_procs; i++) {
        const ane_attr_proc *p = ane_attrs_proc(&a, a.procs[i].name);
        if (p && p->n_in) (void)ane_attrs_io(p, p->in[0].name, 0);
    }
    ane_attrs_free(&a);
    return 0;
}
