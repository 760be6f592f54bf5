/* Shared by the config tests of the Qwen3-layout families (Llama, Gemma 3):
 * a config.json written into a scratch folder and read through the family
 * table, and one edit of a published config that must fail with a status
 * and a message naming the field. */
#ifndef NC_TESTS_MODELS_CONFIG_EDITS_H
#define NC_TESTS_MODELS_CONFIG_EDITS_H

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mmap.h"
#include "models/family.h"

/* config written to dir/config.json, then read as the loader does. */
static inline nc_status config_edits_load(const char *dir, const char *config, qwen3_config *c,
                                          nc_error *err) {
    char path[512];
    mkdir("build", 0777);
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/config.json", dir);
    NC_TRY(nc_write_file_atomic(path, config, strlen(config), err));
    return model_family_qwen3_config_load(dir, c, err);
}

/* base with `from` replaced by `to` fails with code and a message holding
 * want; prints what happened otherwise. */
static inline int config_edits_fail(const char *dir, const char *base, const char *from,
                                    const char *to, nc_status code, const char *want) {
    char buf[4096];
    const char *at = strstr(base, from);
    if (!at) return 0;
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    qwen3_config c;
    nc_error err = {0};
    nc_status st = config_edits_load(dir, buf, &c, &err);
    if (st == code && strstr(err.msg, want)) return 1;
    printf("  %s -> %s: status %d, '%s'\n", from, to, st, err.msg);
    return 0;
}

#endif
