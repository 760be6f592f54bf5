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
 *   event_new       a shared event (MTLSharedEvent) for _ANESharedEvents
 *   submit_event    submit with sharedEvents: wait for the event to reach
 *                   `wait`, run, set it to `signal` (splash's usage)
 *
 * Ordering: nothing documents that requests of DIFFERENT models run in
 * submission order, so the host either waits between models (plain
 * submit) or chains them with an event (submit_event); the fake device
 * refuses a plain submit while another model's requests are in flight.
 * At most `max_in_flight` requests are outstanding at once (the framework
 * holds a semaphore of 2 per QoS, reference: ane-bridge-rs "only 2
 * in-flight requests useful"); the fake refuses a third.
 *
 * Surfaces: `surfaces` is the allocation policy the host must follow and
 * the fake enforces (status 0x1d on the ANE otherwise): Orion reports that
 * every input (#12) and output (#2) surface of one request must have the
 * same allocation size, and a minimum of about 48 KB (#4); other projects
 * bind mixed sizes without trouble. Both are choices, to be settled by
 * `nectar ane probe` on a real chip. */
#ifndef NC_ANE_HOST_ANE_DEVICE_H
#define NC_ANE_HOST_ANE_DEVICE_H

#include <stddef.h>

#include "base/error.h"

typedef struct ane_model ane_model;     /* a compiled, loaded program */
typedef struct ane_event ane_event;     /* a shared event: a 64-bit value */
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
    /* Events (NULL when the device has none). */
    nc_status (*event_new)(void *dev, ane_event **out, nc_error *err);
    void (*event_free)(ane_event *e);
    nc_status (*submit_event)(ane_request *r, ane_event *e, unsigned long long wait,
                              unsigned long long signal, ane_done_fn done, void *user,
                              nc_error *err);
} ane_device_ops;

/* The reported minimum surface (Orion #4: [768, 16] fp16 = 49,152 bytes). */
#define ANE_REPORTED_MIN_SURFACE_BYTES 49152
/* Compiles one process is reported to manage before compiling fails
 * (maderix, Orion #5: "about 119", for the in-memory path). */
#define ANE_REPORTED_COMPILE_BUDGET 119
/* Outstanding evaluations per QoS (the framework's semaphore). */
#define ANE_MAX_IN_FLIGHT 2

typedef struct ane_surface_policy {
    int uniform;      /* every surface of one request has the same allocation size */
    size_t min_bytes; /* no surface smaller than this (0: none) */
} ane_surface_policy;

/* The default until a probe says otherwise: both, which costs only memory. */
#define ANE_SURFACE_POLICY_DEFAULT                                                                 \
    { 1, ANE_REPORTED_MIN_SURFACE_BYTES }

struct ane_relower_ask;

typedef struct ane_device {
    const ane_device_ops *ops;
    void *impl;
    ane_surface_policy surfaces; /* what the host allocates (ane_plan_surface_sizes) */
    int max_in_flight;           /* submissions outstanding at once (0: ANE_MAX_IN_FLIGHT) */
    int preferred_mode;          /* the ane_run_mode a probe profile found fastest (0: sync) */
    /* The compile ladder's memory (ane_ladder.h): the profile file its
     * outcomes go to ("": none) and this device's key in it. */
    char ladder_profile[1024];
    char ladder_device[160];
    /* The ladder's relower rung (ane_relower.h), installed by the engine;
     * NULL: the rung is skipped. */
    nc_status (*relower)(void *user, const struct ane_relower_ask *ask, char *form,
                         size_t form_cap, nc_error *err);
    void *relower_user;
} ane_device;

#endif
