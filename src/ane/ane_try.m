/* The one Objective-C source of the ANE bridge: a @try around a C body, so
 * that an Objective-C exception the private framework raises (splash's
 * runtime guards every call the same way; ane-bridge-rs reports an
 * NSInvalidArgumentException out of a failed evaluation) becomes an
 * nc_error at the boundary instead of unwinding through C frames that
 * cannot clean up. Compiled only on Darwin, with -fobjc-exceptions and
 * without ARC (the C files manage retain/release by hand). */
#include "ane/ane_try.h"

int ane_objc_try(void (*body)(void *ctx), void *ctx, char *what, size_t cap) {
    @try {
        body(ctx);
    } @catch (id e) {
        /* the text is taken here: the exception object is the runtime's */
        ane_objc_exception_text(e, what, cap);
        return 1;
    }
    return 0;
}
