/* Encoder (ModernBERT) entry points that other commands hook into: the
 * compile of an encoder folder, reached from `nectar compile` when the
 * folder's config.json says model_type "modernbert". */
#ifndef NECTAR_CLI_CMD_ENCODER_H
#define NECTAR_CLI_CMD_ENCODER_H

/* `nectar compile -m ENCODER_DIR -o BUNDLE [--buckets ..] [--batches ..]`. */
int cmd_compile_encoder(int argc, char **argv);

/* The model folder given by -m/--model in argv, or NULL. */
const char *cmd_encoder_model_arg(int argc, char **argv);

#endif
