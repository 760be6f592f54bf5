/* The relower rung's hook (ane_host/ane_relower.h), which the ane engine
 * installs on its device: a function the device refuses in every view of
 * the compiled program, lowered again into the form that avoids what it
 * holds, from the bundle alone -- the manifest's config and plan, and the
 * fp16 weights read back from the program's own weights/weight.bin
 * (mil_value_bytes, mil/mil_blob.c); the Hugging Face folder is never
 * opened. The forms it knows (docs/ane-bridge.md, "Re-lowering from the
 * bundle"):
 *   head_s32 with a conv wider than 16,384 channels -> convs over row
 *     slices of the chunk's weight, concatenated into the same logits_i
 *     ("head rows 16,384").
 * Anything else: NC_ERR_UNSUPPORTED with the reason (it stays on the CPU). */
#ifndef NC_ENGINE_BUNDLE_RELOWER_H
#define NC_ENGINE_BUNDLE_RELOWER_H

#include <stddef.h>

#include "ane_host/ane_relower.h"

nc_status engine_bundle_relower(void *user, const ane_relower_ask *ask, char *form,
                                size_t form_cap, nc_error *err);

#endif
