/* What the fake device can be told to refuse, and how else it can behave
 * like a device the host has not met: the constructs public sources
 * disagree on (docs/ane-bridge.md, "A device that says no"), each a
 * rule the fake checks at model_open -- where the ANE compiles -- and
 * refuses with the framework's error shape ("ANECCompile() FAILED <-
 * ..."), so that every path after a refusal (the per-program CPU
 * fallback) runs on any machine.
 *
 * The settings arrive as text after "fake:" in --ane-device or
 * NECTAR_ANE_DEVICE, ':'-separated:
 *   reject=RULE[,RULE...]   refuse programs with these constructs (`all`: every rule)
 *   shuffle-status          NetworkStatusList in another order than the procedures
 *   nameless-status         NetworkStatusList entries without Name
 *   padded-strides          rows 64 bytes wider than packed (RowStride/PlaneStride/BatchStride) */
#ifndef NC_ANE_HOST_ANE_FAKE_RULES_H
#define NC_ANE_HOST_ANE_FAKE_RULES_H

#include <stddef.h>
#include <stdio.h>

#include "base/error.h"
#include "mil/ir.h"

typedef enum ane_fake_reject {
    ANE_REJECT_GATHER = 1u << 0,           /* any gather op */
    ANE_REJECT_MULTI_FUNCTION = 1u << 1,   /* more than one function per program */
    ANE_REJECT_MIXED_SHAPES = 1u << 2,     /* functions whose I/O differ in names or shapes */
    ANE_REJECT_MULTI_OUTPUT = 1u << 3,     /* a function with more than one output */
    ANE_REJECT_ELEMENTWISE_ONLY = 1u << 4, /* a function without conv/matmul */
    ANE_REJECT_BROADCAST_MATMUL = 1u << 5, /* matmul operands with unequal batch dims */
    ANE_REJECT_WIDE_CONV = 1u << 6,        /* a conv of more than 16,384 output channels */
    ANE_REJECT_PALETTIZED = 1u << 7,       /* constexpr_lut_to_dense weights */
    ANE_REJECT_ALL = (1u << 8) - 1
} ane_fake_reject;

/* The widest conv the public runtimes emit (Anemll splits Qwen's LM head
 * into 16 convs, ironmill caps at the same figure). */
#define ANE_FAKE_WIDE_CONV 16384

typedef struct ane_fake_behaviour {
    unsigned reject; /* ane_fake_reject bits */
    int shuffle_status, nameless_status, padded_strides;
} ane_fake_behaviour;

/* Parses the text after "fake:" ("" or NULL: a device that accepts
 * everything); a bad setting or rule fails naming it and listing the
 * valid ones. */
nc_status ane_fake_behaviour_parse(const char *text, ane_fake_behaviour *out, nc_error *err);

/* The rules and settings, one per line, for `--ane-device help`. */
void ane_fake_behaviour_help(FILE *f);

/* NC_OK when prog breaks none of the `reject` rules; else NC_ERR_UNSUPPORTED
 * with the framework's error shape naming the rule, the function and the
 * construct. */
nc_status ane_fake_check_program(const mil_program *prog, unsigned reject, nc_error *err);

#endif
