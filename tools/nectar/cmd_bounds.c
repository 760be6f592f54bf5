/* `nectar bounds`: parameter counts, dense FLOPs, weight bytes and the
 * bandwidth/compute floors of a model shape, plus Amdahl's law. The
 * arithmetic is in src/bench/bounds.c; this file only reads options. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bounds_report.h"
#include "cli_opts.h"
#include "commands.h"
#include "models/presets.h"

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
    const char *config = NULL, *model_dir = NULL, *like = NULL;
    int arch_i = -1, like_i = -1, is_json = 0, has_fraction = 0, has_speedup = 0;
    int has_n = 0, has_d = 0, has_i = 0, has_h = 0;
    int64_t n = 0, d = 0, i_ff = 0, h = 0;
    double gbps = 0, tflops = 0;
    const long long big = (long long)1 << 40;
    char names[512], list[512];
    model_preset_names(-1, "|", names, sizeof names);
    model_preset_names(-1, ", ", list, sizeof list);
    static const char *const archs[] = {"modernbert", "qwen3", "encoder"};
    const cli_opt shape[] = {
        CLI_OPT(NULL, "--arch", CLI_CHOICE, "modernbert|qwen3",
                "the model family (default: the --like preset's)", &arch_i,
                .choices = "modernbert|qwen3|encoder"),
        CLI_OPT(NULL, "--like", CLI_CHOICE, "NAME", list, &like_i, .choices = names),
        CLI_OPT(NULL, "--config", CLI_STRING, "FILE", "the shape from a config.json", &config),
        CLI_OPT("-m", NULL, CLI_STRING, "DIR", "the shape from DIR/config.json", &model_dir),
        CLI_OPT("-N", NULL, CLI_INT64, "L", "modernbert: layers", &n, .min = 1, .max = big,
                .seen = &has_n),
        CLI_OPT("-D", NULL, CLI_INT64, "W", "modernbert: model width", &d, .min = 1, .max = big,
                .seen = &has_d),
        CLI_OPT("-I", NULL, CLI_INT64, "W", "modernbert: MLP width", &i_ff, .min = 1, .max = big,
                .seen = &has_i),
        CLI_OPT("-H", NULL, CLI_INT64, "H", "modernbert: extra 12D^2 head layers (default 0)", &h,
                .min = 0, .max = big, .seen = &has_h),
        CLI_ENDROW};
    const cli_opt work[] = {
        CLI_OPT("-B", NULL, CLI_INT64, "N", "batch (default 1)", &q.batch, .min = 1, .max = big),
        CLI_OPT("-L", NULL, CLI_INT64, "N", "sequence length (default 96; qwen3: 512)", &q.seq_len,
                .min = 1, .max = big),
        CLI_OPT(NULL, "--context", CLI_INT64, "N",
                "qwen3: cached positions read per decoded token (default 0)", &q.context, .min = 0,
                .max = big),
        CLI_OPT(NULL, "--bandwidth", CLI_DOUBLE, "GB/s",
                "memory bandwidth for the bandwidth floor (e.g. 400)", &gbps, .lo = 0,
                .hi = INFINITY, .open_lo = 1),
        CLI_OPT(NULL, "--flops", CLI_DOUBLE, "TFLOP/s", "achieved compute for the compute floor",
                &tflops, .lo = 0, .hi = INFINITY, .open_lo = 1),
        CLI_OPT(NULL, "--format", CLI_STRING, "NAME",
                "only this weight format (fp32 fp16 bf16 q8 q4); default all", &q.format),
        CLI_OPT(NULL, "--fraction", CLI_DOUBLE, "f", "Amdahl: S = 1/(1-f+f/s)", &q.fraction,
                .lo = 0, .hi = 1, .seen = &has_fraction),
        CLI_OPT(NULL, "--speedup", CLI_DOUBLE, "s", "Amdahl's s (may be 'inf')", &q.speedup,
                .lo = 0, .hi = INFINITY, .open_lo = 1, .allow_inf = 1, .seen = &has_speedup),
        CLI_OPT(NULL, "--json", CLI_FLAG, NULL, "machine-readable output (times in seconds)",
                &is_json),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "bounds",
        .usage = "--arch modernbert -N L -D W -I W [-H H] [-B B] [-L L] [options]\n"
                 "       nectar bounds --like NAME [options]\n"
                 "       nectar bounds --arch qwen3 (--config config.json | -m DIR) [options]\n"
                 "       nectar bounds --fraction f --speedup s",
        .about = "Parameter counts, dense FLOPs, weight bytes and the bandwidth/compute floors of\n"
                 "a model shape, plus Amdahl's law.\n",
        .opts = {shape, work}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    q.bandwidth_bytes_per_s = gbps * 1e9;
    q.compute_flops_per_s = tflops * 1e12;
    const char *arch = arch_i >= 0 ? archs[arch_i] : NULL;
    if (like_i >= 0) {
        const model_preset *p = model_preset_at(like_i); /* choices: the rows in order */
        like = p->name;
        /* Qwen3.5 is the qwen3 arch with linear-attention layers */
        if (!arch) arch = p->family == MODEL_FAMILY_MODERNBERT ? "modernbert" : "qwen3";
    }
    /* a decision-model folder is a ModernBERT-family encoder plus its head */
    if (!arch && model_dir) {
        char dj[4200];
        snprintf(dj, sizeof dj, "%s/decision.json", model_dir);
        FILE *probe = fopen(dj, "r");
        if (probe) arch = "modernbert";
        if (probe) fclose(probe);
    }
    if (has_fraction != has_speedup)
        return cli_usage_error(&cmd, "--fraction and --speedup go together");
    q.has_amdahl = has_fraction;
    if (!arch) {
        /* Amdahl alone needs no model */
        if (q.has_amdahl && !has_n && !config && !model_dir) {
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
        return cli_usage_error(&cmd, "--arch modernbert|qwen3 (or --like NAME) is required");
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
            return cli_usage_error(&cmd, "qwen3 needs --config FILE, -m DIR or --like NAME");
        }
    } else { /* modernbert, encoder */
        if (q.seq_len < 0) q.seq_len = 96;
        snprintf(path, sizeof path, "command line");
        if (like) {
            if (nc_encoder_shape_like(like, &q.encoder, &err) != NC_OK) return cli_fail(&err);
            snprintf(path, sizeof path, "--like %s", like);
        } else if (config || model_dir) {
            config_path(config, model_dir, path, sizeof path);
            if (nc_encoder_shape_load(path, &q.encoder, &err) != NC_OK) return cli_fail(&err);
        } else if (!(has_n && has_d && has_i)) {
            return cli_usage_error(&cmd, "modernbert needs -N, -D and -I (or --like / --config)");
        }
        /* explicit flags override a --like or --config shape */
        if (has_n) q.encoder.n_layers = n;
        if (has_d) q.encoder.d_model = d;
        if (has_i) q.encoder.d_ff = i_ff;
        if (has_h) q.encoder.n_head_layers = h;
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
