/* Lowering forms from a probe profile (cli_forms.h). */
#include "cli_forms.h"

#include <stdio.h>
#include <string.h>

#include "ane_host/ane_ladder.h"
#include "base/mmap.h"

void cli_forms_given(int argc, char **argv, int given[LOWER_N_FORM_KEYS]) {
    for (int k = 0; k < LOWER_N_FORM_KEYS; k++) {
        const char *opt = lower_form_option((lower_form_key)k);
        size_t n = strlen(opt);
        given[k] = 0;
        for (int i = 1; i < argc; i++)
            if (!strncmp(argv[i], opt, n) && (!argv[i][n] || argv[i][n] == '=')) given[k] = 1;
    }
}

nc_status cli_forms_from_profile(const char *profile, const char *device,
                                 const int given[LOWER_N_FORM_KEYS], lower_all_forms *a,
                                 int *changed, nc_error *err) {
    *changed = 0;
    if (!nc_file_exists(profile))
        return nc_fail(err, NC_ERR_NOT_FOUND, "--ane-profile %s: no such file", profile);
    ane_ladder l;
    NC_TRY(ane_ladder_open(&l, profile, device, err));
    lower_all_forms next;
    char why[2048], options[512];
    int n = ane_ladder_recommend(&l, a, &next, why, sizeof why, options, sizeof options);
    ane_ladder_close(&l);
    if (!n) {
        fprintf(stderr, "forms: the probe profile %s records no refused form of these for device "
                        "%s\n",
                profile, device);
        return NC_OK;
    }
    for (int k = 0; k < LOWER_N_FORM_KEYS; k++) {
        char now[32], to[32];
        lower_form_value(a, (lower_form_key)k, now, sizeof now);
        lower_form_value(&next, (lower_form_key)k, to, sizeof to);
        if (!strcmp(now, to)) continue;
        if (given && given[k]) {
            fprintf(stderr, "forms: %s %s kept as given (the profile suggests %s)\n",
                    lower_form_option((lower_form_key)k), now, to);
            continue;
        }
        lower_form_set(a, (lower_form_key)k, to);
        (*changed)++;
    }
    fprintf(stderr, "forms from the probe profile %s (device %s): %s\n", profile, device, why);
    return NC_OK;
}
