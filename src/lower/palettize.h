/* Palettized weights for ANE bundles: each group of output channels gets a
 * 2^bits-entry fp16 look-up table found by k-means (k-means++ seeding) over
 * the group's values, and every weight becomes an index into it. The
 * lowering emits them as MIL constexpr_lut_to_dense (iOS18 form), so
 * weight.bin holds packed indices plus small tables (docs/palettization.md). */
#ifndef NC_LOWER_PALETTIZE_H
#define NC_LOWER_PALETTIZE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/half.h"
#include "base/pool.h"
#include "bundle/bundle_forms.h"
#include "lower/lower_ops.h"
#include "mil/builder.h"


/* Indices and tables of one palettized weight (one allocation; free()). */
typedef struct lower_palette {
    int bits;
    int64_t n_groups; /* tables: one per group_size output channels */
    uint8_t *indices; /* one per weight, in the weight's row-major order */
    nc_fp16 *lut;     /* n_groups * 2^bits entries, each table ascending */
} lower_palette;

/* What palettizing a set of weights cost, summed over lower_palettize calls. */
typedef struct lower_palette_stats {
    size_t n_weights, n_tensors;
    uint64_t dense_bytes;      /* the same weights in fp16 */
    uint64_t stored_bytes;     /* packed indices + tables */
    double sum_sq_err, sum_sq; /* sum (w - lut[idx])^2 and sum w^2, for a relative RMS */
} lower_palette_stats;

/* Output channels per table for a weight of `rows` output channels: the
 * requested size when it divides rows, else the largest divisor of rows
 * below it (an LM head chunk of 9496 rows gets groups of 8 for 16), the
 * whole tensor for 0. */
int64_t lower_palette_group_rows(int64_t rows, int64_t group_size);

/* Palettizes w (fp16 data, dims [O, ...], output channels first) into a new
 * w->pal; w->data stays (the caller frees both). Fails on non-finite
 * weights, naming `what`. */
nc_status lower_palettize(nc_pool *pool, lower_weight *w, const lower_palette_options *opt,
                          const char *what, lower_palette_stats *stats, nc_error *err);

/* The constexpr_lut_to_dense op named `name` expanding w->pal (indices and
 * table written as consts on first use, referenced after, as
 * lower_shared_weight does for fp16 weights). */
mil_var *lower_palette_weight(mil_builder *b, const char *name, lower_weight *w);

#endif
