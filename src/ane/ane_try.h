/* The Objective-C exception boundary of the ANE bridge (ane_try.m, the one
 * Objective-C source); its own header so that the .m file needs nothing but
 * the runtime's types. macOS only; not run on a device by this project. */
#ifndef NC_ANE_ANE_TRY_H
#define NC_ANE_ANE_TRY_H

#include <objc/runtime.h>
#include <stddef.h>

/* Runs body(ctx) inside @try. Returns 0, or 1 when an Objective-C exception
 * was raised, with its name and reason in what ("NSInvalidArgumentException:
 * ..."). */
int ane_objc_try(void (*body)(void *ctx), void *ctx, char *what, size_t cap);
/* An exception's "name: reason" (NSException), or its class name
 * (ane_objc.c). */
void ane_objc_exception_text(id e, char *buf, size_t cap);

#endif
