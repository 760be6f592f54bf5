/* Added-token matching (see added.h). Candidates are found through the
 * first byte, so plain text costs one table lookup per byte; at a candidate
 * position the longest token that matches wins. Like HF, a match rejected
 * by single_word is skipped whole (scanning resumes after it), and lstrip /
 * rstrip swallow Unicode whitespace next to the token. */
#include "text/added.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/utf8.h"

static int by_first_byte_then_longest(const void *a, const void *b) {
    const tok_added *x = *(const tok_added *const *)a, *y = *(const tok_added *const *)b;
    unsigned char fx = (unsigned char)x->content[0], fy = (unsigned char)y->content[0];
    if (fx != fy) return fx < fy ? -1 : 1;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

nc_status tok_added_set_build(tok_added_set *s, const tok_added *tokens, size_t n, int normalized,
                              nc_error *err) {
    memset(s, 0, sizeof *s);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += tokens[i].normalized == normalized && tokens[i].len > 0;
    s->items = calloc(m ? m : 1, sizeof *s->items);
    if (!s->items) return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (added tokens)");
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (tokens[i].normalized == normalized && tokens[i].len > 0) s->items[m++] = &tokens[i];
    qsort(s->items, m, sizeof *s->items, by_first_byte_then_longest);
    size_t k = 0;
    for (unsigned b = 0; b <= 256; b++) {
        while (k < m && (unsigned char)s->items[k]->content[0] < b)
            k++;
        s->start[b] = (uint32_t)k;
    }
    return NC_OK;
}

void tok_added_set_free(tok_added_set *s) {
    free(s->items);
    s->items = NULL;
}

/* Rust's char::is_whitespace (the Unicode White_Space property). */
static int is_unicode_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* Letters, numbers and '_' (Rust's is_alphanumeric, approximated by the
 * general categories L* and N*). */
static int is_word_char(uint32_t c) {
    if (c == '_') return 1;
    utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)c);
    return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
           (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

/* Start of the character that ends at s[end] (exclusive). */
static size_t char_start_before(const unsigned char *s, size_t end) {
    size_t i = end - 1;
    while (i > 0 && (s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

static uint32_t char_at(const unsigned char *s, size_t i) {
    uint32_t c;
    tok_utf8_decode(s + i, &c);
    return c;
}

static const tok_added *longest_at(const tok_added_set *s, const char *text, size_t len,
                                   size_t at) {
    unsigned char b = (unsigned char)text[at];
    for (uint32_t k = s->start[b]; k < s->start[b + 1]; k++) {
        const tok_added *a = s->items[k];
        if (a->len <= len - at && memcmp(text + at, a->content, a->len) == 0) return a;
    }
    return NULL;
}

nc_status tok_added_split(const tok_added_set *s, const char *text, size_t len, tok_segment_fn fn,
                          void *ctx, nc_error *err) {
    const unsigned char *u = (const unsigned char *)text;
    size_t done = 0; /* text before this has been handed out */
    size_t at = 0;
    while (at < len) {
        if (s->start[u[at]] == s->start[u[at] + 1]) {
            at++;
            continue;
        }
        const tok_added *a = longest_at(s, text, len, at);
        if (!a) {
            at++;
            continue;
        }
        size_t start = at, stop = at + a->len;
        if (a->single_word) {
            int word_before = start > 0 && is_word_char(char_at(u, char_start_before(u, start)));
            int word_after = stop < len && is_word_char(char_at(u, stop));
            if (word_before || word_after) {
                at = stop;
                continue;
            }
        }
        if (a->lstrip) {
            while (start > done) {
                size_t c = char_start_before(u, start);
                if (!is_unicode_space(char_at(u, c))) break;
                start = c;
            }
        }
        if (a->rstrip) {
            while (stop < len) {
                size_t adv;
                tok_utf8_scan(u + stop, len - stop, &adv);
                if (!is_unicode_space(char_at(u, stop))) break;
                stop += adv;
            }
        }
        if (start > done) NC_TRY(fn(ctx, -1, text + done, start - done, err));
        NC_TRY(fn(ctx, a->id, text + start, stop - start, err));
        done = at = stop;
    }
    if (done < len) NC_TRY(fn(ctx, -1, text + done, len - done, err));
    return NC_OK;
}
