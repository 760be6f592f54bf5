/* `nectar`: the command line. A table of subcommands; each one parses its
 * own options and returns the process exit code (0 ok, 1 error, 2 usage). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_env.h"
#include "commands.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"run", cmd_run, "generate a continuation of a raw-text prompt"},
    {"chat", cmd_chat, "interactive multi-turn chat with a model"},
    {"tokenize", cmd_tokenize, "text to token ids (or --decode ids to text)"},
    {"bench", cmd_bench, "prompt processing and generation speed"},
    {"gen-random", cmd_gen_random, "write a random-weight model at a real shape"},
    {"quantize", cmd_quantize, "write a q8/q4 quantized model folder"},
    {"mil", cmd_mil, "MIL toolkit: check, fmt, info, run, bundle"},
    {"serve", cmd_serve, "OpenAI-compatible HTTP server"},
    {"compile", cmd_compile, "lower a model to an ANE bundle (MIL programs + weight.bin)"},
    {"bounds", cmd_bounds, "parameter counts, FLOPs and speed floors of a model shape"},
    {"parity", cmd_parity, "compare a candidate (bundle) with the CPU engine on a fixture set"},
    {"embed", cmd_embed, "pooled sentence vectors from a ModernBERT-family encoder"},
    {"fill-mask", cmd_fill_mask, "top-k tokens at each [MASK] of a text (masked-LM encoder)"},
    {"classify", cmd_classify, "labels with probabilities (sequence-classification encoder)"},
    {"list", cmd_list, "the Hugging Face cache's models nectar can run (-m ORG/NAME)"},
    {"ane", cmd_ane, "Neural Engine: `ane probe` asks the chip what it accepts"},
    {"decide", cmd_decide, "marker, calibrated and action probabilities of a decision model"},
    {"snake", cmd_snake, "a decision model plays Snake at a fixed tick rate"},
};
#define N_COMMANDS (int)(sizeof commands / sizeof commands[0])

int cli_fail(const nc_error *err) {
    fprintf(stderr, "nectar: error: %s\n", err->msg[0] ? err->msg : nc_status_name(err->code));
    return 1;
}

int cli_failf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "nectar: error: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static void usage(FILE *f) {
    fprintf(f, "nectar %s: transformers on the Apple Neural Engine, in C\n\n", NECTAR_VERSION);
    fprintf(f, "usage: nectar <command> [options]   (nectar <command> --help for details)\n\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    /* `nectar help CMD` is `nectar CMD --help` */
    if (argc >= 3 && !strcmp(argv[1], "help"))
        for (int i = 0; i < N_COMMANDS; i++)
            if (!strcmp(argv[2], commands[i].name)) {
                char *sub[] = {argv[2], "--help", NULL};
                return commands[i].fn(2, sub);
            }
    if (argc >= 3 && !strcmp(argv[1], "help")) {
        fprintf(stderr, "nectar: unknown command '%s'\n", argv[2]);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("nectar %s\n", NECTAR_VERSION);
        return 0;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            int rc = cli_env_init();
            return rc ? rc : commands[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "nectar: unknown command '%s'\n", argv[1]);
    return 2;
}
