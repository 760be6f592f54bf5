/* `nectar bounds`: parameter counts, dense FLOPs, weight bytes and the
 * bandwidth/compute floors of a model shape, plus Amdahl's law. The
 * arithmetic is in src/bench/bounds.c; this file only reads options. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bounds_report.h"
#include "bench/numarg.h"
#include "commands.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: nectar bounds --arch modernbert -N L -D W -I W [-H H] [-B B] [-L L] [options]\n"
            "       nectar bounds --arch modernbert (--like modernbert-base|modernbert-large | "
            "--config FILE) [...]\n"
            "       nectar bounds --arch qwen3 (--config config.json | -m DIR | --like qwen3-0.6b) "
            "[...]\n"
            "options:\n"
            "  --bandwidth GB/s    memory bandwidth for the bandwidth floor (e.g. 400)\n"
            "  --flops TFLOP/s     achieved compute for the compute floor\n"
            "  --format NAME       only this weight format (fp32 fp16 bf16 q8 q4); default all\n"
            "  -B N, -L N          batch and sequence length (default 1 and 96; qwen3: 1 and 512)\n"
            "  --context N         qwen3: cached positions read per decoded token (default 0)\n"
            "  --fraction f --speedup s   Amdahl: S = 1/(1-f+f/s) (s may be 'inf')\n"
            "  --json              machine-readable output (times in seconds)\n");
}

/* --config FILE, or DIR/config.json for -m DIR. */
static void config_path(const char *config, const char *model_dir, char *path, size_t cap) {
    if (config)
        snprintf(path, cap, "%s", config);
    else
        snprintf(path, cap, "%s/config.json", model_dir);
}

int cmd_bounds(int argc, char **argv) {
    nc_error err = {0};
    nc_bounds_query q;
    memset(&q, 0, sizeof q);
    q.batch = 1;
    q.seq_len = -1;
    q.encoder.n_head_layers = 0;
    const char *arch = NULL, *like = NULL, *config = NULL, *model_dir = NULL;
    int is_json = 0, has_fraction = 0, has_speedup = 0;
    int has_n = 0, has_d = 0, has_i = 0, has_h = 0;
    int64_t n = 0, d = 0, i_ff = 0, h = 0;
    const int64_t big = (int64_t)1 << 40;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        nc_status st = NC_OK;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            is_json = 1;
            continue;
        }
        if (!v) {
            usage(stderr);
            return cli_failf("bounds: option %s needs a value", a);
        }
        i++;
        if (!strcmp(a, "--arch"))
            arch = v;
        else if (!strcmp(a, "--like"))
            like = v;
        else if (!strcmp(a, "--config"))
            config = v;
        else if (!strcmp(a, "-m"))
            model_dir = v;
        else if (!strcmp(a, "--format"))
            q.format = v;
        else if (!strcmp(a, "-N"))
            st = nc_parse_int64(v, "-N", 1, big, &n, &err), has_n = 1;
        else if (!strcmp(a, "-D"))
            st = nc_parse_int64(v, "-D", 1, big, &d, &err), has_d = 1;
        else if (!strcmp(a, "-I"))
            st = nc_parse_int64(v, "-I", 1, big, &i_ff, &err), has_i = 1;
        else if (!strcmp(a, "-H"))
            st = nc_parse_int64(v, "-H", 0, big, &h, &err), has_h = 1;
        else if (!strcmp(a, "-B"))
            st = nc_parse_int64(v, "-B", 1, big, &q.batch, &err);
        else if (!strcmp(a, "-L"))
            st = nc_parse_int64(v, "-L", 1, big, &q.seq_len, &err);
        else if (!strcmp(a, "--context"))
            st = nc_parse_int64(v, "--context", 0, big, &q.context, &err);
        else if (!strcmp(a, "--bandwidth")) {
            st = nc_parse_double(v, "--bandwidth", 0, &q.bandwidth_bytes_per_s, &err);
            if (st == NC_OK && !(q.bandwidth_bytes_per_s > 0))
                return cli_failf("--bandwidth %s: must be positive (GB/s)", v);
            q.bandwidth_bytes_per_s *= 1e9;
        } else if (!strcmp(a, "--flops")) {
            st = nc_parse_double(v, "--flops", 0, &q.compute_flops_per_s, &err);
            if (st == NC_OK && !(q.compute_flops_per_s > 0))
                return cli_failf("--flops %s: must be positive (TFLOP/s)", v);
            q.compute_flops_per_s *= 1e12;
        } else if (!strcmp(a, "--fraction")) {
            st = nc_parse_double(v, "--fraction", 0, &q.fraction, &err);
            has_fraction = 1;
        } else if (!strcmp(a, "--speedup")) {
            st = nc_parse_double(v, "--speedup", 1, &q.speedup, &err);
            has_speedup = 1;
        } else {
            usage(stderr);
            return cli_failf("bounds: unknown option %s", a);
        }
        if (st != NC_OK) return cli_fail(&err);
    }
    if (has_fraction != has_speedup)
        return cli_failf("bounds: --fraction and --speedup go together");
    q.has_amdahl = has_fraction;
    if (!arch && like) arch = !strncmp(like, "qwen3", 5) ? "qwen3" : "modernbert";
    if (!arch) {
        /* Amdahl alone needs no model */
        if (q.has_amdahl && !has_n && !config && !model_dir) {
            if (!(q.fraction >= 0 && q.fraction <= 1) || !(q.speedup > 0))
                return cli_failf("bounds: --fraction must be in [0, 1] and --speedup positive");
            double s = nc_amdahl(q.fraction, q.speedup);
            if (is_json) {
                json_t *am = json_object();
                json_object_set_new(am, "fraction", json_real(q.fraction));
                json_object_set_new(am, "speedup",
                                    isinf(q.speedup) ? json_null() : json_real(q.speedup));
                json_object_set_new(am, "S", json_real(s));
                json_t *r = json_pack("{s:o}", "amdahl", am);
                char *txt = json_dumps(r, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
                if (txt) puts(txt);
                free(txt);
                json_decref(r);
            } else {
                printf("Amdahl: fraction %g sped up %gx: S = 1/(1-f+f/s) = %.4g\n", q.fraction,
                       q.speedup, s);
            }
            return 0;
        }
        usage(stderr);
        return cli_failf("bounds: --arch modernbert|qwen3 is required");
    }
    char path[4096];
    if (!strcmp(arch, "qwen3")) {
        q.is_decoder = 1;
        if (q.seq_len < 0) q.seq_len = 512;
        if (like) {
            if (nc_qwen3_shape_like(like, &q.decoder, &err) != NC_OK) return cli_fail(&err);
            snprintf(path, sizeof path, "--like %s", like);
        } else if (config || model_dir) {
            config_path(config, model_dir, path, sizeof path);
            if (nc_qwen3_shape_load(path, &q.decoder, &err) != NC_OK) return cli_fail(&err);
        } else {
            return cli_failf("bounds: qwen3 needs --config FILE, -m DIR or --like NAME");
        }
    } else if (!strcmp(arch, "modernbert") || !strcmp(arch, "encoder")) {
        if (q.seq_len < 0) q.seq_len = 96;
        snprintf(path, sizeof path, "command line");
        if (like) {
            if (nc_encoder_shape_like(like, &q.encoder, &err) != NC_OK) return cli_fail(&err);
            snprintf(path, sizeof path, "--like %s", like);
        } else if (config || model_dir) {
            config_path(config, model_dir, path, sizeof path);
            if (nc_encoder_shape_load(path, &q.encoder, &err) != NC_OK) return cli_fail(&err);
        } else if (!(has_n && has_d && has_i)) {
            return cli_failf("bounds: modernbert needs -N, -D and -I (or --like / --config)");
        }
        /* explicit flags override a --like or --config shape */
        if (has_n) q.encoder.n_layers = n;
        if (has_d) q.encoder.d_model = d;
        if (has_i) q.encoder.d_ff = i_ff;
        if (has_h) q.encoder.n_head_layers = h;
    } else {
        return cli_failf("bounds: --arch %s: unknown (modernbert, qwen3)", arch);
    }
    q.source = path;
    json_t *r;
    if (nc_bounds_report(&q, &r, &err) != NC_OK) return cli_fail(&err);
    if (is_json) {
        char *s = json_dumps(r, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        if (s) puts(s);
        free(s);
    } else {
        nc_bounds_print_table(stdout, r);
    }
    json_decref(r);
    return 0;
}
