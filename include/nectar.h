/* nectar: transformers on the Apple Neural Engine, in C.
 *
 * The public C API. Handles are opaque; every call that can fail returns an
 * nc_status (NC_OK == 0) and, where it takes one, fills an nc_error record with
 * a one-line message that names the file, tensor, field or line at fault. */
#ifndef NECTAR_H
#define NECTAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NECTAR_VERSION "0.1.0"

typedef enum nc_status {
    NC_OK = 0,
    NC_ERR_IO,          /* a file could not be opened, read, written or mapped */
    NC_ERR_FORMAT,      /* input is malformed: bad header, JSON, MIL text, ... */
    NC_ERR_NOMEM,       /* an allocation failed */
    NC_ERR_INVALID,     /* a caller passed an invalid argument or option */
    NC_ERR_UNSUPPORTED, /* well-formed but not supported (dtype, architecture, op) */
    NC_ERR_RANGE,       /* a value or size is outside what is allowed (context, index) */
    NC_ERR_NOT_FOUND,   /* a named thing is missing: tensor, file, function, field */
    NC_ERR_INTERNAL     /* a broken invariant inside nectar: a bug */
} nc_status;

/* The error record every fallible call fills. `msg` is one line, no newline. */
typedef struct nc_error {
    nc_status code;
    char msg[512];
} nc_error;

/* A short name for a status code ("io", "format", ...). */
const char *nc_status_name(nc_status s);

#ifdef __cplusplus
}
#endif
#endif
