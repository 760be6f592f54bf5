/* A model folder a command writes (quantize, gen-random; bench --compare's
 * report folder alike) appears whole or
 * not at all: it is written into a temporary sibling "OUT.tmp.<pid>" and
 * renamed into place at the end (bundle/bundle_io.h's publish, as compile's
 * bundles). OUT may be new, an empty folder, or an older model folder
 * (with config.json), which is replaced only once the new one is whole;
 * anything else there is refused, so no other folder is ever replaced. */
#ifndef NECTAR_CLI_OUTDIR_H
#define NECTAR_CLI_OUTDIR_H

#include <stddef.h>

#include "base/error.h"

/* Checks out (and that it is not the folder `in`, when in is not NULL),
 * then creates the temporary sibling into tmp (cap bytes). */
nc_status cli_outdir_begin(const char *in, const char *out, char *tmp, size_t cap, nc_error *err);
/* The same for another kind of folder: an older one is recognised by the
 * file `marker` in it (a report folder's summary.json). */
nc_status cli_outdir_begin_kind(const char *in, const char *out, const char *marker,
                                const char *kind, char *tmp, size_t cap, nc_error *err);
/* Renames tmp into place as out. */
nc_status cli_outdir_commit(const char *tmp, const char *out, nc_error *err);
/* Removes the temporary siblings of out ("OUT.tmp.<pid>", "OUT.old.<pid>")
 * that a killed process left: those whose process is gone. Every writer of
 * out calls it first, so a kill leaves nothing past the next write. */
void cli_outdir_sweep(const char *out);
/* Removes tmp after a failure. */
void cli_outdir_abort(const char *tmp);

#endif
