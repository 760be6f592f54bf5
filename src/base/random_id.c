/* Random ids (see random_id.h): /dev/urandom, read once per id. */
#include "base/random_id.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int nc_random_id(const char *prefix, char *out, size_t cap) {
    unsigned char b[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t r = read(fd, b, sizeof b);
    close(fd);
    if (r != (ssize_t)sizeof b) return -1;
    int n = snprintf(out, cap, "%s-", prefix);
    for (size_t i = 0; i < sizeof b && n > 0 && (size_t)n + 2 < cap; i++)
        n += snprintf(out + n, cap - (size_t)n, "%02x", b[i]);
    return 0;
}
