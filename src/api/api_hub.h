/* Inside the public API: a model path that may be a hub model id. */
#ifndef NC_API_HUB_H
#define NC_API_HUB_H

#include <stddef.h>

#include "base/error.h"

/* path itself into out when it exists here or is no "ORG/NAME[@REV]";
 * else its snapshot folder in the Hugging Face cache (options' "hf_cache",
 * or the environment's, as huggingface_hub computes it), or
 * NC_ERR_NOT_FOUND naming the cache and the `hf download` command. */
nc_status api_hub_locate(const char *path, const char *const *options, char *out, size_t cap,
                         nc_error *err);

#endif
