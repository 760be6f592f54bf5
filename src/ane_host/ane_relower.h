/* The ladder's relower rung (ane_ladder.h): a function the device refuses
 * in every view of the compiled program is lowered again, from the bundle
 * alone (its manifest and the program's weight.bin), into a form that
 * avoids the refused construct -- with the same name and I/O, so the plan
 * and the host stay as they are. Lowering is src/lower's, which this layer
 * may not call: the engine installs the hook on the device
 * (ane_device.relower) and the runner calls it. */
#ifndef NC_ANE_HOST_ANE_RELOWER_H
#define NC_ANE_HOST_ANE_RELOWER_H

#include <stddef.h>

#include "base/error.h"
#include "bundle/manifest.h"
#include "mil/ir.h"

/* What the runner asks the hook for: function fn of program `program` of
 * the bundle, as a program of its own written into folder dst
 * (dst/model.mil and dst/weights/weight.bin: one function named fn whose
 * inputs and outputs are the manifest's). */
typedef struct ane_relower_ask {
    const char *bundle;        /* the bundle folder */
    const lower_manifest *man; /* its manifest (a decoder bundle) */
    int program;               /* index into man->programs */
    const char *src;           /* the program's folder (model.mil, weights/) */
    const mil_program *prog;   /* its model.mil, parsed (weights read through mil_value_bytes) */
    const char *fn;            /* the refused function */
    const char *why;           /* the device's refusal, for messages */
    const char *dst;           /* where the re-lowered program goes */
    int attempt;               /* 0, 1, ...: the runner asks again while the device refuses
                                  what the hook wrote */
} ane_relower_ask;

/* Writes the re-lowered program of candidate form `attempt` (a device does
 * not say which construct it refused, so the hook offers each form that
 * avoids one the function holds, in turn) and names it in `form` ("head
 * rows 16384", "kv update onehot"); NC_ERR_UNSUPPORTED with a reason past
 * the last candidate (the function stays on the CPU). */
typedef nc_status (*ane_relower_fn)(void *user, const ane_relower_ask *ask, char *form,
                                    size_t form_cap, nc_error *err);

#endif
