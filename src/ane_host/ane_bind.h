/* Binding by name: a bundle function's I/O as the manifest lists them
 * (bundle/manifest.h) matched to the procedure and symbols the loaded model
 * reports in modelAttributes (ane_attrs.h), with the surface layout of
 * each. Nothing is taken from declaration order: a name the model does not
 * report, a symbol the manifest does not list, or a shape or dtype that
 * differs is an error naming the function and the I/O. */
#ifndef NC_ANE_HOST_ANE_BIND_H
#define NC_ANE_HOST_ANE_BIND_H

#include "ane_host/ane_attrs.h"
#include "ane_host/ane_layout.h"
#include "bundle/manifest.h"

typedef struct ane_bound_io {
    char name[ANE_NAME_MAX];
    int symbol;        /* the request's inputIndices/outputIndices entry */
    ane_layout layout; /* the surface it needs */
} ane_bound_io;

typedef struct ane_binding {
    char fn[ANE_NAME_MAX];
    int proc_id;     /* the request's procedureIndex */
    int n_in, n_out; /* manifest order */
    ane_bound_io in[LOWER_MAX_IO], out[LOWER_MAX_IO];
} ane_binding;

nc_status ane_bind_function(const ane_attrs *a, const lower_fn_info *f, ane_binding *out,
                            nc_error *err);
/* An input (is_output 0) or output by name, or NULL. */
const ane_bound_io *ane_binding_io(const ane_binding *b, const char *name, int is_output);

#endif
