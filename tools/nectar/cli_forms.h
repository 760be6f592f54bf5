/* The lowering forms a probe profile suggests (src/bundle/forms_profile.h):
 * `nectar compile --ane-profile FILE` and `nectar ane doctor` compile each
 * form the device refused in the next one no device refused, keeping what
 * the command line names. */
#ifndef NECTAR_CLI_FORMS_H
#define NECTAR_CLI_FORMS_H

#include "bundle/forms_profile.h"

/* given[k] = 1 when argv names form key k's option (--kv-update X or
 * --kv-update=X). */
void cli_forms_given(int argc, char **argv, int given[LOWER_N_FORM_KEYS]);

/* Replaces the forms of *a that are not given (given NULL: none is) by
 * what profile (a file that must exist) suggests for device (its key in
 * the profile: "real", "fake:reject=..."), and says so on stderr.
 * *changed = the number of forms replaced. */
nc_status cli_forms_from_profile(const char *profile, const char *device,
                                 const int given[LOWER_N_FORM_KEYS], lower_all_forms *a,
                                 int *changed, nc_error *err);

#endif
