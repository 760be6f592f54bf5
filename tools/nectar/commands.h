/* The `nectar` subcommands. Each lives in its own cmd_*.c file and is one row
 * of the table in main.c; argv[0] is the subcommand name. */
#ifndef NECTAR_CLI_COMMANDS_H
#define NECTAR_CLI_COMMANDS_H

#include "nectar.h"

int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_gen_random(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_mil(int argc, char **argv);
int cmd_mil_check(int argc, char **argv); /* nectar mil check (called by cmd_mil) */
int cmd_mil_run(int argc, char **argv);   /* nectar mil run (called by cmd_mil) */
int cmd_bounds(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_parity(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_bench_compare(int argc, char **argv); /* nectar bench --compare (called by cmd_bench) */
int cmd_embed(int argc, char **argv);
int cmd_fill_mask(int argc, char **argv);
int cmd_classify(int argc, char **argv);
int cmd_ane(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_decide(int argc, char **argv);
int cmd_snake(int argc, char **argv);

/* Prints "nectar: error: <msg>" to stderr and returns the exit code 1. */
int cli_fail(const nc_error *err);
/* Same for a message formatted here. */
int cli_failf(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
#endif
