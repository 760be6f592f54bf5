/* The --palettize options both compile paths (Qwen3, encoders) share: the
 * option rows, turning them into lower_palette_options, and the summary
 * line of what palettizing saved (docs/palettization.md). */
#ifndef NC_TOOLS_CMD_COMPILE_PALETTIZE_H
#define NC_TOOLS_CMD_COMPILE_PALETTIZE_H

#include "cli_opts.h"
#include "lower/palettize.h"

/* What the command line says; cmd_palettize_options turns it into options. */
typedef struct cmd_palettize_args {
    int bits, per_channel;
    int64_t group_size; /* -1: not given */
} cmd_palettize_args;

#define CMD_PALETTIZE_OPTS(a)                                                                      \
    CLI_OPT(NULL, "--palettize", CLI_INT, "8|6|4",                                                 \
            "weights as BITS-bit indices into per-group fp16 look-up tables\n"                     \
            "(k-means; constexpr_lut_to_dense); default fp16",                                     \
            &(a)->bits, .min = 1, .max = 8),                                                       \
        CLI_OPT(NULL, "--group-size", CLI_INT64, "G",                                              \
                "output channels sharing one table (default 16; 0: one per tensor)",               \
                &(a)->group_size, .min = 0, .max = 1 << 30),                                       \
        CLI_OPT(NULL, "--per-channel", CLI_FLAG, NULL, "one table per output channel (G = 1)",     \
                &(a)->per_channel)

void cmd_palettize_args_init(cmd_palettize_args *a);
/* 0, or 2 after printing a usage error (a group option without --palettize,
 * or both --group-size and --per-channel). */
int cmd_palettize_options(const cli_command *c, const cmd_palettize_args *a,
                          lower_palette_options *out);
/* "; palettized N tensors to B bits: X MB of fp16 in Y MB (Z%), relative RMS error E" */
void cmd_palettize_print(const lower_palette_options *o, const lower_palette_stats *s);

#endif
