/* What the two paths of `nectar gen-random` share (cmd_gen_random.c for
 * Qwen3 shapes, gen_random_encoder.c for ModernBERT-family shapes): one
 * command line, the dtype names, the output folder, the tokenizer copy. The
 * random values themselves come from src/io/safetensors_random.h. */
#ifndef NC_TOOLS_GEN_RANDOM_COMMON_H
#define NC_TOOLS_GEN_RANDOM_COMMON_H

#include <stdint.h>

#include "io/safetensors.h"

typedef struct gen_random_args {
    const char *like, *out, *tok_dir;
    const char *dtype;       /* "bf16", "f16" or "f32" as given */
    const char *torch_dtype; /* its config.json name: "bfloat16", ... */
    st_dtype dt;
    uint64_t seed;
    int threads;
} gen_random_args;

/* Parses `gen-random --like SHAPE OUT [--dtype D] [--seed S] [--tokenizer
 * DIR] [-t N]`; `usage` prints the help of the path taken. Returns -1 when
 * the command should go on, else its exit code (help, or an error said). */
int gen_random_parse(int argc, char **argv, int (*usage)(void), gen_random_args *a);
/* Creates the output folder (an existing one is reused); 0 or the exit code. */
int gen_random_make_out(const char *out);
/* Copies the files named in `files` (n of them) from tok_dir into out; with
 * `required`, a missing one is an error. 0 or the exit code. */
int gen_random_copy_tokenizer(const char *tok_dir, const char *out, const char *const *files, int n,
                              int required);

/* The encoder path (gen_random_encoder.c): whether --like names an encoder
 * shape, its help, and the command on parsed arguments. */
int gen_random_is_encoder(int argc, char **argv);
int gen_random_encoder_usage(void);
int gen_random_encoder(const gen_random_args *a);

#endif
