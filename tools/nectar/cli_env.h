/* The environment variables `nectar` reads: all of them here, once, in
 * main() before the subcommand runs. The library below tools/ reads none;
 * it takes these as options (cpu_select_table, nc_log_set_level, the KV
 * type in the load and engine options). */
#ifndef NECTAR_CLI_ENV_H
#define NECTAR_CLI_ENV_H

#include "base/error.h"
#include "cpu/cpu_wisdom.h"

#define CLI_ENV_MAX_ENGINE 16

typedef struct cli_env {
    /* the variable of each engine option row (engine/engine_options.h:
     * NECTAR_KV, NECTAR_ANE_DEVICE) as set, checked by the row's parser;
     * NULL: unset or empty. The flag, where given, wins (gen_cli_engine). */
    const char *engine[CLI_ENV_MAX_ENGINE];
    /* the wisdom file NECTAR_WISDOM, XDG_CACHE_HOME or HOME name
     * (cpu_wisdom_path, in wisdom_buf); NULL: none */
    const char *wisdom;
    char wisdom_buf[CPU_WISDOM_PATH_MAX];
} cli_env;

/* Reads every variable and applies the process-wide ones: the kernel table
 * (NECTAR_NO_SIMD=1: scalar; NECTAR_SIMD=NAME: at most NAME; NECTAR_NO_AMX=1:
 * at most avx512; NECTAR_BF16=accurate|fast|off: bf16 prompts) and the log level
 * (NECTAR_LOG=debug|info|warn|error|quiet); and the engine options' variables
 * (NECTAR_KV, NECTAR_ANE_DEVICE), checked; and the wisdom file's path
 * (NECTAR_WISDOM, else from XDG_CACHE_HOME or HOME: cpu_wisdom_path refuses
 * one of CPU_WISDOM_PATH_MAX bytes or more). 0, or 2 after one line naming
 * the variable whose value is wrong. */
int cli_env_init(void);

/* The variable of engine option `key` ("kv": NECTAR_KV) as read, or NULL. */
const char *cli_env_engine(const char *key);

/* The kernels chosen by measurement for this CPU (cpu_wisdom.h), once per
 * process on `threads` threads (0: all cores), from the wisdom file
 * NECTAR_WISDOM names ("off": nothing measured or read, the defaults;
 * unset: $XDG_CACHE_HOME/nectar/wisdom, else ~/.cache/nectar/wisdom): the
 * first command on a machine measures (~0.5 s), later ones read the file.
 * Every command that opens a CPU model calls it (gen_cli_engine). */
nc_status cli_env_tune_kernels(int threads, const cpu_tuning **out, nc_error *err);

#endif
