/* Runtime helpers of the ANE bridge (ane_objc.h). macOS only; not run on a
 * device by this project. */
#include "ane/ane_objc.h"

#include "ane_host/ane_encoding.h"

#include <stdio.h>
#include <string.h>

void (*ane_objc_msgsend)(void) = (void (*)(void))objc_msgSend;

nc_status ane_objc_check(const ane_objc_method *rows, int n, int *present, nc_error *err) {
    for (int i = 0; i < n; i++) {
        const ane_objc_method *r = &rows[i];
        if (present) present[i] = 0;
        Class c = objc_lookUpClass(r->cls);
        if (!c) {
            if (!r->required) continue;
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "class %s is not in AppleNeuralEngine.framework", r->cls);
        }
        SEL sel = sel_registerName(r->sel);
        Method m = r->kind == '+' ? class_getClassMethod(c, sel) : class_getInstanceMethod(c, sel);
        const char *enc = m ? method_getTypeEncoding(m) : NULL;
        char got[128];
        ane_encoding_strip_offsets(enc ? enc : "", got, sizeof got);
        if (m && enc && strcmp(got, r->types) == 0) {
            if (present) present[i] = 1;
            continue;
        }
        if (!r->required) continue;
        if (!m)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%c[%s %s] does not exist on this macOS",
                           r->kind, r->cls, r->sel);
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%c[%s %s] has type encoding %s, the bridge expects %s", r->kind, r->cls,
                       r->sel, got, r->types);
    }
    return NC_OK;
}

id ane_objc_pool_push(void) {
    Class c = objc_lookUpClass("NSAutoreleasePool");
    if (!c) return NULL;
    id pool = ANE_MSG(id(*)(Class, SEL))(c, sel_registerName("alloc"));
    return pool ? ANE_MSG(id(*)(id, SEL))(pool, sel_registerName("init")) : NULL;
}

void ane_objc_pool_pop(id pool) {
    if (pool) ANE_MSG(void (*)(id, SEL))(pool, sel_registerName("drain"));
}

id ane_objc_retain(id obj) {
    return obj ? ANE_MSG(id(*)(id, SEL))(obj, sel_registerName("retain")) : NULL;
}

void ane_objc_release(id obj) {
    if (obj) ANE_MSG(void (*)(id, SEL))(obj, sel_registerName("release"));
}

/* Appends a CF string to buf (at *len), as UTF-8, with newlines as spaces. */
static void append_cf(CFStringRef str, char *buf, size_t cap, size_t *len) {
    if (!str || *len + 1 >= cap) return;
    if (!CFStringGetCString(str, buf + *len, (CFIndex)(cap - *len), kCFStringEncodingUTF8))
        snprintf(buf + *len, cap - *len, "(undecodable)");
    for (char *p = buf + *len; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' '; /* one-line messages */
    *len += strlen(buf + *len);
}

static void append_text(const char *t, char *buf, size_t cap, size_t *len) {
    if (*len + 1 >= cap) return;
    snprintf(buf + *len, cap - *len, "%s", t);
    *len += strlen(buf + *len);
}

void ane_objc_error_text(id nserror, char *buf, size_t cap) {
    snprintf(buf, cap, "no NSError");
    if (!nserror || !cap) return;
    size_t len = 0;
    buf[0] = '\0';
    CFErrorRef e = (CFErrorRef)(void *)nserror; /* NSError is CFError */
    CFRetain(e);
    /* the description, then each underlying error's: the compiler's own
     * InvalidMILProgram / CompilationFailure sits below a generic one */
    for (int depth = 0; e && depth < 4; depth++) {
        if (depth) append_text(" <- ", buf, cap, &len);
        CFStringRef d = CFErrorCopyDescription(e);
        append_cf(d, buf, cap, &len);
        if (d) CFRelease(d);
        CFDictionaryRef info = CFErrorCopyUserInfo(e);
        const void *under = info ? CFDictionaryGetValue(info, kCFErrorUnderlyingErrorKey) : NULL;
        CFErrorRef next =
            under && CFGetTypeID(under) == CFErrorGetTypeID() ? (CFErrorRef)(uintptr_t)under : NULL;
        if (next) CFRetain(next); /* outlives the dictionary */
        if (info) CFRelease(info);
        CFRelease(e);
        e = next;
    }
    if (e) CFRelease(e);
}

void ane_objc_exception_text(id e, char *buf, size_t cap) {
    snprintf(buf, cap, "an exception");
    if (!e) return;
    Class c = object_getClass(e);
    SEL name = sel_registerName("name"), reason = sel_registerName("reason");
    size_t len = 0;
    buf[0] = '\0';
    if (c && class_respondsToSelector(c, name) && class_respondsToSelector(c, reason)) {
        append_cf((CFStringRef)(void *)ANE_MSG(id(*)(id, SEL))(e, name), buf, cap, &len);
        append_text(": ", buf, cap, &len);
        append_cf((CFStringRef)(void *)ANE_MSG(id(*)(id, SEL))(e, reason), buf, cap, &len);
    } else {
        append_text(c ? class_getName(c) : "an object", buf, cap, &len);
    }
}

typedef struct guard_ctx {
    nc_status (*body)(void *ctx, nc_error *err);
    void *ctx;
    nc_error *err;
    nc_status st;
} guard_ctx;

static void run_guarded(void *p) {
    guard_ctx *g = p;
    g->st = g->body(g->ctx, g->err);
}

nc_status ane_objc_guard(const char *step, nc_status (*body)(void *ctx, nc_error *err), void *ctx,
                         nc_error *err) {
    guard_ctx g = {body, ctx, err, NC_OK};
    char what[300];
    id pool = ane_objc_pool_push();
    int raised = ane_objc_try(run_guarded, &g, what, sizeof what);
    ane_objc_pool_pop(pool);
    if (raised) return nc_fail(err, NC_ERR_IO, "ANE %s raised %s", step, what);
    return g.st;
}

CFStringRef ane_cf_create_string(const char *s) {
    return CFStringCreateWithCString(kCFAllocatorDefault, s, kCFStringEncodingUTF8);
}

CFNumberRef ane_cf_create_int(int64_t v) {
    return CFNumberCreate(kCFAllocatorDefault, kCFNumberSInt64Type, &v);
}

CFDictionaryRef ane_cf_create_dict(int n, const CFStringRef *keys, const CFTypeRef *values) {
    CFMutableDictionaryRef d = CFDictionaryCreateMutable(
        kCFAllocatorDefault, n, &kCFTypeDictionaryKeyCallBacks, &kCFTypeDictionaryValueCallBacks);
    for (int i = 0; d && i < n; i++)
        if (keys[i] && values[i]) CFDictionarySetValue(d, keys[i], values[i]);
    return d;
}
