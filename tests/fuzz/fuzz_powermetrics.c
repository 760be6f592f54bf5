/* Fuzz target: the power-sample parsers (powermetrics text and plist through
 * the incremental stream, split at an input-chosen point, and the RAPL
 * counter text) must accept or reject any bytes without a crash or leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/power.h"

static void ignore(const nc_pm_sample *s, void *ctx) {
    (void)s;
    (void)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    nc_error err;
    nc_pm_stream st = {0};
    size_t cut = size ? data[0] % (size + 1) : 0;
    if (nc_pm_feed(&st, (const char *)data, cut, 0.0, ignore, NULL, &err) == NC_OK &&
        nc_pm_feed(&st, (const char *)data + cut, size - cut, 1.0, ignore, NULL, &err) == NC_OK)
        nc_pm_finish(&st, ignore, NULL, &err);
    nc_pm_stream_free(&st);
    nc_pm_sample s;
    (void)nc_pm_parse_sample((const char *)data, size, &s, &err);
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    uint64_t v;
    (void)nc_rapl_parse_uj(text, "fuzz", &v, &err);
    free(text);
    return 0;
}
