/* Where the markers are and which type each token has, derived from the
 * token ids the way tools/decision_ref.py does (docs/decision.md). */
#include "decide/decision.h"

nc_status decision_find_markers(const decision_config *c, const int32_t *ids, const int32_t *mask,
                                int n, int32_t *markers, nc_error *err) {
    int seen = 0; /* occurrences of the one repeated id so far */
    for (int k = 0; k < c->num_markers; k++)
        markers[k] = -1;
    for (int t = 0; t < n; t++) {
        if (mask && !mask[t]) continue;
        if (c->n_marker_ids == 1) {
            if (ids[t] == c->marker_token_ids[0] && seen < c->num_markers) markers[seen++] = t;
            continue;
        }
        for (int k = 0; k < c->num_markers; k++)
            if (ids[t] == c->marker_token_ids[k] && markers[k] < 0) markers[k] = t;
    }
    for (int k = 0; k < c->num_markers; k++)
        if (markers[k] < 0)
            return nc_fail(err, NC_ERR_INVALID, "marker %d (token id %d) is not in the input", k + 1,
                           c->marker_token_ids[c->n_marker_ids == 1 ? 0 : k]);
    return NC_OK;
}

void decision_type_ids(const decision_config *c, const int32_t *markers, const int32_t *mask, int n,
                       int32_t *types) {
    for (int t = 0; t < n; t++) {
        int count = 0;
        for (int k = 0; k < c->num_markers; k++)
            count += markers[k] <= t;
        types[t] = mask && !mask[t] ? 0 : count;
    }
}
