/* The ane_device of the real Neural Engine (ane_apple.h). Each entry point
 * runs in its own autorelease pool, retains what it keeps and releases it
 * in the matching close/free. Synchronous evaluation relies on
 * -evaluateWithModel:... returning when the request is done (no completion
 * handler set: the maderix/Orion usage); asynchronous submission sets the
 * hand-written completion block first (ane_block.h), the usage splash and
 * the reverse-engineering article report. Every entry point runs under
 * ane_objc_guard (an Objective-C exception becomes an nc_error), and each
 * program is handed to the daemon from a copy in the per-user cache
 * (ane_stage.h), by its absolute resolved path.
 * macOS only; NOT run on a device by this project. */
#include <IOSurface/IOSurface.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ane/ane_apple.h"
#include "ane/ane_block.h"
#include "ane/ane_objc.h"
#include "ane_host/ane_probe.h"
#include "ane_host/ane_stage.h"
#include "base/mmap.h"

/* A CF object passed where the method takes an id (toll-free bridging). */
#define ANE_ID(cf) ((id)(uintptr_t)(cf))

/* The methods used, with their encodings as the splash runtime's table
 * lists them (reference §1); checked at open. */
enum {
    M_MODEL_AT_URL,
    M_MODEL_ATTRS,
    M_SHARED,
    M_COMPILE,
    M_EXISTS,
    M_PURGE,
    M_LOAD,
    M_UNLOAD,
    M_EVAL,
    M_IOOBJ,
    M_REQ9,
    M_REQ7,
    M_SET_HANDLER,
    M_SIG_EV,
    M_WAIT_EV,
    M_EVENTS,
    M_COUNT
};
static const ane_objc_method methods[M_COUNT] = {
    {"_ANEModel", '+', "modelAtURL:key:", "@@:@@", 1},
    {"_ANEModel", '-', "modelAttributes", "@@:", 1},
    {"_ANEClient", '+', "sharedConnection", "@@:", 1},
    {"_ANEClient", '-', "compileModel:options:qos:error:", "B@:@@I^@", 1},
    {"_ANEClient", '-', "compiledModelExistsFor:", "B@:@", 1},
    {"_ANEClient", '-', "purgeCompiledModel:", "v@:@", 1},
    {"_ANEClient", '-', "loadModel:options:qos:error:", "B@:@@I^@", 1},
    {"_ANEClient", '-', "unloadModel:options:qos:error:", "B@:@@I^@", 1},
    {"_ANEClient", '-', "evaluateWithModel:options:request:qos:error:", "B@:@@@I^@", 1},
    {"_ANEIOSurfaceObject", '+', "objectWithIOSurface:", "@@:^{__IOSurface=}", 1},
    {"_ANERequest", '+',
     "requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:"
     "sharedEvents:transactionHandle:",
     "@@:@@@@@@@@@", 0},
    {"_ANERequest", '+',
     "requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:",
     "@@:@@@@@@@", 0},
    {"_ANERequest", '-', "setCompletionHandler:", "v@:@?", 1},
    /* shared events, as splash declares them (optional: the async variant) */
    {"_ANESharedSignalEvent", '+',
     "signalEventWithValue:symbolIndex:eventType:sharedEvent:", "@@:QIq@", 0},
    {"_ANESharedWaitEvent", '+', "waitEventWithValue:sharedEvent:eventType:", "@@:Q@Q", 0},
    {"_ANESharedEvents", '+', "sharedEventsWithSignalEvents:waitEvents:", "@@:@@", 0},
};

typedef struct apple_dev {
    void *framework;
    unsigned qos;
    size_t min_surface_bytes;
    char cache_root[1024]; /* where programs are staged (ane_stage.h) */
    id client;             /* _ANEClient, retained */
    CFDictionaryRef empty; /* @{} for options */
    CFDictionaryRef compile_opts;
    int has_req9, has_events;
    id metal; /* MTLDevice for shared events, retained; on first event_new */
    SEL sel[M_COUNT];
} apple_dev;

struct ane_model {
    apple_dev *d;
    id model; /* _ANEModel, retained */
    int loaded;
    char *json;
    char dir[1024];    /* the bundle's folder (messages) */
    char staged[1200]; /* the absolute path the daemon compiles */
};

struct ane_surface {
    IOSurfaceRef s;
    id obj; /* _ANEIOSurfaceObject, retained */
    size_t bytes;
};

struct ane_request {
    ane_model *m;
    id req; /* _ANERequest, retained */
    ane_completion_block block;
    /* the request's arguments, kept for submissions with events, which
     * need a request of their own (its sharedEvents name the values) */
    CFArrayRef ins, outs, ii, oi;
    CFNumberRef proc;
    id ev_req; /* the last one, retained until the next or the free */
};

struct ane_event {
    apple_dev *d;
    id shared; /* MTLSharedEvent, +1 from newSharedEvent */
};

static Class cls(int m) {
    return objc_lookUpClass(methods[m].cls);
}

/* --- models --------------------------------------------------------------- */

static nc_status fail_ns(nc_error *err, const char *sel, const char *dir, id e) {
    char why[200];
    ane_objc_error_text(e, why, sizeof why);
    return nc_fail(err, NC_ERR_IO, "-[_ANEClient %s] failed for %s: %s", sel, dir, why);
}

typedef ane_bool (*client_model_fn)(id, SEL, id, CFDictionaryRef, unsigned, id *);

/* Compiles unless the daemon holds a compile for the key, then loads. Only
 * when the load of a CACHED compile fails is it purged and compiled again
 * (splash: the service may keep a compilation it cannot load, from another
 * compiler version); a fresh compile that does not load is reported as is. */
static nc_status compile_and_load(apple_dev *d, ane_model *m, nc_error *err) {
    id e = NULL;
    client_model_fn compile = ANE_MSG(client_model_fn), load = ANE_MSG(client_model_fn);
    ane_bool cached = ANE_MSG(ane_bool(*)(id, SEL, id))(d->client, d->sel[M_EXISTS], m->model);
    if (!cached && !compile(d->client, d->sel[M_COMPILE], m->model, d->compile_opts, d->qos, &e))
        return fail_ns(err, methods[M_COMPILE].sel, m->dir, e);
    if (load(d->client, d->sel[M_LOAD], m->model, d->empty, d->qos, &e)) return NC_OK;
    if (!cached) return fail_ns(err, methods[M_LOAD].sel, m->dir, e);
    ANE_MSG(void (*)(id, SEL, id))(d->client, d->sel[M_PURGE], m->model);
    e = NULL;
    if (!compile(d->client, d->sel[M_COMPILE], m->model, d->compile_opts, d->qos, &e))
        return fail_ns(err, methods[M_COMPILE].sel, m->dir, e);
    e = NULL;
    if (!load(d->client, d->sel[M_LOAD], m->model, d->empty, d->qos, &e))
        return fail_ns(err, methods[M_LOAD].sel, m->dir, e);
    return NC_OK;
}

static nc_status unload_body(void *p, nc_error *err) {
    (void)err;
    ane_model *m = p;
    apple_dev *d = m->d;
    if (m->loaded) {
        id e = NULL; /* nothing to do about a failed unload but go on */
        ANE_MSG(client_model_fn)(d->client, d->sel[M_UNLOAD], m->model, d->empty, d->qos, &e);
    }
    return NC_OK;
}

static void apple_model_close(ane_model *m) {
    if (!m) return;
    nc_error ignored = {0};
    ane_objc_guard("unload", unload_body, m, &ignored);
    ane_objc_release(m->model);
    free(m->json);
    free(m);
}

static nc_status open_body(void *p, nc_error *err) {
    ane_model *m = p;
    apple_dev *d = m->d;
    char key[ANE_STAGE_KEY_MAX];
    NC_TRY(ane_stage_program(d->cache_root, m->dir, m->staged, sizeof m->staged, key, err));
    CFURLRef url = CFURLCreateFromFileSystemRepresentation(
        kCFAllocatorDefault, (const UInt8 *)m->staged, (CFIndex)strlen(m->staged), 1);
    CFStringRef k = ane_cf_create_string(key);
    id model = url && k ? ANE_MSG(id(*)(Class, SEL, id, id))(
                              cls(M_MODEL_AT_URL), d->sel[M_MODEL_AT_URL], ANE_ID(url), ANE_ID(k))
                        : NULL;
    if (url) CFRelease(url);
    if (k) CFRelease(k);
    if (!model)
        return nc_fail(err, NC_ERR_IO, "+[_ANEModel modelAtURL:key:] returned nil for %s",
                       m->staged);
    m->model = ane_objc_retain(model);
    NC_TRY(compile_and_load(d, m, err));
    m->loaded = 1;
    id attrs = ANE_MSG(id(*)(id, SEL))(m->model, d->sel[M_MODEL_ATTRS]);
    if (ane_cf_to_json((CFTypeRef)attrs, &m->json, err)) return nc_fail_prefix(err, "%s", m->dir);
    return NC_OK;
}

static nc_status apple_model_open(void *dev, const char *dir, ane_model **out, nc_error *err) {
    apple_dev *d = dev;
    ane_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    m->d = d;
    if (strlen(dir) >= sizeof m->dir) {
        free(m);
        return nc_fail(err, NC_ERR_RANGE, "%s: path too long", dir);
    }
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    nc_status st = ane_objc_guard("model open", open_body, m, err);
    if (st) {
        apple_model_close(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

static nc_status apple_model_attrs(ane_model *m, const char **json, size_t *len, nc_error *err) {
    (void)err;
    *json = m->json;
    *len = strlen(m->json);
    return NC_OK;
}

/* --- surfaces ------------------------------------------------------------- */

static void apple_surface_free(ane_surface *s) {
    if (!s) return;
    ane_objc_release(s->obj);
    if (s->s) CFRelease(s->s);
    free(s);
}

typedef struct surface_ctx {
    apple_dev *d;
    ane_surface *s;
} surface_ctx;

static nc_status surface_obj_body(void *p, nc_error *err) {
    surface_ctx *c = p;
    id obj = ANE_MSG(id(*)(Class, SEL, IOSurfaceRef))(cls(M_IOOBJ), c->d->sel[M_IOOBJ], c->s->s);
    c->s->obj = ane_objc_retain(obj);
    if (!c->s->obj)
        return nc_fail(err, NC_ERR_IO, "+[_ANEIOSurfaceObject objectWithIOSurface:] returned nil");
    return NC_OK;
}

/* A flat byte buffer: one row up to 16 KB, else rows of 4096 bytes (a page,
 * so IOSurface never pads a row and the bytes stay contiguous; the
 * ane-bridge-rs recipe). The 64-byte row layout lives inside those bytes. */
static nc_status apple_surface_new(void *dev, size_t bytes, ane_surface **out, nc_error *err) {
    apple_dev *d = dev;
    if (!bytes) bytes = 64;
    if (bytes < d->min_surface_bytes) bytes = d->min_surface_bytes;
    size_t w = bytes <= 16384 ? bytes : 4096, h = (bytes + w - 1) / w;
    ane_surface *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    s->bytes = bytes;
    CFStringRef keys[6] = {kIOSurfaceWidth,       kIOSurfaceHeight,    kIOSurfaceBytesPerElement,
                           kIOSurfaceBytesPerRow, kIOSurfaceAllocSize, kIOSurfacePixelFormat};
    CFTypeRef vals[6] = {
        ane_cf_create_int((int64_t)w), ane_cf_create_int((int64_t)h),       ane_cf_create_int(1),
        ane_cf_create_int((int64_t)w), ane_cf_create_int((int64_t)(w * h)), ane_cf_create_int(0)};
    CFDictionaryRef props = ane_cf_create_dict(6, keys, vals);
    for (int i = 0; i < 6; i++)
        if (vals[i]) CFRelease(vals[i]);
    s->s = props ? IOSurfaceCreate(props) : NULL;
    if (props) CFRelease(props);
    if (!s->s) {
        apple_surface_free(s);
        return nc_fail(err, NC_ERR_NOMEM, "IOSurfaceCreate failed for %zu bytes", bytes);
    }
    if (IOSurfaceGetBytesPerRow(s->s) != w || IOSurfaceGetAllocSize(s->s) < bytes) {
        size_t bpr = IOSurfaceGetBytesPerRow(s->s);
        apple_surface_free(s);
        return nc_fail(err, NC_ERR_UNSUPPORTED, "IOSurfaceCreate: %zu bytes per row, asked for %zu",
                       bpr, w);
    }
    surface_ctx c = {d, s};
    nc_status st = ane_objc_guard("surface object", surface_obj_body, &c, err);
    if (st) {
        apple_surface_free(s);
        return st;
    }
    *out = s;
    return NC_OK;
}

/* Writes are made visible to the ANE by the unlock; kIOSurfaceLockAvoidSync
 * is not used (the reference: never on unlock). */
static void *apple_surface_lock(ane_surface *s, int read_only, nc_error *err) {
    kern_return_t kr = IOSurfaceLock(s->s, read_only ? kIOSurfaceLockReadOnly : 0, NULL);
    if (kr != 0) {
        nc_fail(err, NC_ERR_IO, "IOSurfaceLock failed: kern_return 0x%x", (unsigned)kr);
        return NULL;
    }
    return IOSurfaceGetBaseAddress(s->s);
}

static void apple_surface_unlock(ane_surface *s, int read_only) {
    IOSurfaceUnlock(s->s, read_only ? kIOSurfaceLockReadOnly : 0, NULL);
}

/* --- requests ------------------------------------------------------------- */

static void apple_request_free(ane_request *r) {
    if (!r) return;
    ane_objc_release(r->req);
    ane_objc_release(r->ev_req);
    CFTypeRef kept[5] = {r->ins, r->outs, r->ii, r->oi, r->proc};
    for (int i = 0; i < 5; i++)
        if (kept[i]) CFRelease(kept[i]);
    free(r);
}

static CFArrayRef create_object_array(int n, ane_surface *const *s) {
    const void *v[64];
    for (int i = 0; i < n && i < 64; i++)
        v[i] = s[i]->obj;
    return CFArrayCreate(kCFAllocatorDefault, v, n, &kCFTypeArrayCallBacks);
}

static CFArrayRef create_number_array(int n, const int *x) {
    CFNumberRef v[64];
    for (int i = 0; i < n && i < 64; i++)
        v[i] = ane_cf_create_int(x[i]);
    CFArrayRef a = CFArrayCreate(kCFAllocatorDefault, (const void **)v, n, &kCFTypeArrayCallBacks);
    for (int i = 0; i < n && i < 64; i++)
        if (v[i]) CFRelease(v[i]);
    return a;
}

typedef struct request_ctx {
    ane_request *r;
    int proc_id, n_in, n_out;
    ane_surface *const *in, *const *out;
    const int *in_idx, *out_idx;
} request_ctx;

/* An _ANERequest over r's arguments with the given sharedEvents (nil, or
 * an _ANESharedEvents); autoreleased, NULL on failure. */
static id make_request(apple_dev *d, const ane_request *r, id events) {
    if (!r->ins || !r->outs || !r->ii || !r->oi || !r->proc) return NULL;
    if (d->has_req9)
        return ANE_MSG(id(*)(Class, SEL, id, id, id, id, id, id, id, id, id))(
            cls(M_REQ9), d->sel[M_REQ9], ANE_ID(r->ins), ANE_ID(r->ii), ANE_ID(r->outs),
            ANE_ID(r->oi), NULL, NULL, ANE_ID(r->proc), events, NULL);
    if (events) return NULL; /* the 7-argument form takes no events */
    return ANE_MSG(id(*)(Class, SEL, id, id, id, id, id, id, id))(
        cls(M_REQ7), d->sel[M_REQ7], ANE_ID(r->ins), ANE_ID(r->ii), ANE_ID(r->outs), ANE_ID(r->oi),
        NULL, NULL, ANE_ID(r->proc));
}

/* perfStats: nil, as splash and maderix pass it (an -count sent to nil is
 * 0, so a validation that counts it still passes); weightsBuffer: nil;
 * sharedEvents and transactionHandle: nil (events: ane_submit_event). */
static nc_status request_body(void *p, nc_error *err) {
    request_ctx *c = p;
    apple_dev *d = c->r->m->d;
    ane_request *r = c->r;
    r->ins = create_object_array(c->n_in, c->in);
    r->outs = create_object_array(c->n_out, c->out);
    r->ii = create_number_array(c->n_in, c->in_idx);
    r->oi = create_number_array(c->n_out, c->out_idx);
    r->proc = ane_cf_create_int(c->proc_id);
    r->req = ane_objc_retain(make_request(d, r, NULL));
    if (!r->req)
        return nc_fail(
            err, NC_ERR_IO,
            "+[_ANERequest requestWithInputs:...procedureIndex:] returned nil for procedure %d",
            c->proc_id);
    return NC_OK;
}

static nc_status apple_request_new(ane_model *m, int proc_id, int n_in, ane_surface *const *in,
                                   const int *in_idx, int n_out, ane_surface *const *out,
                                   const int *out_idx, ane_request **req, nc_error *err) {
    if (n_in < 0 || n_out < 0 || n_in > 64 || n_out > 64)
        return nc_fail(err, NC_ERR_RANGE, "_ANERequest: %d inputs, %d outputs", n_in, n_out);
    ane_request *r = calloc(1, sizeof *r);
    if (!r) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    r->m = m;
    char what[64];
    snprintf(what, sizeof what, "procedure %d", proc_id);
    ane_block_init(&r->block, what);
    request_ctx c = {r, proc_id, n_in, n_out, in, out, in_idx, out_idx};
    nc_status st = ane_objc_guard("request creation", request_body, &c, err);
    if (st) {
        apple_request_free(r);
        return st;
    }
    *req = r;
    return NC_OK;
}

typedef ane_bool (*eval_fn)(id, SEL, id, CFDictionaryRef, id, unsigned, id *);

/* One evaluateWithModel: call with the given completion block (NULL: none). */
static ane_bool evaluate_once(ane_request *r, ane_completion_block *block, id *e) {
    apple_dev *d = r->m->d;
    ANE_MSG(void (*)(id, SEL, void *))(r->req, d->sel[M_SET_HANDLER], block);
    return ANE_MSG(eval_fn)(d->client, d->sel[M_EVAL], r->m->model, d->empty, r->req, d->qos, e);
}

static nc_status evaluate_body(void *p, nc_error *err) {
    ane_request *r = p;
    id e = NULL;
    return evaluate_once(r, NULL, &e) ? NC_OK : fail_ns(err, methods[M_EVAL].sel, r->m->dir, e);
}

static nc_status apple_evaluate(ane_request *r, nc_error *err) {
    return ane_objc_guard("evaluation", evaluate_body, r, err);
}

static nc_status submit_body(void *p, nc_error *err) {
    ane_request *r = p;
    id e = NULL;
    if (!evaluate_once(r, &r->block, &e)) return fail_ns(err, methods[M_EVAL].sel, r->m->dir, e);
    return NC_OK;
}

static nc_status apple_submit(ane_request *r, ane_done_fn done, void *user, nc_error *err) {
    ane_block_arm(&r->block, done, user);
    nc_status st = ane_objc_guard("submission", submit_body, r, err);
    /* NO or an exception: reported here unless the handler already took
     * the report (exactly one report per submission, ane_block.h) */
    if (st && !ane_block_disarm(&r->block)) st = NC_OK;
    return st;
}

/* --- shared events --------------------------------------------------------- */

typedef id (*mtl_create_fn)(void);

static nc_status event_body(void *p, nc_error *err) {
    ane_event *e = p;
    apple_dev *d = e->d;
    if (!d->has_events || !d->has_req9)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "this macOS lacks _ANESharedEvents or the 9-argument _ANERequest");
    if (!d->metal) {
        /* Metal through dlsym: MTLCreateSystemDefaultDevice is declared only
         * in an Objective-C header; it returns a +1 object (the "Create" rule) */
        void *h = dlopen("/System/Library/Frameworks/Metal.framework/Metal", RTLD_NOW);
        void *f = h ? dlsym(h, "MTLCreateSystemDefaultDevice") : NULL;
        mtl_create_fn create;
        memcpy(&create, &f, sizeof create);
        d->metal = f ? create() : NULL;
        if (!d->metal) return nc_fail(err, NC_ERR_UNSUPPORTED, "no Metal device for shared events");
    }
    e->shared = ANE_MSG(id(*)(id, SEL))(d->metal, sel_registerName("newSharedEvent"));
    if (!e->shared) return nc_fail(err, NC_ERR_IO, "-[MTLDevice newSharedEvent] returned nil");
    return NC_OK;
}

static void apple_event_free(ane_event *e) {
    if (!e) return;
    ane_objc_release(e->shared);
    free(e);
}

static nc_status apple_event_new(void *dev, ane_event **out, nc_error *err) {
    ane_event *e = calloc(1, sizeof *e);
    if (!e) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    e->d = dev;
    nc_status st = ane_objc_guard("shared event creation", event_body, e, err);
    if (st) {
        apple_event_free(e);
        return st;
    }
    *out = e;
    return NC_OK;
}

typedef struct event_submit {
    ane_request *r;
    ane_event *e;
    unsigned long long wait, signal;
} event_submit;

/* splash's enqueue: a signal event (value, symbol 0, type 0) and a wait
 * event on the same MTLSharedEvent, wrapped in _ANESharedEvents, a request
 * of its own carrying them, a completion handler (required: "an evaluation
 * with shared events runs asynchronously"), then evaluateWithModel:. */
static nc_status submit_event_body(void *p, nc_error *err) {
    event_submit *c = p;
    ane_request *r = c->r;
    apple_dev *d = r->m->d;
    id sig = ANE_MSG(id(*)(Class, SEL, unsigned long long, unsigned, long long, id))(
        cls(M_SIG_EV), d->sel[M_SIG_EV], c->signal, 0u, 0ll, c->e->shared);
    id wait = ANE_MSG(id(*)(Class, SEL, unsigned long long, id, unsigned long long))(
        cls(M_WAIT_EV), d->sel[M_WAIT_EV], c->wait, c->e->shared, 0ull);
    CFArrayRef sigs =
        sig ? CFArrayCreate(kCFAllocatorDefault, (const void **)&sig, 1, &kCFTypeArrayCallBacks)
            : NULL;
    CFArrayRef waits =
        wait ? CFArrayCreate(kCFAllocatorDefault, (const void **)&wait, 1, &kCFTypeArrayCallBacks)
             : NULL;
    id events = sigs && waits ? ANE_MSG(id(*)(Class, SEL, id, id))(cls(M_EVENTS), d->sel[M_EVENTS],
                                                                   ANE_ID(sigs), ANE_ID(waits))
                              : NULL;
    if (sigs) CFRelease(sigs);
    if (waits) CFRelease(waits);
    id q = events ? make_request(d, r, events) : NULL;
    if (!q) return nc_fail(err, NC_ERR_IO, "_ANESharedEvents or its _ANERequest returned nil");
    ane_objc_release(r->ev_req);
    r->ev_req = ane_objc_retain(q);
    ANE_MSG(void (*)(id, SEL, void *))(r->ev_req, d->sel[M_SET_HANDLER], &r->block);
    id e = NULL;
    if (!ANE_MSG(eval_fn)(d->client, d->sel[M_EVAL], r->m->model, d->empty, r->ev_req, d->qos, &e))
        return fail_ns(err, methods[M_EVAL].sel, r->m->dir, e);
    return NC_OK;
}

static nc_status apple_submit_event(ane_request *r, ane_event *e, unsigned long long wait,
                                    unsigned long long signal, ane_done_fn done, void *user,
                                    nc_error *err) {
    event_submit c = {r, e, wait, signal};
    ane_block_arm(&r->block, done, user);
    nc_status st = ane_objc_guard("submission with events", submit_event_body, &c, err);
    if (st && !ane_block_disarm(&r->block)) st = NC_OK;
    return st;
}

static const ane_device_ops apple_ops = {
    "ane",
    apple_model_open,
    apple_model_attrs,
    apple_model_close,
    apple_surface_new,
    apple_surface_lock,
    apple_surface_unlock,
    apple_surface_free,
    apple_request_new,
    apple_request_free,
    apple_evaluate,
    apple_submit,
    apple_event_new,
    apple_event_free,
    apple_submit_event,
};

/* --- the device ----------------------------------------------------------- */

void ane_apple_close(ane_device *dev) {
    apple_dev *d = dev ? dev->impl : NULL;
    if (!d) return;
    ane_objc_release(d->client);
    ane_objc_release(d->metal);
    if (d->empty) CFRelease(d->empty);
    if (d->compile_opts) CFRelease(d->compile_opts);
    /* the framework stays loaded: classes may be cached by the runtime */
    free(d);
    dev->impl = NULL;
}

static nc_status open_in_pool_dev(void *p, nc_error *err) {
    apple_dev *d = p;
    int present[M_COUNT];
    NC_TRY(ane_objc_check(methods, M_COUNT, present, err));
    if (!present[M_REQ9] && !present[M_REQ7])
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "+[_ANERequest requestWithInputs:...procedureIndex:] does not exist "
                       "with the expected encoding on this macOS");
    d->has_req9 = present[M_REQ9];
    d->has_events = present[M_SIG_EV] && present[M_WAIT_EV] && present[M_EVENTS];
    for (int i = 0; i < M_COUNT; i++)
        d->sel[i] = sel_registerName(methods[i].sel);
    id client = ANE_MSG(id(*)(Class, SEL))(cls(M_SHARED), d->sel[M_SHARED]);
    if (!client) return nc_fail(err, NC_ERR_IO, "+[_ANEClient sharedConnection] returned nil");
    d->client = ane_objc_retain(client);
    d->empty = ane_cf_create_dict(0, NULL, NULL);
    CFStringRef k[2] = {ane_cf_create_string("kANEFModelType"),
                        ane_cf_create_string("kANEFNetPlistFilenameKey")};
    CFTypeRef v[2] = {ane_cf_create_string("kANEFModelMIL"), ane_cf_create_string("model.mil")};
    d->compile_opts = ane_cf_create_dict(2, k, v);
    for (int i = 0; i < 2; i++) {
        if (k[i]) CFRelease(k[i]);
        if (v[i]) CFRelease(v[i]);
    }
    if (!d->empty || !d->compile_opts) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    return NC_OK;
}

/* The policy and mode a probe profile chooses: the given file (which must
 * read), else the saved default when there is one. Returns 0 on failure. */
static int profile_choice(const char *path, ane_surface_policy *pol, ane_run_mode *mode,
                          nc_error *err) {
    char def[1200];
    if (!path) {
        if (ane_stage_default_root(def, sizeof def - 16, err)) return 0;
        strcat(def, "/profile.json");
        if (!nc_file_exists(def)) return 1;
        path = def;
    }
    mil_ane_profile *p = calloc(1, sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "out of memory"), 0;
    nc_status st = mil_ane_profile_read(path, p, err);
    if (!st) ane_probe_choose(p, pol, mode);
    free(p);
    return st == NC_OK;
}

nc_status ane_apple_open(const ane_apple_options *opt, ane_device *out, nc_error *err) {
    apple_dev *d = calloc(1, sizeof *d);
    if (!d) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    d->qos = opt && opt->qos ? opt->qos : 21;
    ane_surface_policy pol = ANE_SURFACE_POLICY_DEFAULT;
    ane_run_mode mode = ANE_RUN_SYNC;
    if (opt && opt->surfaces) {
        pol = *opt->surfaces;
    } else if (!profile_choice(opt ? opt->profile : NULL, &pol, &mode, err)) {
        free(d);
        return err ? err->code : NC_ERR_IO;
    }
    d->min_surface_bytes = pol.min_bytes;
    d->framework = dlopen(ANE_FRAMEWORK_PATH, RTLD_NOW);
    if (!d->framework) {
        const char *why = dlerror();
        free(d);
        return nc_fail(err, NC_ERR_UNSUPPORTED, "dlopen(%s): %s", ANE_FRAMEWORK_PATH,
                       why ? why : "failed");
    }
    if (opt && opt->cache_root) {
        if (strlen(opt->cache_root) >= sizeof d->cache_root) {
            free(d);
            return nc_fail(err, NC_ERR_RANGE, "ANE cache directory path too long");
        }
        snprintf(d->cache_root, sizeof d->cache_root, "%s", opt->cache_root);
    } else if (ane_stage_default_root(d->cache_root, sizeof d->cache_root, err)) {
        free(d);
        return err ? err->code : NC_ERR_IO;
    }
    nc_status st = ane_objc_guard("interface lookup", open_in_pool_dev, d, err);
    memset(out, 0, sizeof *out); /* no ladder profile until the caller names one */
    out->ops = &apple_ops;
    out->impl = d;
    out->surfaces = pol;
    out->preferred_mode = (int)mode;
    out->max_in_flight = opt && opt->max_in_flight > 0 ? opt->max_in_flight : ANE_MAX_IN_FLIGHT;
    if (st) ane_apple_close(out);
    return st;
}
