/* modelAttributes -> JSON text (ane_objc.h): walks the property-list types
 * with the CoreFoundation C API (NSDictionary, NSArray, NSString, NSNumber
 * are their toll-free bridged CF types) into jansson. Types a plist may
 * hold but JSON cannot (data, dates) become a string that says what they
 * were; src/ane_host never reads those keys. macOS only; not run on a
 * device by this project. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "ane/ane_objc.h"

#define MAX_DEPTH 64

static json_t *string_json(CFStringRef s) {
    CFIndex cap =
        CFStringGetMaximumSizeForEncoding(CFStringGetLength(s), kCFStringEncodingUTF8) + 1;
    char *buf = malloc((size_t)cap);
    json_t *j = NULL;
    if (buf && CFStringGetCString(s, buf, cap, kCFStringEncodingUTF8)) j = json_string(buf);
    free(buf);
    return j;
}

static json_t *to_json(CFTypeRef v, int depth) {
    if (!v || depth > MAX_DEPTH) return json_null();
    CFTypeID t = CFGetTypeID(v);
    if (t == CFStringGetTypeID()) return string_json((CFStringRef)v);
    if (t == CFBooleanGetTypeID()) return json_boolean(CFBooleanGetValue((CFBooleanRef)v));
    if (t == CFNumberGetTypeID()) {
        CFNumberRef n = v;
        if (CFNumberIsFloatType(n)) {
            double d = 0;
            CFNumberGetValue(n, kCFNumberDoubleType, &d);
            return json_real(d);
        }
        int64_t i = 0;
        CFNumberGetValue(n, kCFNumberSInt64Type, &i);
        return json_integer((json_int_t)i);
    }
    if (t == CFArrayGetTypeID()) {
        CFArrayRef a = v;
        json_t *j = json_array();
        for (CFIndex i = 0; j && i < CFArrayGetCount(a); i++)
            json_array_append_new(j, to_json(CFArrayGetValueAtIndex(a, i), depth + 1));
        return j;
    }
    if (t == CFDictionaryGetTypeID()) {
        CFDictionaryRef d = v;
        CFIndex n = CFDictionaryGetCount(d);
        const void **keys = calloc((size_t)n + 1, sizeof *keys),
                   **vals = calloc((size_t)n + 1, sizeof *vals);
        json_t *j = keys && vals ? json_object() : NULL;
        if (j) CFDictionaryGetKeysAndValues(d, keys, vals);
        for (CFIndex i = 0; j && i < n; i++) {
            if (CFGetTypeID(keys[i]) != CFStringGetTypeID()) continue; /* JSON keys are strings */
            json_t *k = string_json((CFStringRef)keys[i]);
            if (k) json_object_set_new(j, json_string_value(k), to_json(vals[i], depth + 1));
            json_decref(k);
        }
        free(keys);
        free(vals);
        return j;
    }
    char what[64];
    if (t == CFDataGetTypeID())
        snprintf(what, sizeof what, "<data, %ld bytes>", (long)CFDataGetLength((CFDataRef)v));
    else
        snprintf(what, sizeof what, "<CF type %lu>", (unsigned long)t);
    return json_string(what);
}

nc_status ane_cf_to_json(CFTypeRef v, char **json, nc_error *err) {
    if (!v) return nc_fail(err, NC_ERR_FORMAT, "-[_ANEModel modelAttributes] returned nil");
    if (CFGetTypeID(v) != CFDictionaryGetTypeID())
        return nc_fail(err, NC_ERR_FORMAT,
                       "-[_ANEModel modelAttributes] did not return a dictionary");
    json_t *j = to_json(v, 0);
    *json = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!*json) return nc_fail(err, NC_ERR_NOMEM, "modelAttributes: out of memory writing JSON");
    return NC_OK;
}
