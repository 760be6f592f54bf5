/* --palettize for `nectar compile` (cmd_compile_palettize.h). */
#include "cmd_compile_palettize.h"

#include <math.h>
#include <stdio.h>

#include "bundle/palettize_manifest.h"

#define DEFAULT_GROUP_ROWS 16  /* Apple: "a group size of 8 or 16 gives good accuracy" */
#define SEED 0x6e6563746172ull /* fixed: the same checkpoint gives the same bundle */

void cmd_palettize_args_init(cmd_palettize_args *a) {
    a->bits = 0;
    a->per_channel = 0;
    a->group_size = -1;
}

int cmd_palettize_options(const cli_command *c, const cmd_palettize_args *a,
                          lower_palette_options *out) {
    out->bits = a->bits;
    out->seed = SEED;
    out->group_size = a->per_channel ? 1 : a->group_size >= 0 ? a->group_size : DEFAULT_GROUP_ROWS;
    if (!a->bits && (a->per_channel || a->group_size >= 0)) {
        return cli_usage_error(c, "--group-size and --per-channel need --palettize");
    }
    if (a->per_channel && a->group_size >= 0) {
        return cli_usage_error(c, "give --group-size or --per-channel, not both");
    }
    if (a->bits && a->bits != 8 && a->bits != 6 && a->bits != 4) {
        return cli_usage_error(c, "--palettize %d: give 8, 6 or 4", a->bits);
    }
    return 0;
}

void cmd_palettize_print(const lower_palette_options *o, const lower_palette_stats *s) {
    if (!o->bits) return;
    double rel = s->sum_sq > 0 ? sqrt(s->sum_sq_err / s->sum_sq) : 0;
    fprintf(stderr, "palettized %zu tensors (%zu weights) to %d bits, groups of %lld rows: %.1f MB of "
           "fp16 stored in %.1f MB (%.1f%%), relative RMS error %.2e\n",
           s->n_tensors, s->n_weights, o->bits, (long long)o->group_size, s->dense_bytes / 1e6,
           s->stored_bytes / 1e6, s->dense_bytes ? 100.0 * s->stored_bytes / s->dense_bytes : 0.0,
           rel);
    char line[256];
    lower_palette_describe(o, line, sizeof line);
    fprintf(stderr, "palettize settings (in manifest.json): %s\n", line);
}
