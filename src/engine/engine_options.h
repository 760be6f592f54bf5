/* The options that change how a model runs, one row each: the key the API
 * takes ("kv=f16"), the command-line flag ("--kv"), the environment
 * variable that gives its default (NECTAR_KV, read once by tools/), the
 * values it takes, and the one parser that turns a value into
 * engine_options. The command line, the environment and nc_model_open all
 * go through engine_option_set, so a value means the same everywhere and a
 * bad one fails in one wording: "WHAT: 'VALUE' is not ...", WHAT naming
 * the flag, the variable or the API key it came from. Backend names come
 * from the engine table (engine.c). */
#ifndef NC_ENGINE_ENGINE_OPTIONS_H
#define NC_ENGINE_ENGINE_OPTIONS_H

#include "engine/engine.h"

typedef struct engine_option_row {
    const char *key;    /* nc_model_open's "key=value" name */
    const char *flag;   /* the command line's */
    const char *env;    /* the variable that sets its default, or NULL */
    const char *values; /* what it takes, for help: "f32|f16", "N" */
    int lo, hi;         /* an integer option's range */
} engine_option_row;

/* The i-th row (0, 1, ...), NULL past the last. */
const engine_option_row *engine_option_at(int i);
/* The row whose key is `key`, or NULL. */
const engine_option_row *engine_option_named(const char *key);

/* Parses value into o's field of option `key`; `what` names where the
 * value came from in the one-line error ("--kv", "NECTAR_KV",
 * "nc_model_open: option kv"). */
nc_status engine_option_set(engine_options *o, const char *key, const char *value, const char *what,
                            nc_error *err);

/* The backends of the engine table that engine_kind_for serves, as a
 * choice list "cpu|mil|ane" (the --backend choices), and the i-th of them
 * (NULL past the last). */
const char *engine_backend_choices(void);
const char *engine_backend_at(int i);
/* NC_OK when `name` is one of them; else one line "WHAT: 'NAME' is not a
 * backend (cpu, mil or ane)". */
nc_status engine_backend_check(const char *name, const char *what, nc_error *err);

#endif
