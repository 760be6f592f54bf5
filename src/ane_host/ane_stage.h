/* Where the real device's compiler reads a program from. The ANE daemon
 * (aned) compiles the folder an _ANEModel names, and may not be allowed to
 * read the user's home; splash's runtime therefore writes every program into
 * the per-user cache directory (confstr(_CS_DARWIN_USER_CACHE_DIR)) under a
 * folder named by the hash of its files, and passes that folder's absolute
 * path (docs/ane-bridge.md, "Program files"). This file does the same for a
 * bundle's program folder: hash model.mil + weights/weight.bin (FNV-1a 64,
 * also the daemon's cache key), copy both whole into <root>/<key>/ (a
 * temporary file renamed into place, then a `complete` marker, so a crash
 * never leaves a half-written program that a later run would trust), and
 * return the resolved path. Portable: tested on any machine. */
#ifndef NC_ANE_HOST_ANE_STAGE_H
#define NC_ANE_HOST_ANE_STAGE_H

#include <stddef.h>

#include "base/error.h"

#define ANE_STAGE_KEY_MAX 40

/* The default root: <per-user cache dir>/nectar-ane. On macOS the cache dir
 * is confstr(_CS_DARWIN_USER_CACHE_DIR); elsewhere (tests only) it is
 * $XDG_CACHE_HOME, else $TMPDIR, else /tmp. NECTAR_ANE_CACHE overrides it. */
nc_status ane_stage_default_root(char *buf, size_t cap, nc_error *err);

/* mkdir -p, each created folder private to the user (0700). */
nc_status ane_make_dirs(const char *path, nc_error *err);

/* The cache key of a program folder: "nectar-" + FNV-1a 64 of model.mil then
 * weights/weight.bin (absent weights hash as nothing). */
nc_status ane_stage_key(const char *program_dir, char key[ANE_STAGE_KEY_MAX], nc_error *err);

/* Copies program_dir's model.mil and weights/weight.bin into root/<key>/
 * unless a complete copy is already there; out gets the resolved absolute
 * path of that folder (realpath), key the key. root is created if needed. */
nc_status ane_stage_program(const char *root, const char *program_dir, char *out, size_t cap,
                            char key[ANE_STAGE_KEY_MAX], nc_error *err);

#endif
