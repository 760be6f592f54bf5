/* Streaming detokenizer: turns ids into text one token at a time for
 * printing while generating. It holds back the bytes of a UTF-8 character
 * split across tokens, so what it emits is always valid UTF-8, and the
 * concatenation of everything it emits equals tok_decode of the same ids
 * (invalid bytes become U+FFFD as HF does). */
#ifndef NC_TEXT_DETOK_H
#define NC_TEXT_DETOK_H

#include <stddef.h>
#include <stdint.h>

#include "text/tokenizer.h"

typedef struct tok_stream {
    const tok_tokenizer *t;
    unsigned char pending[4]; /* the start of an incomplete UTF-8 character */
    size_t n_pending;
} tok_stream;

void tok_stream_init(tok_stream *s, const tok_tokenizer *t);

/* A buffer of this many bytes always holds the output of one push or flush:
 * every held or token byte may turn into a 3-byte U+FFFD, plus the NUL.
 * (Qwen3: longest token 128 bytes -> 406.) */
size_t tok_stream_cap(const tok_tokenizer *t);

/* Appends the token's bytes; writes the text that is now complete UTF-8
 * into out (NUL-terminated) and returns its length. An invalid id adds
 * nothing. With cap < tok_stream_cap(t) the output may be cut short (at a
 * character boundary); 512 bytes suffice for Qwen3. */
size_t tok_stream_push(tok_stream *s, int32_t id, char *out, size_t cap);

/* Whatever is left (an incomplete character becomes U+FFFD like HF). The
 * stream is empty afterwards and can be reused. */
size_t tok_stream_flush(tok_stream *s, char *out, size_t cap);

#endif
