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

void ane_objc_error_text(id nserror, char *buf, size_t cap) {
    snprintf(buf, cap, "no NSError");
    if (!nserror) return;
    CFStringRef d = CFErrorCopyDescription((CFErrorRef)(void *)nserror); /* NSError is CFError */
    if (!d) return;
    if (!CFStringGetCString(d, buf, (CFIndex)cap, kCFStringEncodingUTF8))
        snprintf(buf, cap, "NSError (undecodable)");
    CFRelease(d);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' '; /* one-line messages */
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
