/* The ANE rules as a table: one row per rule (id, severity, what it
 * forbids, the check, the suggested rewrite, where the fact comes from).
 * Errors are what the ANE compiler rejects or runs wrongly; warnings are ops
 * reported to fail on some chips, each with its rewrite. The facts and
 * the rules as implemented are in docs/ane-rules.md (sources:
 * docs/references.md). */
#ifndef NC_MIL_ANE_RULES_H
#define NC_MIL_ANE_RULES_H

#include "mil/ane_profile.h"
#include "mil/check.h"

struct mil_ane_rule;

typedef struct mil_ane_ctx {
    const mil_program *prog;
    const mil_function *fn;
    const struct mil_ane_rule *rule;
    mil_diagnostics *diags;
    const mil_ane_profile *profile; /* the chip's probe profile, or NULL */
} mil_ane_ctx;

typedef void (*mil_ane_check_fn)(mil_ane_ctx *c);

typedef struct mil_ane_rule {
    const char *id;          /* "ane-fp16-compute" */
    mil_severity severity;   /* ERROR: rejected or wrong; WARNING: chip-dependent */
    const char *description; /* one line, for docs and `--list` */
    mil_ane_check_fn check;  /* walks the function, reports through mil_ane_report */
    const char *suggestion;  /* the rewrite, appended to each report; NULL if none */
    const char *source;      /* the observation the rule rests on */
} mil_ane_rule;

const mil_ane_rule *mil_ane_rules(int *n);

/* Runs every rule not listed in skip (comma-separated ids) over fn; the
 * profile (may be NULL) settles the rules whose answer depends on the chip. */
void mil_ane_check_function(const mil_program *prog, const mil_function *fn, const char *skip,
                            const mil_ane_profile *profile, mil_diagnostics *diags);

/* 1 when fn has ops and none of them is a conv, matmul, linear or einsum
 * (reported refused at load or left on the CPU: ane-elementwise-only). */
int mil_function_is_elementwise_only(const mil_function *fn);
/* Reports a problem of the current rule at `line`. */
void mil_ane_report(mil_ane_ctx *c, int line, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The same with another severity than the rule's (a chip profile's verdict). */
void mil_ane_report_sev(mil_ane_ctx *c, mil_severity sev, int line, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif
