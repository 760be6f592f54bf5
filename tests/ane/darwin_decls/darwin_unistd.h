/* Declarations only (see README.md): what macOS's <unistd.h> adds to the
 * POSIX one and nectar uses -- the confstr name of the per-user cache
 * directory (confstr(3) on macOS). Forced in with -include by the syntax
 * check of the portable files' macOS branches. */
#ifndef NECTAR_DECLS_DARWIN_UNISTD_H
#define NECTAR_DECLS_DARWIN_UNISTD_H

#define _CS_DARWIN_USER_CACHE_DIR 65538

#endif
