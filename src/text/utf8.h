/* UTF-8 scanning shared by the tokenizer, the decoder and the streaming
 * detokenizer. Validity follows Unicode Table 3-7 (no overlongs, no
 * surrogates, nothing above U+10FFFF); invalid input is replaced the way
 * Rust's String::from_utf8_lossy (used by HF decode) and Python's
 * errors="replace" do: one U+FFFD per maximal invalid subpart. */
#ifndef NC_TEXT_UTF8_H
#define NC_TEXT_UTF8_H

#include <stddef.h>
#include <stdint.h>

typedef enum tok_utf8_kind {
    TOK_UTF8_VALID,      /* a whole character of *adv bytes */
    TOK_UTF8_INCOMPLETE, /* all n bytes are the valid start of a longer character */
    TOK_UTF8_INVALID     /* *adv bytes (>= 1) form one maximal invalid subpart */
} tok_utf8_kind;

/* Classifies the bytes at s[0..n) (n >= 1). */
tok_utf8_kind tok_utf8_scan(const unsigned char *s, size_t n, size_t *adv);

/* Offset of the first byte that is not part of valid UTF-8 (n when all of
 * it is valid; a truncated final character counts as invalid). */
size_t tok_utf8_valid_prefix(const unsigned char *s, size_t n);

/* Decodes one valid character (as checked by tok_utf8_scan); returns its length. */
size_t tok_utf8_decode(const unsigned char *s, uint32_t *cp);

/* Encodes cp into out (>= 4 bytes); returns the length. */
size_t tok_utf8_encode(uint32_t cp, unsigned char *out);

/* Copies s[0..n) into out with every invalid subpart (including a truncated
 * final character) replaced by U+FFFD; out must hold 3 * n bytes. Returns
 * the number of bytes written. */
size_t tok_utf8_lossy(const unsigned char *s, size_t n, unsigned char *out);

#endif
