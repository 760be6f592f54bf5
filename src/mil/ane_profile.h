/* A chip's probe profile: what `nectar ane probe` found on one Neural
 * Engine (docs/ane-first-run.md), read back from the probe's JSON. The
 * checker consults it for the questions the reports disagree on (uint16 /
 * int16 gather indices, softmax over non-power-of-two lengths, silu,
 * elementwise-only programs); the ANE device for the surface policy and the
 * async mode (src/ane_host). A chip profile shipped with nectar would be a
 * file in the same format. */
#ifndef NC_MIL_ANE_PROFILE_H
#define NC_MIL_ANE_PROFILE_H

#include <stddef.h>

#include "base/error.h"

#define MIL_PROFILE_MAX_CASES 64

typedef enum mil_probe_verdict {
    MIL_PROBE_UNKNOWN = 0, /* not in the profile, or not run (rejected on the fake device) */
    MIL_PROBE_OK,          /* compiled, loaded, evaluated and matched the interpreter */
    MIL_PROBE_FAILED       /* any of those failed or the result was wrong */
} mil_probe_verdict;

typedef struct mil_ane_profile {
    char device[16], chip[128], os[128];
    int n;
    struct {
        char id[40];
        mil_probe_verdict verdict;
        double eval_us;
    } cases[MIL_PROFILE_MAX_CASES];
} mil_ane_profile;

/* Parses the probe's JSON (text of len bytes; `what` names it in errors). */
nc_status mil_ane_profile_parse(const char *text, size_t len, const char *what,
                                mil_ane_profile *out, nc_error *err);
nc_status mil_ane_profile_read(const char *path, mil_ane_profile *out, nc_error *err);

/* The verdict of probe case `id`; UNKNOWN for a NULL profile. */
mil_probe_verdict mil_ane_profile_verdict(const mil_ane_profile *p, const char *id);
/* Its time per request in microseconds, or 0. */
double mil_ane_profile_eval_us(const mil_ane_profile *p, const char *id);

#endif
