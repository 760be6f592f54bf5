/* Stop-string matching with hold-back. After each piece the buffer holds
 * at most the longest suffix that is a proper prefix of some stop string:
 * every byte before that suffix can start no match any more, so it is
 * released. Matching is on bytes; with whole UTF-8 characters on both sides
 * a byte match is a character match. */
#include "gen/stop.h"

#include <stdlib.h>
#include <string.h>

void gen_stop_free(gen_stop *s) {
    for (int i = 0; i < s->n_stops; i++)
        free(s->stops[i]);
    free(s->stops);
    free(s->lens);
    free(s->buf);
    memset(s, 0, sizeof *s);
}

nc_status gen_stop_init(gen_stop *s, const char *const *stops, int n, nc_error *err) {
    memset(s, 0, sizeof *s);
    if (n < 0) return nc_fail(err, NC_ERR_INVALID, "stop strings: negative count");
    if (n == 0) return NC_OK;
    s->stops = calloc((size_t)n, sizeof *s->stops);
    s->lens = calloc((size_t)n, sizeof *s->lens);
    if (!s->stops || !s->lens) {
        gen_stop_free(s);
        return nc_fail(err, NC_ERR_NOMEM, "stop strings: out of memory");
    }
    for (int i = 0; i < n; i++) {
        size_t len = stops[i] ? strlen(stops[i]) : 0;
        if (len == 0) {
            gen_stop_free(s);
            return nc_fail(err, NC_ERR_INVALID, "stop string %d is empty", i + 1);
        }
        s->stops[i] = malloc(len + 1);
        if (!s->stops[i]) {
            gen_stop_free(s);
            return nc_fail(err, NC_ERR_NOMEM, "stop strings: out of memory");
        }
        memcpy(s->stops[i], stops[i], len + 1);
        s->lens[i] = len;
        s->n_stops = i + 1;
    }
    return NC_OK;
}

void gen_stop_reset(gen_stop *s) {
    s->len = 0;
    s->n_out = 0;
    s->is_matched = 0;
}

/* Where the text is cut: the start of the complete occurrence that ends
 * first (ties: the one starting first), as a matcher fed one byte at a time
 * would see it, so the result does not depend on how text is split into
 * pieces. len when there is none. */
static size_t first_match_start(const gen_stop *s) {
    size_t best_end = (size_t)-1, best_start = s->len;
    for (int i = 0; i < s->n_stops; i++) {
        size_t m = s->lens[i];
        for (size_t at = 0; at + m <= s->len && at + m <= best_end; at++)
            if (s->buf[at] == s->stops[i][0] && !memcmp(s->buf + at, s->stops[i], m)) {
                if (at + m < best_end || at < best_start) {
                    best_end = at + m;
                    best_start = at;
                }
                break;
            }
    }
    return best_start;
}

/* Length of the longest suffix of buf that is a proper prefix of a stop string. */
static size_t held_suffix(const gen_stop *s) {
    size_t held = 0;
    for (int i = 0; i < s->n_stops; i++) {
        size_t m = s->lens[i] - 1;
        if (m > s->len) m = s->len;
        for (size_t k = m; k > held; k--)
            if (!memcmp(s->buf + s->len - k, s->stops[i], k)) {
                held = k;
                break;
            }
    }
    return held;
}

int gen_stop_push(gen_stop *s, const char *piece, size_t len, const char **out, size_t *out_len,
                  nc_error *err) {
    *out = s->buf;
    *out_len = 0;
    if (s->is_matched) return 1;
    if (s->n_stops == 0) { /* nothing to hold: pass the piece through */
        *out = piece;
        *out_len = len;
        return 0;
    }
    /* drop what the previous call handed out */
    if (s->n_out) memmove(s->buf, s->buf + s->n_out, s->len - s->n_out);
    s->len -= s->n_out;
    s->n_out = 0;
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < s->len + len)
            cap *= 2;
        char *nb = realloc(s->buf, cap);
        if (!nb) {
            nc_fail(err, NC_ERR_NOMEM, "stop strings: out of memory");
            return -1;
        }
        s->buf = nb;
        s->cap = cap;
    }
    if (len) memcpy(s->buf + s->len, piece, len);
    s->len += len;
    size_t at = first_match_start(s);
    *out = s->buf;
    if (at < s->len) {
        s->is_matched = 1;
        *out_len = at;
        s->n_out = s->len; /* nothing more is ever released */
        return 1;
    }
    *out_len = s->len - held_suffix(s);
    s->n_out = *out_len;
    return 0;
}

void gen_stop_flush(gen_stop *s, const char **out, size_t *out_len) {
    *out = s->buf;
    *out_len = 0;
    /* n_out == len also covers nothing pushed yet (buf NULL: no offset on it) */
    if (s->is_matched || s->n_stops == 0 || s->n_out == s->len) return;
    *out = s->buf + s->n_out;
    *out_len = s->len - s->n_out;
    s->n_out = s->len;
}
