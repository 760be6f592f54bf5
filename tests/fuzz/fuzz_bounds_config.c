/* Fuzz target: a config.json given to `nectar bounds` (Qwen3 shape, then the
 * counts and floors computed from it) must be accepted or rejected without a
 * crash, leak or undefined arithmetic. */
#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "bench/bounds.h"
#include "bench/bounds_report.h"
#include "models/qwen3_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_t *cfg;
    nc_error err;
    if (nc_json_parse((const char *)data, size, "fuzz", &cfg, &err) != NC_OK) return 0;
    nc_bounds_query q = {0};
    q.is_decoder = 1;
    q.batch = 1;
    q.seq_len = 512;
    q.context = 4096;
    q.bandwidth_bytes_per_s = 400e9;
    q.compute_flops_per_s = 10e12;
    qwen3_config c;
    if (qwen3_config_from_json(cfg, &c, "fuzz", &err) == NC_OK &&
        (q.decoder = nc_qwen3_shape_of(&c), nc_qwen3_validate(&q.decoder, "fuzz", &err)) == NC_OK) {
        json_t *r;
        if (nc_bounds_report(&q, &r, &err) == NC_OK) json_decref(r);
    }
    json_decref(cfg);
    return 0;
}
