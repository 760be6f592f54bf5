/* `nectar mil run FILE.mil --fn F --in x=x.npy --out DIR [--mode fp16|fp32]`:
 * interprets one function of a MIL program on the CPU (weights from its
 * model folder) and writes every output as DIR/<name>.npy in its declared
 * dtype. Nothing is written unless the run succeeds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mmap.h"
#include "base/pool.h"
#include "base/timer.h"
#include "cli_opts.h"
#include "commands.h"
#include "io/npy.h"
#include "mil/interp.h"
#include "mil/parse.h"

#define MAX_INPUTS 64

static int bind_inputs(mil_interp *it, char **specs, int n) {
    for (int i = 0; i < n; i++) {
        char *eq = strchr(specs[i], '=');
        if (!eq || eq == specs[i] || !eq[1])
            return cli_failf("mil run: --in wants NAME=FILE.npy, got '%s'", specs[i]);
        *eq = '\0';
        nc_npy a;
        nc_error err;
        if (nc_npy_read(eq + 1, &a, &err) != NC_OK) return cli_fail(&err);
        nc_status st = mil_interp_set_input_npy(it, specs[i], &a, &err);
        nc_npy_free(&a);
        if (st != NC_OK) return cli_fail(&err);
    }
    return 0;
}

static int write_outputs(const mil_interp *it, const char *dir) {
    const mil_function *fn = mil_interp_function(it);
    nc_error err;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return cli_failf("mil run: %s: %s", dir, strerror(errno));
    if (!nc_is_dir(dir)) return cli_failf("mil run: %s is not a folder", dir);
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? fn->n_inputs : fn->n_outputs;
        for (int i = 0; i < n; i++) {
            const mil_var *v = pass ? fn->inputs[i] : fn->outputs[i];
            if (pass && (!v->type || v->type->kind != MIL_TYPE_STATE)) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s.npy", dir, v->name);
            if (mil_interp_write_npy(it, v->name, path, &err) != NC_OK) return cli_fail(&err);
            mil_interp_view view;
            if (mil_interp_get(it, v->name, &view, &err) != NC_OK) return cli_fail(&err);
            printf("%s: %s [", v->name, mil_dtype_name(view.dtype));
            for (int d = 0; d < view.rank; d++)
                printf("%s%lld", d ? ", " : "", (long long)view.shape[d]);
            printf("] -> %s\n", path);
        }
    }
    return 0;
}

int cmd_mil_run(int argc, char **argv) {
    const char *file = NULL, *fn = NULL, *out = NULL;
    const char *ins[MAX_INPUTS];
    int n_in = 0, repeat = 1, threads = 1, trace = 0, mode = 0;
    static const mil_interp_mode modes[] = {MIL_INTERP_FP16, MIL_INTERP_FP32};
    const cli_opt opts[] = {
        CLI_OPT(NULL, "--fn", CLI_STRING, "NAME", "the function to run (default main)", &fn),
        CLI_OPT(NULL, "--in", CLI_STRINGS, "NAME=FILE.npy",
                "binds input NAME (repeat for each input)", ins, .count = &n_in, .cap = MAX_INPUTS),
        CLI_OPT(NULL, "--out", CLI_STRING, "DIR", "output folder (created if missing)", &out,
                .required = 1),
        CLI_OPT(NULL, "--mode", CLI_CHOICE, "fp16|fp32",
                "fp16: the ANE's numerics, each op's result rounded to\n"
                "fp16, sums in fp32 (default); fp32: no rounding, for debugging",
                &mode, .choices = "fp16|fp32"),
        CLI_OPT(NULL, "--repeat", CLI_INT, "N", "run N times and print the mean time per run",
                &repeat, .min = 1, .max = 1000000),
        CLI_OPT(NULL, "--threads", CLI_INT, "N",
                "threads for matmul/conv/linear (default 1; 0: all CPUs);\n"
                "results are the same for any N",
                &threads, .min = 0, .max = 256),
        CLI_OPT(NULL, "--trace", CLI_FLAG, NULL,
                "after each op print its outputs' range and inf/nan\n"
                "counts (to stderr): where an fp16 overflow starts",
                &trace),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "mil run",
        .usage = "FILE.mil [--fn NAME] --in NAME=FILE.npy ... --out DIR [options]",
        .about =
            "Runs function NAME (default main) of the program with the interpreter and writes\n"
            "each output, and each state's final value, as DIR/<name>.npy.\n",
        .opts = {opts},
        .pos = &file,
        .pos_name = "FILE.mil",
        .min_pos = 1,
        .max_pos = 1};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    nc_error err;
    mil_program *prog;
    mil_interp *it = NULL;
    char *owned[MAX_INPUTS];
    int n_owned = 0;
    rc = 0;
    nc_pool *pool = NULL;
    if (mil_parse_file(file, &prog, &err) != NC_OK) return cli_fail(&err);
    if (mil_interp_new(prog, fn, modes[mode], &it, &err) != NC_OK) {
        rc = cli_fail(&err);
        goto done;
    }
    if (trace) mil_interp_set_trace(it, stderr);
    if (threads != 1) {
        if (nc_pool_new(threads, &pool, &err) != NC_OK) {
            rc = cli_fail(&err);
            goto done;
        }
        mil_interp_set_pool(it, pool);
    }
    /* bind_inputs edits the NAME=FILE strings in place; copy them first */
    for (; n_owned < n_in; n_owned++)
        if (!(owned[n_owned] = strdup(ins[n_owned]))) {
            rc = cli_failf("mil run: out of memory");
            goto done;
        }
    if ((rc = bind_inputs(it, owned, n_owned))) goto done;
    double t0 = nc_now_s();
    for (int r = 0; r < repeat; r++)
        if (mil_interp_run(it, &err) != NC_OK) {
            rc = cli_fail(&err);
            goto done;
        }
    double per_run_ms = (nc_now_s() - t0) * 1e3 / (double)repeat;
    if (repeat > 1) fprintf(stderr, "mil run: %d runs, %.3f ms per run\n", repeat, per_run_ms);
    rc = write_outputs(it, out);
done:
    for (int i = 0; i < n_owned; i++)
        free(owned[i]);
    mil_interp_free(it);
    nc_pool_free(pool);
    mil_program_free(prog);
    return rc;
}
