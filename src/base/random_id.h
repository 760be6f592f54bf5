/* Unique ids from the system's random source: OpenAI's response and tool
 * call ids ("chatcmpl-...", "call-..."), made by the server and the API. */
#ifndef NC_BASE_RANDOM_ID_H
#define NC_BASE_RANDOM_ID_H

#include <stddef.h>

/* "PREFIX-" + 32 hex digits from 128 random bits, unique across requests
 * and restarts. Returns 0, or -1 when no random bytes could be read. */
int nc_random_id(const char *prefix, char *out, size_t cap);

#endif
