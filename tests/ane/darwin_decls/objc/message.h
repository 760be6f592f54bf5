/* Declarations only (see ../README.md). With OBJC_OLD_DISPATCH_PROTOTYPES
 * off (the default on arm64), the SDK declares objc_msgSend without
 * parameters; callers cast it to the exact function type of each call. */
#ifndef NECTAR_DECLS_OBJC_MESSAGE_H
#define NECTAR_DECLS_OBJC_MESSAGE_H

#include <objc/runtime.h>

void objc_msgSend(void);

#endif
