/* The seam between the host side of the ANE backend and whatever executes
 * requests: the real Neural Engine (src/ane, macOS only) or the fake device
 * backed by the MIL interpreter (ane_fake.h), so that the whole request
 * path -- plan, bind by name, pad, run, unpad -- runs and is tested on any
 * machine. The calls mirror the private API one for one:
 *
 *   model_open      _ANEModel modelAtURL:key: + _ANEClient compileModel: /
 *                   loadModel: (compile skipped when already cached)
 *   model_attrs     -[_ANEModel modelAttributes], as JSON text
 *   surface_new     IOSurfaceCreate with 64-byte rows (ane_layout.h)
 *   surface_lock    IOSurfaceLock / IOSurfaceGetBaseAddress / IOSurfaceUnlock
 *   request_new     _ANERequest requestWithInputs:inputIndices:outputs:
 *                   outputIndices:...procedureIndex: (+ setCompletionHandler:)
 *   evaluate        _ANEClient evaluateWithModel:options:request:qos:error:
 *                   and waiting for the request to complete
 *   submit          the same without waiting: `done` runs on the device's
 *                   thread when the request completes
 *   model_close     unloadModel:options:qos:error:
 *
 * Requests of one model submitted from one thread complete in submission
 * order (the fake's worker is FIFO; on the ANE this is the observed
 * behaviour the async pipeline relies on, not a documented guarantee). */
#ifndef NC_ANE_HOST_ANE_DEVICE_H
#define NC_ANE_HOST_ANE_DEVICE_H

#include <stddef.h>

#include "base/error.h"

typedef struct ane_model ane_model;     /* a compiled, loaded program */
typedef struct ane_surface ane_surface; /* one I/O buffer */
typedef struct ane_request ane_request; /* prebuilt: procedure + bound surfaces */

/* Completion of a submitted request, called once on a device thread;
 * `msg` is the failure's one-line description (NULL on success). */
typedef void (*ane_done_fn)(void *user, nc_status st, const char *msg);

typedef struct ane_device_ops {
    const char *name; /* "ane", "fake" */
    /* program_dir holds model.mil and weights/ (a bundle's program folder). */
    nc_status (*model_open)(void *dev, const char *program_dir, ane_model **out, nc_error *err);
    /* JSON text of modelAttributes, owned by the model. */
    nc_status (*model_attrs)(ane_model *m, const char **json, size_t *len, nc_error *err);
    void (*model_close)(ane_model *m);
    nc_status (*surface_new)(void *dev, size_t bytes, ane_surface **out, nc_error *err);
    /* Host access; read_only avoids a write-back. Returns NULL on failure. */
    void *(*surface_lock)(ane_surface *s, int read_only, nc_error *err);
    void (*surface_unlock)(ane_surface *s, int read_only);
    void (*surface_free)(ane_surface *s);
    /* in_idx/out_idx: the symbol indices from modelAttributes, paired with
     * the surfaces at the same position; proc_id: the procedure id. */
    nc_status (*request_new)(ane_model *m, int proc_id, int n_in, ane_surface *const *in,
                             const int *in_idx, int n_out, ane_surface *const *out,
                             const int *out_idx, ane_request **req, nc_error *err);
    void (*request_free)(ane_request *r);
    nc_status (*evaluate)(ane_request *r, nc_error *err);
    nc_status (*submit)(ane_request *r, ane_done_fn done, void *user, nc_error *err);
} ane_device_ops;

typedef struct ane_device {
    const ane_device_ops *ops;
    void *impl;
} ane_device;

#endif
