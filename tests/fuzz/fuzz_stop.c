/* Fuzz target: stop strings come from API requests (untrusted). Input
 * layout: up to three NUL-terminated stop strings, then a byte n and the
 * text, pushed in pieces of (n % 7) + 1 bytes. Whatever the bytes, the
 * output must equal the whole text cut where the first stop string to
 * complete begins (no crash, no leak, no read past a piece). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gen/stop.h"

static size_t expected_cut(const char *t, size_t len, char *const *stops, int n) {
    for (size_t end = 1; end <= len; end++) {
        size_t cut = len;
        for (int i = 0; i < n; i++) {
            size_t m = strlen(stops[i]);
            if (m <= end && !memcmp(t + end - m, stops[i], m) && end - m < cut) cut = end - m;
        }
        if (cut < len) return cut;
    }
    return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *stops[3] = {0};
    int n_stops = 0;
    size_t pos = 0;
    while (n_stops < 3 && pos < size) {
        const uint8_t *nul = memchr(data + pos, 0, size - pos);
        if (!nul || nul == data + pos) break;
        stops[n_stops] = strndup((const char *)data + pos, (size_t)(nul - data) - pos);
        pos = (size_t)(nul - data) + 1;
        if (!stops[n_stops]) break;
        n_stops++;
    }
    size_t step = pos < size ? (size_t)(data[pos++] % 7) + 1 : 1;
    const char *text = (const char *)data + pos;
    size_t len = size - pos;
    gen_stop s;
    nc_error err;
    if (gen_stop_init(&s, (const char *const *)stops, n_stops, &err) == NC_OK) {
        char *got = malloc(len + 1);
        size_t n_got = 0, at = 0;
        int matched = 0;
        while (got && at < len && !matched) {
            size_t k = step < len - at ? step : len - at;
            char *piece = malloc(k); /* its own allocation: ASan sees any overread */
            if (!piece) break;
            memcpy(piece, text + at, k);
            const char *out;
            size_t out_len;
            int r = gen_stop_push(&s, piece, k, &out, &out_len, &err);
            if (out_len) memcpy(got + n_got, out, out_len);
            n_got += out_len;
            free(piece);
            if (r < 0) break;
            matched = r == 1;
            at += k;
        }
        if (got && !matched) {
            const char *out;
            size_t out_len;
            gen_stop_flush(&s, &out, &out_len);
            if (out_len) memcpy(got + n_got, out, out_len);
            n_got += out_len;
        }
        if (got && (matched || at >= len)) {
            size_t cut = expected_cut(text, len, stops, n_stops);
            if (n_got != cut || memcmp(got, text, cut)) abort();
        }
        free(got);
        gen_stop_free(&s);
    }
    for (int i = 0; i < n_stops; i++)
        free(stops[i]);
    return 0;
}
