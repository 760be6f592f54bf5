/* A decision model whose NE region runs from a compiled bundle
 * (decision_lower.h): the CPU embeds (modernbert_embed via the encoder
 * bundle runner), the region's function (encoder layers, type addition,
 * head layers) runs in the MIL interpreter's fp16 mode (the numerics asked
 * of the ANE) or on an ANE device, and decision_tail finishes on the CPU. decision_forward on
 * the returned model takes this path; everything else is as decision.h. */
#ifndef NC_DECIDE_DECISION_BUNDLE_H
#define NC_DECIDE_DECISION_BUNDLE_H

#include <stdio.h>

#include "decide/decision.h"
#include "engine/engine.h"

/* Opens BUNDLE (written by decision_compile) and the decision folder it
 * was compiled from. ane NULL: the region runs in the MIL interpreter;
 * else on the ANE device ane->ane_device / ane_fake names (the fake one is
 * the interpreter behind the device interface, with its refusals; a real
 * one off macOS fails in one line). */
nc_status decision_bundle_open(const char *bundle, int n_threads, const engine_options *ane,
                               decision_model **out, nc_error *err);

/* The model for a command's --backend: "cpu" (decision_load of a folder),
 * "mil" or "ane" (decision_bundle_open of a bundle; ane on the device that
 * ane_device names, as --ane-device: "real", "fake[:SETTINGS]"). A bad
 * name fails in one line naming the option: --backend / --ane-device, or
 * "WHO: backend" / "WHO: option ane_device" when who is set (the C API). */
nc_status decision_open_backend(const char *model, const char *backend, const char *ane_device,
                                const char *who, int n_threads, decision_model **out,
                                nc_error *err);

/* What crossed between the CPU and the region so far: calls of the region
 * and bytes at fp16 (x, masks, one-hot types in; hidden out), counted at
 * the compiled (padded) shapes. */
typedef struct decision_crossings {
    long calls;
    long long bytes_in, bytes_out;
    long long x_bytes, mask_bytes, type_bytes; /* bytes_in by input */
    int last_batch, last_seq;                  /* the compiled shape of the last call */
    double copy_s; /* time binding the inputs and reading `hidden` back */
} decision_crossings;

/* Zero for a model without a bundle. */
decision_crossings decision_bundle_crossings(const decision_model *m);

/* Which parts run where, in one line: "CPU: tokenizer, ...; NE (fake ANE):
 * 2 encoder layers + ...; CPU: marker selection, ...". */
void decision_partition_text(const decision_model *m, char *buf, size_t cap);
/* "WHO: partition: ..." and, after region calls, the bytes that crossed
 * and the time of the copies (commands print it to stderr). */
void decision_crossings_print(FILE *f, const char *who, const decision_model *m);

#endif
