/* Fuzz target: a ModernBERT config.json from arbitrary bytes. Must either
 * parse into a config whose sizes are in range or fail with a message, never
 * crash or leak (the id2label strings are freed either way). */
#include <stddef.h>
#include <stdint.h>

#include "models/modernbert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    modernbert_config c;
    nc_error err;
    if (modernbert_config_parse((const char *)data, size, "fuzz input", &c, &err) != NC_OK)
        return 0;
    if (c.hidden_size < 1 || c.num_hidden_layers > MODERNBERT_MAX_LAYERS ||
        c.head_dim * c.num_attention_heads != c.hidden_size || c.num_labels < 1)
        __builtin_trap();
    for (int i = 0; i < c.num_labels; i++)
        if (!c.id2label[i]) __builtin_trap();
    modernbert_config_free(&c);
    return 0;
}
