/* Objective-C method type encodings, compared without their frame offsets
 * ("B48@0:8@16@24I32^@36" -> "B@:@@I^@"): src/ane checks at startup that
 * every private method it calls still has the signature it was written
 * for. Portable, so it is tested on any machine. */
#ifndef NC_ANE_HOST_ANE_ENCODING_H
#define NC_ANE_HOST_ANE_ENCODING_H

#include <stddef.h>

void ane_encoding_strip_offsets(const char *enc, char *out, size_t cap);

#endif
