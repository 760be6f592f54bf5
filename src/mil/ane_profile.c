/* Reading a probe profile (ane_profile.h). Every key read is checked and
 * named in errors; unknown keys are ignored, so newer probes stay readable. */
#include "mil/ane_profile.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mmap.h"

static void copy_str(const json_t *o, const char *key, char *dst, size_t cap) {
    const char *s = json_string_value(json_object_get(o, key));
    snprintf(dst, cap, "%s", s ? s : "");
}

nc_status mil_ane_profile_parse(const char *text, size_t len, const char *what,
                                mil_ane_profile *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    json_t *root = NULL;
    NC_TRY(nc_json_parse(text, len, what, &root, err));
    nc_status st = NC_OK;
    const json_t *cases = json_object_get(root, "cases");
    if (!json_is_object(root) || !json_is_array(cases))
        st = nc_fail(err, NC_ERR_FORMAT, "%s: not a probe profile (no \"cases\" array)", what);
    if (!st) {
        copy_str(root, "device", out->device, sizeof out->device);
        copy_str(root, "chip", out->chip, sizeof out->chip);
        copy_str(root, "os", out->os, sizeof out->os);
    }
    for (size_t i = 0; !st && i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *status = json_string_value(json_object_get(c, "status"));
        if (!id || !status || strlen(id) >= sizeof out->cases[0].id) {
            st = nc_fail(err, NC_ERR_FORMAT, "%s: case %zu has no \"id\" or \"status\"", what, i);
            break;
        }
        if (out->n == MIL_PROFILE_MAX_CASES) {
            st = nc_fail(err, NC_ERR_FORMAT, "%s: more than %d cases", what, MIL_PROFILE_MAX_CASES);
            break;
        }
        snprintf(out->cases[out->n].id, sizeof out->cases[0].id, "%s", id);
        /* "rejected": the fake device did not run it, so nothing is known */
        out->cases[out->n].verdict = !strcmp(status, "ok")         ? MIL_PROBE_OK
                                     : !strcmp(status, "rejected") ? MIL_PROBE_UNKNOWN
                                                                   : MIL_PROBE_FAILED;
        out->cases[out->n].eval_us = json_number_value(json_object_get(c, "eval_us"));
        out->n++;
    }
    json_decref(root);
    return st;
}

nc_status mil_ane_profile_read(const char *path, mil_ane_profile *out, nc_error *err) {
    char *text = NULL;
    size_t n = 0;
    NC_TRY(nc_read_file(path, &text, &n, err));
    nc_status st = mil_ane_profile_parse(text, n, path, out, err);
    free(text);
    return st;
}

static int find(const mil_ane_profile *p, const char *id) {
    for (int i = 0; p && i < p->n; i++)
        if (!strcmp(p->cases[i].id, id)) return i;
    return -1;
}

mil_probe_verdict mil_ane_profile_verdict(const mil_ane_profile *p, const char *id) {
    int i = find(p, id);
    return i < 0 ? MIL_PROBE_UNKNOWN : p->cases[i].verdict;
}

double mil_ane_profile_eval_us(const mil_ane_profile *p, const char *id) {
    int i = find(p, id);
    return i < 0 ? 0 : p->cases[i].eval_us;
}
