/* The environment variables `nectar` reads: all of them here, once, in
 * main() before the subcommand runs. The library below tools/ reads none;
 * it takes these as options (cpu_select_table, nc_log_set_level, the KV
 * type in the load and engine options). */
#ifndef NECTAR_CLI_ENV_H
#define NECTAR_CLI_ENV_H

typedef struct cli_env {
    int kv_f16;             /* NECTAR_KV=f16 (or f32): KV caches in fp16 */
    const char *ane_device; /* NECTAR_ANE_DEVICE as set (NULL: unset or empty); the
                               commands with --ane-device check it (gen_cli_backend_device) */
} cli_env;

/* Reads every variable and applies the process-wide ones: the kernel table
 * (NECTAR_NO_SIMD=1: scalar; NECTAR_SIMD=NAME: at most NAME; NECTAR_NO_AMX=1:
 * at most avx512; NECTAR_BF16=accurate|fast|off: bf16 prompts) and the log level
 * (NECTAR_LOG=debug|info|warn|error|quiet). 0, or 2 after one line naming the variable whose value
 * is wrong. */
int cli_env_init(void);

/* What cli_env_init read. */
const cli_env *cli_env_get(void);

#endif
