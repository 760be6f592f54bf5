/* The hand-written completion block (ane_block.h). macOS only; not run on
 * a device by this project. */
#include "ane/ane_block.h"

#include <stdio.h>
#include <string.h>

/* Exported by libSystem's blocks runtime (libclosure); Block.h declares it
 * for the compiler's use. The isa of blocks that capture nothing mutable. */
extern void *_NSConcreteGlobalBlock[32];

#define BLOCK_IS_GLOBAL (1 << 28)
#define BLOCK_HAS_SIGNATURE (1 << 30)

/* "v" returns void; "@?" the block itself at offset 0; "B" the BOOL at 8;
 * "@" the NSError at 12 (arm64 sizes). Only introspection reads it. */
static const ane_block_descriptor descriptor = {0, sizeof(ane_completion_block), "v20@?0B8@12"};

static void on_complete(ane_completion_block *b, ane_bool success, id error) {
    if (!atomic_exchange(&b->armed, 0)) return; /* the submitter already reported */
    if (success) {
        b->done(b->user, NC_OK, NULL);
        return;
    }
    char why[200], msg[300];
    ane_objc_error_text(error, why, sizeof why);
    snprintf(msg, sizeof msg, "%s: the ANE completed the request with failure: %s", b->what, why);
    b->done(b->user, NC_ERR_IO, msg);
}

void ane_block_init(ane_completion_block *b, const char *what) {
    memset(b, 0, sizeof *b);
    b->isa = (void *)_NSConcreteGlobalBlock;
    b->flags = BLOCK_IS_GLOBAL | BLOCK_HAS_SIGNATURE;
    b->invoke = on_complete;
    b->descriptor = &descriptor;
    atomic_init(&b->armed, 0);
    snprintf(b->what, sizeof b->what, "%s", what);
}

void ane_block_arm(ane_completion_block *b, ane_done_fn done, void *user) {
    b->done = done;
    b->user = user;
    atomic_store(&b->armed, 1);
}

int ane_block_disarm(ane_completion_block *b) {
    return atomic_exchange(&b->armed, 0) != 0;
}
