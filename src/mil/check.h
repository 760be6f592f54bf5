/* The MIL checker: finds every problem in a parsed program and reports each
 * with its source line. Generic checks come from the op table (argument
 * names, required and constant arguments, dtypes per opset, inferred output
 * types against the declared ones, weight blobs); with target_ane the ANE
 * rules of ane_rules.h are added (errors for what the ANE rejects, warnings
 * for chip-dependent ops). Used by `nectar mil check`, the bundler and the
 * lowering (which checks every program it emits). */
#ifndef NC_MIL_CHECK_H
#define NC_MIL_CHECK_H

#include <stdio.h>

#include "mil/ir.h"

typedef enum mil_severity { MIL_SEV_ERROR, MIL_SEV_WARNING } mil_severity;

typedef struct mil_diag {
    mil_severity severity;
    const char *rule;   /* "type", "arg", "blob", or an ANE rule id ("ane-fp16-compute") */
    const char *source; /* file name (the program's source), or NULL */
    int line;           /* 1-based; 0 when the program was built, not parsed */
    char msg[480];      /* one line: what is wrong, where, and (warnings) the rewrite */
} mil_diag;

typedef struct mil_diagnostics {
    int n, cap;
    mil_diag *items;
    int n_errors, n_warnings;
} mil_diagnostics;

typedef struct mil_check_options {
    int target_ane;         /* add the ANE rules */
    const char *function;   /* check only this function; NULL = all */
    const char *skip_rules; /* comma-separated rule ids to leave out, or NULL */
} mil_check_options;

/* Appends every problem of prog to diags (which starts zeroed or is reused
 * after mil_diagnostics_free). Returns NC_OK even when problems are found:
 * they are in diags; a failure status means the checker itself could not
 * run (out of memory, unknown function). */
nc_status mil_check_program(const mil_program *prog, const mil_check_options *opt,
                            mil_diagnostics *diags, nc_error *err);
/* The same, the ANE rules settled by a chip's probe profile (ane_profile.h;
 * NULL: none): what the probe found failing is an error, what it found
 * working is not reported. */
struct mil_ane_profile;
nc_status mil_check_program_profile(const mil_program *prog, const mil_check_options *opt,
                                    const struct mil_ane_profile *profile, mil_diagnostics *diags,
                                    nc_error *err);

/* For code that emits programs (the lowering, the bundler): NC_OK when the
 * program has no error (warnings allowed), else NC_ERR_FORMAT with "N
 * errors; first: file:line: message [rule]". */
nc_status mil_check_strict(const mil_program *prog, int target_ane, nc_error *err);

/* Records one problem (printf-style message). */
void mil_diag_add(mil_diagnostics *d, mil_severity sev, const char *rule, const char *source,
                  int line, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

/* Prints "file:line: error: message [rule]" lines, in source order. */
void mil_diagnostics_print(const mil_diagnostics *d, FILE *f);
void mil_diagnostics_free(mil_diagnostics *d);

/* 1 when rule id `rule` appears in the comma-separated list. */
int mil_check_rule_listed(const char *list, const char *rule);

#endif
