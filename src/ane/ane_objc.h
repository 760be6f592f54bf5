/* The Objective-C runtime from C, for the ANE bridge (macOS only; NOT run
 * on a device by this project, see docs/ane-bridge.md). No Objective-C
 * source: classes come from objc_lookUpClass after the private framework is
 * loaded with dlopen, selectors from sel_registerName, and every message is
 * objc_msgSend cast to the exact C function type of that method (ANE_MSG).
 * Memory is managed by hand (this is C, so no ARC): objects from alloc/new
 * /copy and the ones we retain are released by us; factory results are
 * autoreleased, so every entry point runs inside an autorelease pool.
 * Foundation collections are built as their toll-free bridged CF types. */
#ifndef NC_ANE_ANE_OBJC_H
#define NC_ANE_ANE_OBJC_H

#include <CoreFoundation/CoreFoundation.h>
#include <objc/message.h>
#include <objc/runtime.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ane/ane_try.h"
#include "base/error.h"

/* BOOL as the ABI passes it: C bool on arm64 (type encoding "B"), signed
 * char on x86-64 ("c"). Apple silicon is arm64, the only place an ANE is. */
#if defined(__arm64__) || defined(__aarch64__)
typedef bool ane_bool;
#else
typedef signed char ane_bool;
#endif

/* objc_msgSend as a function of type T. It is read through a variable
 * (ane_objc_msgsend = objc_msgSend) of the generic function pointer type
 * void (*)(void), so no compiler sees a call through a type other than the
 * declared one (gcc's -Wcast-function-type and "called through a
 * non-compatible type"); the call itself is the usual cast objc_msgSend. */
extern void (*ane_objc_msgsend)(void);
#define ANE_MSG(T) ((T)ane_objc_msgsend)

/* One method the bridge relies on, checked at startup: it must exist, and
 * its type encoding (offsets removed) must equal `types`, so a macOS
 * update that changes a signature fails with a message instead of
 * corrupting the stack. kind is '+' (class method) or '-'. */
typedef struct ane_objc_method {
    const char *cls;
    char kind;
    const char *sel;
    const char *types;
    int required; /* 0: optional (present[] says whether it is there) */
} ane_objc_method;

/* Checks every row; present[i] (may be NULL) is set to 1 for rows found
 * with the expected encoding. Fails on the first required row missing or
 * with another encoding, naming class, selector and both encodings. */
nc_status ane_objc_check(const ane_objc_method *rows, int n, int *present, nc_error *err);

id ane_objc_pool_push(void);
void ane_objc_pool_pop(id pool);
id ane_objc_retain(id obj);
void ane_objc_release(id obj);

/* An NSError's description (CFErrorCopyDescription), followed by the
 * description of each NSUnderlyingErrorKey error below it (where the
 * compiler's InvalidMILProgram / CompilationFailure appears, ane-bridge-rs),
 * " <- " between them; "no NSError" for nil. One line. */
void ane_objc_error_text(id nserror, char *buf, size_t cap);

/* A step of the bridge run in its own autorelease pool and under
 * ane_objc_try: an exception becomes a failure "ANE <step> raised
 * <name>: <reason>"; otherwise body's status. */
nc_status ane_objc_guard(const char *step, nc_status (*body)(void *ctx, nc_error *err), void *ctx,
                         nc_error *err);

/* +1 CF objects, named with "Create" as CoreFoundation's ownership rule
 * says (release with CFRelease); NULL on allocation failure. */
CFStringRef ane_cf_create_string(const char *s);
CFNumberRef ane_cf_create_int(int64_t v);
/* A dictionary from n CFString keys and CF values (NULL values skipped). */
CFDictionaryRef ane_cf_create_dict(int n, const CFStringRef *keys, const CFTypeRef *values);

/* modelAttributes (an NSDictionary of plist types) as JSON text, malloc'd:
 * the form src/ane_host/ane_attrs.c parses. ane_cfjson.c. */
nc_status ane_cf_to_json(CFTypeRef v, char **json, nc_error *err);

#endif
