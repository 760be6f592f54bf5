/* The engine option table and its one parser (engine_options.h). */
#include "engine/engine_options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_ane_device.h"

static const engine_option_row rows[] = {
    {"threads", "--threads", NULL, "N", 0, 4096},
    {"ctx", "--ctx", NULL, "N", 1, 1 << 24},
    {"kv", "--kv", "NECTAR_KV", "f32|f16", 0, 0},
    {"ane_device", "--ane-device", "NECTAR_ANE_DEVICE", "real|fake|fake:SETTING[:...]", 0, 0},
    {"ane_cpu", "--ane-cpu", "NECTAR_ANE_CPU", "kernels|interp", 0, 0},
};
#define N_ROWS (int)(sizeof rows / sizeof rows[0])

const engine_option_row *engine_option_at(int i) {
    return i >= 0 && i < N_ROWS ? &rows[i] : NULL;
}

const engine_option_row *engine_option_named(const char *key) {
    for (int i = 0; i < N_ROWS; i++)
        if (!strcmp(rows[i].key, key)) return &rows[i];
    return NULL;
}

static nc_status int_in(const char *v, const engine_option_row *r, int *out, const char *what,
                        nc_error *err) {
    int lo = r->lo, hi = r->hi;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return nc_fail(err, NC_ERR_INVALID, "%s: '%s' is not an integer in [%d, %d]", what, v, lo,
                       hi);
    *out = (int)x;
    return NC_OK;
}

nc_status engine_option_set(engine_options *o, const char *key, const char *value, const char *what,
                            nc_error *err) {
    const engine_option_row *r = engine_option_named(key);
    if (!r) return nc_fail(err, NC_ERR_INVALID, "%s: no engine option '%s'", what, key);
    if (!strcmp(key, "threads")) return int_in(value, r, &o->n_threads, what, err);
    if (!strcmp(key, "ctx")) return int_in(value, r, &o->ctx, what, err);
    if (!strcmp(key, "kv")) {
        if (strcmp(value, "f32") && strcmp(value, "f16"))
            return nc_fail(err, NC_ERR_INVALID, "%s: '%s' is not one of f32|f16", what, value);
        o->kv = !strcmp(value, "f16") ? ENGINE_KV_F16 : ENGINE_KV_F32;
        return NC_OK;
    }
    if (!strcmp(key, "ane_cpu")) {
        if (strcmp(value, "kernels") && strcmp(value, "interp"))
            return nc_fail(err, NC_ERR_INVALID, "%s: '%s' is not one of kernels|interp", what,
                           value);
        o->ane_cpu = !strcmp(value, "interp") ? ENGINE_ANE_CPU_INTERP : ENGINE_ANE_CPU_KERNELS;
        return NC_OK;
    }
    return engine_ane_device_parse(value, what, o, err); /* ane_device */
}
