/* nc_model_open's "ORG/NAME[@REV]": a model in the Hugging Face cache, as
 * transformers' from_pretrained finds it offline (src/io/hf_cache.c). The
 * cache folder is the "hf_cache" option, else what huggingface_hub computes
 * from HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME, XDG_CACHE_HOME and
 * HOME: a C program that opens a model by name expects the cache its
 * Python tools filled, so this is the one place the library reads those
 * variables (the command line passes the same). */
#include "api/api_hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "api/api_options.h"
#include "io/hf_cache.h"

nc_status api_hub_locate(const char *path, const char *const *options, char *out, size_t cap,
                         nc_error *err) {
    struct stat sb;
    const char *cache_opt = api_opt_get(options, "hf_cache");
    if (stat(path, &sb) == 0 || !hf_is_repo_id(path)) {
        snprintf(out, cap, "%s", path);
        return NC_OK;
    }
    char cache[4096];
    if (cache_opt) {
        snprintf(cache, sizeof cache, "%s", cache_opt);
    } else {
        hf_env env = {getenv("HF_HUB_CACHE"), getenv("HUGGINGFACE_HUB_CACHE"), getenv("HF_HOME"),
                      getenv("XDG_CACHE_HOME"), getenv("HOME")};
        hf_cache_dir(&env, cache, sizeof cache);
    }
    return hf_cache_resolve(cache, path, out, cap, err);
}
