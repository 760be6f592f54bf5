/* GPT-2's byte-to-unicode table, which byte-level BPE vocabularies are
 * spelled in: printable Latin-1 bytes stand for themselves, the other 68
 * bytes map to U+0100.. in order (so the space byte is "Ġ", U+0120). */
#ifndef NC_TEXT_BYTELEVEL_H
#define NC_TEXT_BYTELEVEL_H

#include <stddef.h>
#include <stdint.h>

/* The code point that stands for byte b. */
uint32_t tok_byte_to_cp(unsigned char b);

/* The byte that code point cp stands for, or -1 when cp is not in the table. */
int tok_cp_to_byte(uint32_t cp);

/* Spells raw bytes in the table's alphabet as UTF-8 (each byte becomes a
 * 1- or 2-byte character); out must hold 2 * n bytes. Returns the length. */
size_t tok_bytes_to_spelling(const unsigned char *s, size_t n, unsigned char *out);

/* Turns a token's spelling back into raw bytes, as HF's ByteLevel decoder
 * does: when every character is in the table, its bytes; otherwise the
 * spelling's own UTF-8 bytes unchanged. out must hold n bytes (the result is
 * never longer). s must be valid UTF-8. Returns the length. */
size_t tok_spelling_to_bytes(const unsigned char *s, size_t n, unsigned char *out);

#endif
