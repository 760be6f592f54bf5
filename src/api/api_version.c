/* The run-time version calls and nc_free, the public API's one deallocator
 * (include/nectar.h): what the library returns comes from malloc. */
#include <stdlib.h>

#include "nectar.h"

NC_API const char *nc_version(void) {
    return NECTAR_VERSION;
}

NC_API int nc_version_number(void) {
    return NECTAR_VERSION_NUMBER;
}

NC_API void nc_free(void *p) {
    free(p);
}
