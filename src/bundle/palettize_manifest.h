/* The palettize settings of a bundle in its manifest.json (both bundle
 * kinds): bits, table granularity and group size, and the k-means that
 * found the tables (k-means++ seed, the most Lloyd steps), written by the
 * compile and read back and checked wherever a manifest is read, so a
 * bundle says how its weights were compressed (docs/palettization.md). */
#ifndef NC_BUNDLE_PALETTIZE_MANIFEST_H
#define NC_BUNDLE_PALETTIZE_MANIFEST_H

#include <stddef.h>

#include "base/json.h"
#include "bundle/bundle_forms.h"

/* The "palettize" object for o; NULL when o->bits is 0 (fp16 weights: the
 * member is left out). */
json_t *lower_palette_to_json(const lower_palette_options *o);

/* root's "palettize" member into o (all zero when absent). A malformed
 * field fails with one line naming it ("what: palettize.bits ..."). */
nc_status lower_palette_from_json(const json_t *root, lower_palette_options *o, const char *what,
                                  nc_error *err);

/* One line for people: "8 bits, tables per 16 output channels, k-means++
 * seed 121..., at most 1000 Lloyd steps"; "fp16 weights" for bits 0. */
void lower_palette_describe(const lower_palette_options *o, char *buf, size_t cap);

/* BUNDLE/manifest.json's settings (either bundle kind): `mil info`. */
nc_status lower_bundle_palettize(const char *bundle_dir, lower_palette_options *o, nc_error *err);

#endif
