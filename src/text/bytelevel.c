/* The byte-level alphabet (see bytelevel.h). The table is computed, not
 * written out, from the rule GPT-2's bytes_to_unicode() states. */
#include "text/bytelevel.h"

#include <pthread.h>
#include <string.h>

#include "text/utf8.h"

static int is_printable_byte(unsigned b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t tok_byte_to_cp(unsigned char b) {
    if (is_printable_byte(b)) return b;
    /* The non-printable bytes, in increasing order, take 256, 257, ... */
    uint32_t rank = 0;
    for (unsigned x = 0; x < b; x++)
        rank += !is_printable_byte(x);
    return 256 + rank;
}

int tok_cp_to_byte(uint32_t cp) {
    if (cp < 256) return is_printable_byte(cp) ? (int)cp : -1;
    if (cp >= 256 + 68) return -1;
    uint32_t rank = cp - 256;
    for (unsigned x = 0; x < 256; x++)
        if (!is_printable_byte(x) && rank-- == 0) return (int)x;
    return -1;
}

/* Both directions as lookup tables, built once per process. */
static unsigned char spell_len[256], spell_utf8[256][2];
static short cp_byte[324];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void fill_tables(void) {
    for (unsigned cp = 0; cp < 324; cp++)
        cp_byte[cp] = (short)tok_cp_to_byte(cp);
    for (unsigned b = 0; b < 256; b++) {
        unsigned char buf[4];
        spell_len[b] = (unsigned char)tok_utf8_encode(tok_byte_to_cp((unsigned char)b), buf);
        memcpy(spell_utf8[b], buf, 2);
    }
}

static void build_tables(void) {
    pthread_once(&tables_once, fill_tables);
}

size_t tok_bytes_to_spelling(const unsigned char *s, size_t n, unsigned char *out) {
    build_tables();
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = s[i];
        out[o] = spell_utf8[b][0];
        if (spell_len[b] == 2) out[o + 1] = spell_utf8[b][1];
        o += spell_len[b];
    }
    return o;
}

size_t tok_spelling_to_bytes(const unsigned char *s, size_t n, unsigned char *out) {
    build_tables();
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        i += tok_utf8_decode(s + i, &cp);
        if (cp >= 324 || cp_byte[cp] < 0) { /* not a byte-level spelling: keep as is */
            memcpy(out, s, n);
            return n;
        }
        out[o++] = (unsigned char)cp_byte[cp];
    }
    return o;
}
