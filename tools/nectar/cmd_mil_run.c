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
#include "commands.h"
#include "io/npy.h"
#include "mil/interp.h"
#include "mil/parse.h"

#define MAX_INPUTS 64

static void usage(FILE *f) {
    fprintf(f,
            "usage: nectar mil run FILE.mil [--fn NAME] --in NAME=FILE.npy ... --out DIR\n"
            "                      [--mode fp16|fp32] [--repeat N] [--threads N] [--trace]\n\n"
            "Runs function NAME (default main) of the program with the interpreter and writes\n"
            "each output, and each state's final value, as DIR/<name>.npy.\n\n"
            "  --in NAME=FILE.npy  binds input NAME (repeat for each input)\n"
            "  --out DIR           output folder (created if missing)\n"
            "  --mode fp16         the ANE's numerics: each op's result rounded to fp16, sums\n"
            "                      in fp32 (default); fp32: no rounding, for debugging\n"
            "  --repeat N          run N times and print the mean time per run\n"
            "  --threads N         threads for matmul/conv/linear (default 1; 0: all CPUs);\n"
            "                      results are the same for any N\n"
            "  --trace             after each op print its outputs' range and inf/nan\n"
            "                      counts (to stderr): where an fp16 overflow starts\n");
}

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
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return cli_failf("mil run: %s: %s", dir, strerror(errno));
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
            for (int d = 0; d < view.rank; d++) printf("%s%lld", d ? ", " : "", (long long)view.shape[d]);
            printf("] -> %s\n", path);
        }
    }
    return 0;
}

int cmd_mil_run(int argc, char **argv) {
    const char *file = NULL, *fn = NULL, *out = NULL;
    char *ins[MAX_INPUTS];
    int n_in = 0;
    long repeat = 1, threads = 1;
    int trace = 0;
    mil_interp_mode mode = MIL_INTERP_FP16;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--fn") && has_val) {
            fn = argv[++i];
        } else if (!strcmp(a, "--in") && has_val) {
            if (n_in == MAX_INPUTS) return cli_failf("mil run: more than %d --in", MAX_INPUTS);
            ins[n_in++] = argv[++i];
        } else if (!strcmp(a, "--out") && has_val) {
            out = argv[++i];
        } else if (!strcmp(a, "--mode") && has_val) {
            const char *m = argv[++i];
            if (!strcmp(m, "fp16")) mode = MIL_INTERP_FP16;
            else if (!strcmp(m, "fp32")) mode = MIL_INTERP_FP32;
            else return cli_failf("mil run: --mode is fp16 or fp32, not '%s'", m);
        } else if (!strcmp(a, "--repeat") && has_val) {
            char *end;
            repeat = strtol(argv[++i], &end, 10);
            if (*end || repeat < 1 || repeat > 1000000) return cli_failf("mil run: bad --repeat '%s'", argv[i]);
        } else if (!strcmp(a, "--trace")) {
            trace = 1;
        } else if (!strcmp(a, "--threads") && has_val) {
            char *end;
            threads = strtol(argv[++i], &end, 10);
            if (*end || threads < 0 || threads > 256) return cli_failf("mil run: bad --threads '%s'", argv[i]);
        } else if (a[0] == '-' && a[1]) {
            usage(stderr);
            return cli_failf("mil run: unknown option or missing value '%s'", a);
        } else if (!file) {
            file = a;
        } else {
            return cli_failf("mil run: more than one FILE.mil ('%s')", a);
        }
    }
    if (!file || !out) {
        usage(stderr);
        return cli_failf("mil run: FILE.mil and --out DIR are required");
    }
    nc_error err;
    mil_program *prog;
    mil_interp *it = NULL;
    char *owned[MAX_INPUTS];
    int n_owned = 0, rc = 0;
    nc_pool *pool = NULL;
    if (mil_parse_file(file, &prog, &err) != NC_OK) return cli_fail(&err);
    if (mil_interp_new(prog, fn, mode, &it, &err) != NC_OK) {
        rc = cli_fail(&err);
        goto done;
    }
    if (trace) mil_interp_set_trace(it, stderr);
    if (threads != 1) {
        if (nc_pool_new((int)threads, &pool, &err) != NC_OK) {
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
    for (long r = 0; r < repeat; r++)
        if (mil_interp_run(it, &err) != NC_OK) {
            rc = cli_fail(&err);
            goto done;
        }
    double per_run_ms = (nc_now_s() - t0) * 1e3 / (double)repeat;
    if (repeat > 1) fprintf(stderr, "mil run: %ld runs, %.3f ms per run\n", repeat, per_run_ms);
    rc = write_outputs(it, out);
done:
    for (int i = 0; i < n_owned; i++) free(owned[i]);
    mil_interp_free(it);
    nc_pool_free(pool);
    mil_program_free(prog);
    return rc;
}
