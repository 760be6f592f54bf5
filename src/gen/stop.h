/* Stop strings over streamed text. Text that could still be the start of a
 * stop string is held back; it is released as soon as the match fails, and
 * when a stop string completes, generation ends with everything before it
 * emitted and the stop string itself (and anything after it) dropped. With
 * several stop strings the first to complete wins. Input
 * is expected to be whole UTF-8 characters (the streaming detokenizer holds
 * back partial ones), so what is released is whole characters too. */
#ifndef NC_GEN_STOP_H
#define NC_GEN_STOP_H

#include <stddef.h>

#include "base/error.h"

typedef struct gen_stop {
    char **stops; /* owned copies */
    size_t *lens;
    int n_stops;
    char *buf; /* held text, then the newly released text before it */
    size_t len, cap;
    size_t n_out; /* bytes at the front of buf handed out by the last call */
    int is_matched;
} gen_stop;

/* Copies the stop strings; an empty one is an error. n may be 0. */
nc_status gen_stop_init(gen_stop *s, const char *const *stops, int n, nc_error *err);
void gen_stop_free(gen_stop *s);
/* Forgets held text and a previous match (same stop strings). */
void gen_stop_reset(gen_stop *s);

/* Feeds a piece of text. *out / *out_len receive the text that can be
 * emitted now (valid until the next call). Returns 1 when a stop string has
 * matched (then *out is the text before it and later pushes emit nothing),
 * 0 otherwise, or -1 when out of memory (err filled). */
int gen_stop_push(gen_stop *s, const char *piece, size_t len, const char **out, size_t *out_len,
                  nc_error *err);

/* The end of generation without a match: releases the held-back text. */
void gen_stop_flush(gen_stop *s, const char **out, size_t *out_len);

#endif
