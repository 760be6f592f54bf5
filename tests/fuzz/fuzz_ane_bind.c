/* Fuzz target: a bundle's manifest.json and the modelAttributes the loaded
 * program reports, bound together by name (src/ane_host/ane_bind.c) as
 * ane_runner_open does. Input: the manifest, a NUL byte, the attributes.
 * Every function of every program is bound; whatever binds must name
 * symbols and layouts the attributes actually hold. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_attrs.h"
#include "ane_host/ane_bind.h"
#include "bundle/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *sep = memchr(data, 0, size);
    if (!sep) return 0;
    size_t n_man = (size_t)(sep - data);
    lower_manifest m;
    ane_attrs a;
    nc_error err;
    if (lower_manifest_parse((const char *)data, n_man, "fuzz-manifest", &m, &err) != NC_OK)
        return 0;
    if (ane_attrs_parse((const char *)sep + 1, size - n_man - 1, "fuzz-attrs", &a, &err) != NC_OK) {
        lower_manifest_free(&m);
        return 0;
    }
    for (int p = 0; p < m.n_programs; p++)
        for (int f = 0; f < m.programs[p].n_fns; f++) {
            const lower_fn_info *fn = &m.programs[p].fns[f];
            ane_binding b;
            if (ane_bind_function(&a, fn, &b, &err) != NC_OK) continue;
            if (b.n_in != fn->n_in || b.n_out != fn->n_out) abort();
            for (int i = 0; i < b.n_in; i++) {
                const ane_bound_io *io = ane_binding_io(&b, fn->in[i].name, 0);
                if (!io || io->symbol < 0 || io->symbol >= a.n_in_symbols) abort();
            }
            for (int i = 0; i < b.n_out; i++) {
                const ane_bound_io *io = ane_binding_io(&b, fn->out[i].name, 1);
                if (!io || io->symbol < 0 || io->symbol >= a.n_out_symbols) abort();
            }
        }
    ane_attrs_free(&a);
    lower_manifest_free(&m);
    return 0;
}
