/* Streaming detokenizer (see detok.h). Bytes go through the same UTF-8
 * scanner as tok_decode's lossy repair; the only difference is that an
 * incomplete character at the end is held back (at most 3 bytes) instead of
 * replaced, because the next token may complete it. */
#include "text/detok.h"

#include <string.h>

#include "text/utf8.h"

void tok_stream_init(tok_stream *s, const tok_tokenizer *t) {
    memset(s, 0, sizeof *s);
    s->t = t;
}

size_t tok_stream_cap(const tok_tokenizer *t) {
    return 3 * (tok_max_token_bytes(t) + 3) + 1;
}

/* Appends the repaired text of s[0..n) to out, stopping (at a character
 * boundary) when it would not fit; returns the bytes consumed from s. With
 * hold_back, an incomplete final character is left unconsumed. */
static size_t emit(const unsigned char *s, size_t n, int hold_back, char *out, size_t cap,
                   size_t *o) {
    static const char fffd[3] = {'\xEF', '\xBF', '\xBD'};
    size_t i = 0;
    while (i < n) {
        size_t adv;
        tok_utf8_kind k = tok_utf8_scan(s + i, n - i, &adv);
        if (k == TOK_UTF8_INCOMPLETE && hold_back) break;
        size_t w = k == TOK_UTF8_VALID ? adv : 3;
        if (*o + w + 1 > cap) break; /* caller's buffer is too small: cut here */
        memcpy(out + *o, k == TOK_UTF8_VALID ? (const char *)s + i : fffd, w);
        *o += w;
        i += adv;
    }
    return i;
}

size_t tok_stream_push(tok_stream *s, int32_t id, char *out, size_t cap) {
    size_t o = 0, len;
    const unsigned char *b = (const unsigned char *)tok_token_bytes(s->t, id, &len);
    if (cap == 0) return 0;
    if (!b) { /* an invalid id adds nothing */
        b = (const unsigned char *)"";
        len = 0;
    }
    /* Complete (or reject) the held character first, with at most 3 new bytes. */
    size_t used = 0;
    while (s->n_pending > 0) {
        unsigned char tmp[8];
        size_t take = len - used < 3 ? len - used : 3;
        memcpy(tmp, s->pending, s->n_pending);
        memcpy(tmp + s->n_pending, b + used, take);
        size_t n = s->n_pending + take, adv;
        tok_utf8_kind k = tok_utf8_scan(tmp, n, &adv);
        if (k == TOK_UTF8_INCOMPLETE) { /* still incomplete: hold all of it */
            memcpy(s->pending + s->n_pending, b + used, take);
            s->n_pending += take;
            used += take;
            break;
        }
        size_t before = o;
        emit(tmp, adv, 0, out, cap, &o);
        if (o == before) break; /* no room */
        /* adv bytes of tmp are done: first the pending ones, then new ones. */
        if (adv >= s->n_pending) {
            used += adv - s->n_pending;
            s->n_pending = 0;
        } else {
            memmove(s->pending, s->pending + adv, s->n_pending - adv);
            s->n_pending -= adv;
        }
    }
    if (s->n_pending == 0 && used < len) {
        used += emit(b + used, len - used, 1, out, cap, &o);
        size_t rest = len - used; /* an incomplete final character (< 4 bytes) */
        if (rest < sizeof s->pending) {
            memcpy(s->pending, b + used, rest);
            s->n_pending = rest;
        }
    }
    out[o] = '\0';
    return o;
}

size_t tok_stream_flush(tok_stream *s, char *out, size_t cap) {
    size_t o = 0;
    if (cap == 0) return 0;
    emit(s->pending, s->n_pending, 0, out, cap, &o);
    s->n_pending = 0;
    out[o] = '\0';
    return o;
}
