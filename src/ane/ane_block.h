/* A completion handler for -[_ANERequest setCompletionHandler:] without a
 * blocks-capable compiler: the block is written out as the structure the
 * Clang "Block Implementation Specification" (the public block ABI) defines,
 *
 *   struct { void *isa; int flags; int reserved;
 *            void (*invoke)(block *, ...); descriptor *; captured... }
 *   descriptor: { unsigned long reserved; unsigned long size;
 *                 const char *signature }   (BLOCK_HAS_SIGNATURE, no helpers)
 *
 * with isa = _NSConcreteGlobalBlock and BLOCK_IS_GLOBAL set: _Block_copy of
 * a global block returns the same pointer and _Block_release does nothing,
 * so the framework can copy and keep it while its memory stays ours (it
 * lives inside the request and must outlive every evaluation of it). The
 * handler type is void (^)(BOOL success, NSError *error), as the reference
 * quotes it; invoke has exactly that C signature after the block pointer.
 *
 * Exactly-once reporting: `armed` is set before a submission and taken
 * (atomic exchange) either by the handler, which then reports through
 * `done`, or by the submitter when -evaluateWithModel:... returned NO, in
 * which case the submitter reports and a late handler call does nothing.
 * macOS only; NOT run on a device by this project. */
#ifndef NC_ANE_ANE_BLOCK_H
#define NC_ANE_ANE_BLOCK_H

#include <stdatomic.h>

#include "ane/ane_objc.h"
#include "ane_host/ane_device.h"

typedef struct ane_block_descriptor {
    unsigned long reserved;
    unsigned long size;
    const char *signature;
} ane_block_descriptor;

typedef struct ane_completion_block ane_completion_block;
struct ane_completion_block {
    /* the block ABI header: layout fixed by the specification */
    void *isa;
    int flags;
    int reserved;
    void (*invoke)(ane_completion_block *self, ane_bool success, id error);
    const ane_block_descriptor *descriptor;
    /* captured state: ours */
    atomic_int armed;
    ane_done_fn done;
    void *user;
    char what[64]; /* the function name, for messages */
};

void ane_block_init(ane_completion_block *b, const char *what);
/* Before a submission: the next handler call reports to done(user). */
void ane_block_arm(ane_completion_block *b, ane_done_fn done, void *user);
/* After a failed submission: 1 if the handler had not run (the caller
 * reports), 0 if it already reported. */
int ane_block_disarm(ane_completion_block *b);

#endif
