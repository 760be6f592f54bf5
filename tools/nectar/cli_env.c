/* The environment, read once (cli_env.h). */
#include "cli_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cpu/cpu_kernels.h"
#include "engine/engine_options.h"
#include "io/weights_residency.h"

static cli_env env;

/* Set and not "0" (NECTAR_NO_SIMD=1). */
static int is_on(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0");
}

static const char *value(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int bad(const char *name, const char *v, const char *want) {
    fprintf(stderr, "nectar: %s: '%s' is not %s\n", name, v, want);
    return 2;
}

int cli_env_init(void) {
    const char *table = is_on("NECTAR_NO_SIMD")  ? "scalar"
                        : value("NECTAR_SIMD")   ? value("NECTAR_SIMD")
                        : is_on("NECTAR_NO_AMX") ? "avx512"
                                                 : NULL;
    nc_error err = {0};
    if (cpu_select_table(table, &err) != NC_OK)
        return bad(value("NECTAR_SIMD") ? "NECTAR_SIMD" : "NECTAR_NO_SIMD", table,
                   "a kernel table (scalar, avx2, avx2-vnni, avx512, amx, neon, "
                   "neon-dotprod, neon-i8mm)");
    if (cpu_select_bf16(value("NECTAR_BF16"), &err) != NC_OK)
        return bad("NECTAR_BF16", value("NECTAR_BF16"), "accurate, fast or off");
    if (weights_residency_select(value("NECTAR_WEIGHTS"), &err) != NC_OK)
        return bad("NECTAR_WEIGHTS", value("NECTAR_WEIGHTS"), "mmap, resident or auto");
    /* a wisdom path that does not fit stops here, before any command runs */
    if (cpu_wisdom_path(value("NECTAR_WISDOM"), value("XDG_CACHE_HOME"), value("HOME"),
                        env.wisdom_buf, sizeof env.wisdom_buf, &env.wisdom, &err) != NC_OK) {
        fprintf(stderr, "nectar: %s\n", err.msg);
        return 2;
    }
    const char *log = value("NECTAR_LOG");
    if (log) {
        static const char *const levels[] = {"debug", "info", "warn", "error", "quiet"};
        int i = 0;
        while (i < 5 && strcmp(log, levels[i]))
            i++;
        if (i == 5) return bad("NECTAR_LOG", log, "debug, info, warn, error or quiet");
        nc_log_set_level((nc_log_level)i);
    }
    /* the engine options' variables, named in their table and checked by
     * its parser (`help` lists the ANE device's settings when used) */
    for (int i = 0; engine_option_at(i) && i < CLI_ENV_MAX_ENGINE; i++) {
        const engine_option_row *r = engine_option_at(i);
        const char *v = r->env ? value(r->env) : NULL;
        engine_options scratch = {0};
        if (v && strcmp(v, "help") &&
            engine_option_set(&scratch, r->key, v, r->env, &err) != NC_OK) {
            fprintf(stderr, "nectar: %s\n", err.msg);
            return 2;
        }
        env.engine[i] = v;
    }
    return 0;
}

const char *cli_env_engine(const char *key) {
    for (int i = 0; engine_option_at(i) && i < CLI_ENV_MAX_ENGINE; i++)
        if (!strcmp(engine_option_at(i)->key, key)) return env.engine[i];
    return NULL;
}

nc_status cli_env_tune_kernels(int threads, const cpu_tuning **out, nc_error *err) {
    return cpu_tune_once(env.wisdom, threads, out, err);
}
