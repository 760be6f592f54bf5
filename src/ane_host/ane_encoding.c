/* Type encodings without offsets (ane_encoding.h). Digits in an encoding
 * are offsets or sizes, never part of a type code ("^{__IOSurface=}" and
 * "@?" have none), so dropping every digit leaves the types. */
#include "ane_host/ane_encoding.h"

#include <ctype.h>

void ane_encoding_strip_offsets(const char *enc, char *out, size_t cap) {
    size_t o = 0;
    if (!cap) return;
    for (const char *s = enc; *s && o + 1 < cap; s++)
        if (!isdigit((unsigned char)*s)) out[o++] = *s;
    out[o] = '\0';
}
