/* Declarations only (see ../README.md): sysctlbyname, as the sysctl(3)
 * manual page of macOS documents it (used by `nectar ane probe` for the
 * chip and OS names). */
#ifndef NECTAR_DECLS_SYS_SYSCTL_H
#define NECTAR_DECLS_SYS_SYSCTL_H

#include <stddef.h>

int sysctlbyname(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

#endif
