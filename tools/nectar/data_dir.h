/* Where the `nectar` binary finds its data files (the Qwen3 tokenizer that
 * gen-random copies into random folders) without the source tree: beside
 * the executable in an installed tree (BIN/../share/nectar), the DATADIR
 * compiled in by `make install`'s PREFIX, and in a build tree the
 * repository's tests/fixtures. Files rather than bytes embedded in the
 * binary: the tokenizer is 11 MB and keeps its licence note beside it. */
#ifndef NECTAR_CLI_DATA_DIR_H
#define NECTAR_CLI_DATA_DIR_H

#include <stddef.h>

/* The first existing folder `name` (e.g. "qwen3-tokenizer") among the
 * places above, written to out[cap]; NULL when there is none. */
const char *nectar_data_dir(const char *name, char *out, size_t cap);

/* The running executable's folder, or NULL where the platform cannot say
 * (then only the compiled-in folder is looked at). */
const char *nectar_exe_dir(char *out, size_t cap);

#endif
