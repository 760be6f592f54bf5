/* The shared command line and folder handling of gen-random (gen_random_common.h). */
#include "gen_random_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mmap.h"
#include "commands.h"
#include "io/hf_weights.h"

int gen_random_parse(int argc, char **argv, int (*usage)(void), gen_random_args *a) {
    memset(a, 0, sizeof *a);
    a->dtype = "bf16";
    a->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            usage();
            return 0;
        } else if (!strcmp(s, "--like") && has_val)
            a->like = argv[++i];
        else if (!strcmp(s, "--dtype") && has_val)
            a->dtype = argv[++i];
        else if (!strcmp(s, "--seed") && has_val)
            a->seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(s, "--tokenizer") && has_val)
            a->tok_dir = argv[++i];
        else if (!strcmp(s, "-t") && has_val)
            a->threads = atoi(argv[++i]);
        else if (s[0] == '-')
            return cli_failf("gen-random: unknown or incomplete option '%s'", s), usage();
        else if (!a->out)
            a->out = s;
        else
            return cli_failf("gen-random: unexpected argument '%s'", s), usage();
    }
    if (!a->like || !a->out) return usage();
    static const struct {
        const char *name, *torch;
        st_dtype dt;
    } dtypes[] = {
        {"bf16", "bfloat16", ST_BF16}, {"f16", "float16", ST_F16}, {"f32", "float32", ST_F32}};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(a->dtype, dtypes[i].name)) {
            a->dt = dtypes[i].dt;
            a->torch_dtype = dtypes[i].torch;
            return -1;
        }
    return cli_failf("gen-random: --dtype must be bf16, f16 or f32, not '%s'", a->dtype);
}

int gen_random_make_out(const char *out) {
    if (mkdir(out, 0777) != 0 && errno != EEXIST)
        return cli_failf("%s: cannot create folder: %s", out, strerror(errno));
    if (!nc_is_dir(out)) return cli_failf("%s: not a folder", out);
    return 0;
}

int gen_random_copy_tokenizer(const char *tok_dir, const char *out, const char *const *files, int n,
                              int required) {
    if (!nc_is_dir(tok_dir)) return cli_failf("%s: tokenizer folder not found", tok_dir);
    for (int i = 0; i < n; i++) {
        char src[4096], dst[4096];
        nc_error err = {0};
        hf_path_join(src, sizeof src, tok_dir, files[i]);
        hf_path_join(dst, sizeof dst, out, files[i]);
        if (!required && !nc_file_exists(src)) continue;
        if (nc_copy_file(src, dst, &err) != NC_OK) return cli_fail(&err);
    }
    return 0;
}
