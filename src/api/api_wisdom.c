/* The wisdom file from the environment, as the command line reads it
 * (api_wisdom.h): like the Hugging Face cache of api_hub.c, a place in the
 * user's cache that the library looks up itself. */
#include "api/api_wisdom.h"

#include <stdlib.h>

#include "cpu/cpu_wisdom.h"

nc_status api_tune_cpu_kernels(int threads, nc_error *err) {
    char buf[CPU_WISDOM_PATH_MAX];
    const char *path;
    const cpu_tuning *tuned;
    NC_TRY(cpu_wisdom_path(getenv("NECTAR_WISDOM"), getenv("XDG_CACHE_HOME"), getenv("HOME"), buf,
                           sizeof buf, &path, err));
    return cpu_tune_once(path, threads, &tuned, err);
}
