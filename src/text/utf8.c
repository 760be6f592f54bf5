/* UTF-8 validity and lossy repair (see utf8.h). */
#include "text/utf8.h"

#include <string.h>

tok_utf8_kind tok_utf8_scan(const unsigned char *s, size_t n, size_t *adv) {
    unsigned c = s[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c < 0x80) {
        *adv = 1;
        return TOK_UTF8_VALID;
    } else if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlongs */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90; /* no overlongs */
        else if (c == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        *adv = 1; /* a continuation byte or C0, C1, F5..FF */
        return TOK_UTF8_INVALID;
    }
    for (size_t i = 1; i < need; i++) {
        if (i >= n) {
            *adv = n;
            return TOK_UTF8_INCOMPLETE;
        }
        unsigned b = s[i];
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            *adv = i;
            return TOK_UTF8_INVALID;
        }
    }
    *adv = need;
    return TOK_UTF8_VALID;
}

size_t tok_utf8_valid_prefix(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) { /* ASCII runs are the common case */
            i++;
            continue;
        }
        size_t adv;
        if (tok_utf8_scan(s + i, n - i, &adv) != TOK_UTF8_VALID) return i;
        i += adv;
    }
    return n;
}

size_t tok_utf8_decode(const unsigned char *s, uint32_t *cp) {
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c < 0xE0) {
        *cp = ((c & 0x1Fu) << 6) | (s[1] & 0x3Fu);
        return 2;
    }
    if (c < 0xF0) {
        *cp = ((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        return 3;
    }
    *cp = ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
    return 4;
}

size_t tok_utf8_encode(uint32_t cp, unsigned char *out) {
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t tok_utf8_lossy(const unsigned char *s, size_t n, unsigned char *out) {
    static const unsigned char fffd[3] = {0xEF, 0xBF, 0xBD};
    size_t i = 0, o = 0;
    while (i < n) {
        size_t adv;
        if (tok_utf8_scan(s + i, n - i, &adv) == TOK_UTF8_VALID) {
            memcpy(out + o, s + i, adv);
            o += adv;
        } else {
            memcpy(out + o, fffd, 3);
            o += 3;
        }
        i += adv;
    }
    return o;
}
