/* `nectar mil`: the MIL toolkit. fmt (canonical reprint), info (functions,
 * I/O shapes, op histogram, weight bytes by dtype) and bundle (a .mil from
 * anywhere into a fresh model folder; --batch sorts many files by whether
 * they pass the ANE rules) live here; check and run dispatch to their own
 * files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "cli_opts.h"
#include "commands.h"
#include "bundle/palettize_manifest.h"
#include "mil/bundle.h"
#include "mil/check.h"
#include "mil/mil_blob.h"
#include "mil/parse.h"
#include "mil/print.h"
#include "mil/walk.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: nectar mil <command> ...\n\n"
            "  check FILE.mil|DIR [--target ane]   report every problem with its line\n"
            "  fmt FILE.mil [-o OUT.mil]            canonical reprint (program(1.3) dialect)\n"
            "  info FILE.mil                        functions, I/O shapes, op histogram, weights\n"
            "  run FILE.mil --fn F --in x=x.npy --out DIR   interpret a function\n"
            "  bundle FILE.mil -o DIR               copy into a fresh model folder\n"
            "  bundle --batch FILES...              table of which files pass the ANE rules\n");
}

/* --- fmt ----------------------------------------------------------------- */

static int cmd_fmt(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    const cli_opt opts[] = {
        CLI_OPT("-o", "--out", CLI_STRING, "OUT.mil", "write here instead of stdout", &out),
        CLI_ENDROW};
    const cli_command cmd = {.name = "mil fmt",
                             .usage = "FILE.mil [-o OUT.mil]",
                             .about = "Prints the program again in the canonical program(1.3) "
                                      "dialect.\n",
                             .opts = {opts},
                             .pos = &in,
                             .pos_name = "FILE.mil",
                             .min_pos = 1,
                             .max_pos = 1};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    nc_error err;
    mil_program *p;
    if (mil_parse_file(in, &p, &err)) return cli_fail(&err);
    nc_status st = out ? mil_print_file(p, out, &err) : mil_print(p, stdout, &err);
    mil_program_free(p);
    return st ? cli_fail(&err) : 0;
}

/* --- info ---------------------------------------------------------------- */

typedef struct {
    const mil_program *prog;
    uint64_t blob_bytes[MIL_DT_COUNT], inline_bytes[MIL_DT_COUNT];
    int blobs[MIL_DT_COUNT];
    /* distinct (path, offset) pairs already counted */
    const char **seen_path;
    uint64_t *seen_off;
    int n_seen, cap_seen;
} weight_ctx;

/* 1 the first time a BLOBFILE (path, offset) is met, 0 after (or when
 * out of memory: the figure is then a lower bound). */
static int first_sighting(weight_ctx *c, const mil_value *v) {
    for (int i = 0; i < c->n_seen; i++)
        if (c->seen_off[i] == v->blob_offset && !strcmp(c->seen_path[i], v->blob_path)) return 0;
    if (c->n_seen == c->cap_seen) {
        int cap = c->cap_seen ? 2 * c->cap_seen : 64;
        const char **sp = realloc(c->seen_path, (size_t)cap * sizeof *sp);
        if (sp) c->seen_path = sp;
        uint64_t *so = realloc(c->seen_off, (size_t)cap * sizeof *so);
        if (so) c->seen_off = so;
        if (!sp || !so) return 0;
        c->cap_seen = cap;
    }
    c->seen_path[c->n_seen] = v->blob_path;
    c->seen_off[c->n_seen++] = v->blob_offset;
    return 1;
}

static void count_weight(void *vctx, const mil_value *v, const mil_op *op) {
    weight_ctx *c = vctx;
    if (!v->type || v->type->kind != MIL_TYPE_TENSOR || v->type->dtype == MIL_DT_STRING) return;
    mil_dtype dt = v->type->dtype;
    if (v->kind == MIL_VALUE_BLOB) {
        if (!first_sighting(c, v)) return;
        int64_t n = mil_type_numel(v->type);
        c->blob_bytes[dt] += mil_blob_payload_bytes(dt, n > 0 ? (uint64_t)n : 0, NULL);
        c->blobs[dt]++;
    } else if (v->kind == MIL_VALUE_TENSOR && op && !strcmp(op->type, "const")) {
        int bits = mil_dtype_bits(dt);
        c->inline_bytes[dt] += (v->n * (uint64_t)bits + 7) / 8;
    }
}

static uint64_t value_bytes(const mil_type *t) {
    int64_t n = t && t->kind == MIL_TYPE_TENSOR ? mil_type_numel(t) : -1;
    return n > 0 ? mil_blob_payload_bytes(t->dtype, (uint64_t)n, NULL) : 0;
}

/* The palettized weights (constexpr_lut_to_dense, either form), each counted
 * once however many functions expand it: dense size vs indices + tables. */
static void print_palettized(const mil_program *p) {
    weight_ctx seen = {.prog = p};
    uint64_t n = 0, dense = 0, stored = 0;
    for (int f = 0; f < p->n_functions; f++)
        for (int k = 0; k < p->functions[f]->n_ops; k++) {
            const mil_op *op = p->functions[f]->ops[k];
            if (strcmp(op->type, "constexpr_lut_to_dense") || op->n_outputs != 1) continue;
            const mil_var *iv = mil_op_input(op, "indices"), *lv = mil_op_input(op, "lut");
            const mil_value *ind = iv ? iv->cval : mil_op_attr(op, "indices");
            const mil_value *lut = lv ? lv->cval : mil_op_attr(op, "lut");
            if (!ind || !lut) continue;
            if (ind->kind == MIL_VALUE_BLOB && !first_sighting(&seen, ind)) continue;
            n++;
            dense += value_bytes(op->outputs[0]->type);
            stored += value_bytes(ind->type) + value_bytes(lut->type);
        }
    free(seen.seen_path);
    free(seen.seen_off);
    if (!n) return;
    printf("palettized weights (constexpr_lut_to_dense, distinct): %llu\n", (unsigned long long)n);
    printf("  dense    %12llu bytes\n  stored   %12llu bytes (indices + tables)\n",
           (unsigned long long)dense, (unsigned long long)stored);
    printf("  saved    %12lld bytes (%.1f%% of dense)\n", (long long)dense - (long long)stored,
           dense ? 100.0 * ((double)dense - (double)stored) / (double)dense : 0.0);
}

/* A program inside a bundle (BUNDLE/<program>/model.mil): the palettize
 * settings its manifest.json records. */
static void print_bundle_palettize(const char *mil_path) {
    char dir[4096], mf[4200];
    snprintf(dir, sizeof dir, "%s", mil_path);
    for (int up = 0; up < 2; up++) {
        char *s = strrchr(dir, '/');
        if (s)
            *s = 0;
        else
            snprintf(dir, sizeof dir, ".");
    }
    snprintf(mf, sizeof mf, "%s/manifest.json", dir);
    if (!nc_file_exists(mf)) return;
    lower_palette_options o;
    nc_error err;
    char line[256];
    if (lower_bundle_palettize(dir, &o, &err)) {
        fprintf(stderr, "warning: %s\n", err.msg);
        return;
    }
    lower_palette_describe(&o, line, sizeof line);
    printf("bundle %s (manifest.json): %s\n", dir, line);
}

typedef struct {
    const char *type;
    int count;
} hist_entry;

static int hist_cmp(const void *a, const void *b) {
    const hist_entry *x = a, *y = b;
    if (x->count != y->count) return y->count - x->count;
    return strcmp(x->type, y->type);
}

static void print_vars(const char *label, mil_var *const *vars, int n) {
    char buf[512];
    printf("  %s:\n", label);
    for (int i = 0; i < n; i++)
        printf("    %-24s %s\n", vars[i]->name, mil_type_str(vars[i]->type, buf, sizeof buf));
    if (!n) printf("    (none)\n");
}

static int cmd_info(int argc, char **argv) {
    const char *in = NULL;
    const cli_opt opts[] = {CLI_ENDROW};
    const cli_command cmd = {.name = "mil info",
                             .usage = "FILE.mil",
                             .about = "Functions, I/O shapes, op histogram and weight bytes by "
                                      "dtype.\n",
                             .opts = {opts},
                             .pos = &in,
                             .pos_name = "FILE.mil",
                             .min_pos = 1,
                             .max_pos = 1};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    nc_error err;
    mil_program *p;
    if (mil_parse_file(in, &p, &err)) return cli_fail(&err);
    const mil_value *bi = mil_program_attr(p, "buildInfo");
    printf("%s: program(%s), %d function%s\n", in, p->version, p->n_functions,
           p->n_functions == 1 ? "" : "s");
    if (bi && bi->kind == MIL_VALUE_DICT)
        for (size_t i = 0; i < bi->n; i++) {
            const char *k = mil_value_str(bi->items[2 * i]),
                       *v = mil_value_str(bi->items[2 * i + 1]);
            if (k && v) printf("  buildInfo %s = %s\n", k, v);
        }
    for (int f = 0; f < p->n_functions; f++) {
        const mil_function *fn = p->functions[f];
        printf("function %s<%s>: %d ops\n", fn->name, fn->opset, fn->n_ops);
        for (int i = 0; i < fn->n_attrs; i++)
            printf("  attribute %s\n", fn->attrs[i].name);
        print_vars("inputs", fn->inputs, fn->n_inputs);
        print_vars("outputs", fn->outputs, fn->n_outputs);
        hist_entry *h = calloc((size_t)(fn->n_ops ? fn->n_ops : 1), sizeof *h);
        int nh = 0;
        for (int k = 0; h && k < fn->n_ops; k++) {
            int j = 0;
            while (j < nh && strcmp(h[j].type, fn->ops[k]->type))
                j++;
            if (j == nh) h[nh++].type = fn->ops[k]->type;
            h[j].count++;
        }
        if (h) qsort(h, (size_t)nh, sizeof *h, hist_cmp);
        printf("  ops:");
        for (int j = 0; j < nh; j++)
            printf(" %s %d%s", h[j].type, h[j].count, j + 1 < nh ? "," : "\n");
        if (!nh) printf(" (none)\n");
        free(h);
    }
    weight_ctx wc = {.prog = p};
    mil_program_visit_values(p, count_weight, &wc);
    uint64_t total = 0;
    printf("weights (BLOBFILE, distinct):\n");
    for (int dt = 1; dt < MIL_DT_COUNT; dt++)
        if (wc.blobs[dt]) {
            printf("  %-8s %12llu bytes in %d blob%s\n", mil_dtype_name((mil_dtype)dt),
                   (unsigned long long)wc.blob_bytes[dt], wc.blobs[dt],
                   wc.blobs[dt] == 1 ? "" : "s");
            total += wc.blob_bytes[dt];
        }
    printf("  total    %12llu bytes\n", (unsigned long long)total);
    printf("inline constants:\n");
    uint64_t total_inline = 0;
    for (int dt = 1; dt < MIL_DT_COUNT; dt++)
        if (wc.inline_bytes[dt]) {
            printf("  %-8s %12llu bytes\n", mil_dtype_name((mil_dtype)dt),
                   (unsigned long long)wc.inline_bytes[dt]);
            total_inline += wc.inline_bytes[dt];
        }
    printf("  total    %12llu bytes\n", (unsigned long long)total_inline);
    print_palettized(p);
    print_bundle_palettize(in);
    free(wc.seen_path);
    free(wc.seen_off);
    mil_program_free(p);
    return 0;
}

/* --- bundle -------------------------------------------------------------- */

/* One row of the --batch table: parse, blobs, ANE rules. */
static int batch_row(const char *path) {
    nc_error err;
    mil_program *p;
    int n_ops = 0;
    if (mil_parse_file(path, &p, &err)) {
        printf("%-6s %6s %6s  %s  parse: %s\n", "FAIL", "-", "-", path, err.msg);
        return 0;
    }
    for (int f = 0; f < p->n_functions; f++)
        n_ops += p->functions[f]->n_ops;
    mil_diagnostics d = {0};
    mil_check_options opt = {.target_ane = 1};
    int pass = 0;
    if (mil_check_program(p, &opt, &d, &err)) {
        printf("%-6s %6d %6d  %s  check: %s\n", "FAIL", p->n_functions, n_ops, path, err.msg);
    } else {
        pass = d.n_errors == 0;
        const mil_diag *first = NULL;
        for (int i = 0; i < d.n && !first; i++)
            if (d.items[i].severity == MIL_SEV_ERROR) first = &d.items[i];
        printf("%-6s %6d %6d  %s  %d error%s, %d warning%s", pass ? "PASS" : "FAIL", p->n_functions,
               n_ops, path, d.n_errors, d.n_errors == 1 ? "" : "s", d.n_warnings,
               d.n_warnings == 1 ? "" : "s");
        if (first) printf("; first: line %d: %s [%s]", first->line, first->msg, first->rule);
        printf("\n");
    }
    mil_diagnostics_free(&d);
    mil_program_free(p);
    return pass;
}

/* The bundle is complete either way; the checker's findings (op table
 * rules, then the ANE rules) are reported so the user knows what the
 * compiler will make of it. Returns 0: findings are not a bundling error. */
static int check_summary(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/model.mil", dir);
    nc_error err;
    mil_program *p;
    if (mil_parse_file(path, &p, &err)) return cli_fail(&err);
    for (int ane = 0; ane < 2; ane++) {
        mil_diagnostics d = {0};
        mil_check_options opt = {.target_ane = ane};
        if (mil_check_program(p, &opt, &d, &err) == NC_OK)
            printf("check%s: %d error%s, %d warning%s%s\n", ane ? " --target ane" : "", d.n_errors,
                   d.n_errors == 1 ? "" : "s", d.n_warnings, d.n_warnings == 1 ? "" : "s",
                   d.n_errors + d.n_warnings ? " (nectar mil check for details)" : "");
        mil_diagnostics_free(&d);
    }
    mil_program_free(p);
    return 0;
}

static int cmd_bundle(int argc, char **argv) {
    const char *out = NULL;
    int batch = 0, n_files = 0;
    const char **files = calloc((size_t)argc, sizeof *files);
    if (!files) return cli_failf("mil bundle: out of memory");
    const cli_opt opts[] = {
        CLI_OPT("-o", "--out", CLI_STRING, "DIR", "the folder to write (one FILE.mil)", &out),
        CLI_OPT(NULL, "--batch", CLI_FLAG, NULL, "a table of which FILES pass the ANE rules",
                &batch),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "mil bundle",
        .usage = "FILE.mil -o DIR\n       nectar mil bundle --batch FILES...",
        .about = "Copies a .mil file and the weight files its BLOBFILEs name (relative to the\n"
                 "file's folder) into a fresh folder DIR laid out as Apple's compiler expects\n"
                 "(DIR/model.mil, DIR/weights/weight.bin), rewrites the paths and checks the\n"
                 "result. --batch prints one row per file: PASS/FAIL against the ANE rules,\n"
                 "functions, ops, and the first reason a file fails.\n",
        .opts = {opts},
        .pos = files,
        .max_pos = argc,
        .n_pos = &n_files};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) {
        free(files);
        return rc;
    }
    if (batch) {
        int passed = 0;
        if (!n_files) {
            free(files);
            return cli_usage_error(&cmd, "--batch: no files given");
        }
        printf("%-6s %6s %6s  %s\n", "ANE", "funcs", "ops", "file  reason");
        for (int i = 0; i < n_files; i++)
            passed += batch_row(files[i]);
        printf("%d of %d file%s pass the ANE rules\n", passed, n_files, n_files == 1 ? "" : "s");
        rc = passed == n_files ? 0 : 1;
    } else if (n_files != 1 || !out) {
        rc = cli_usage_error(&cmd, "one FILE.mil and -o DIR, or --batch FILES...");
    } else {
        nc_error err;
        mil_bundle_report rep;
        if (mil_bundle(files[0], out, &rep, &err)) {
            rc = cli_fail(&err);
        } else {
            printf("%s/model.mil\n", out);
            for (int i = 0; i < rep.n_files; i++)
                printf("%s/weights/%s  <- %s\n", out, rep.to[i], rep.from[i]);
            printf("%d BLOBFILE reference%s checked\n", rep.n_blob_refs,
                   rep.n_blob_refs == 1 ? "" : "s");
            rc = check_summary(out);
        }
    }
    free((void *)files);
    return rc;
}

/* --- dispatch ------------------------------------------------------------ */

static const struct {
    const char *name;
    int (*fn)(int, char **);
} subcommands[] = {
    {"check", cmd_mil_check}, {"run", cmd_mil_run},   {"fmt", cmd_fmt},
    {"info", cmd_info},       {"bundle", cmd_bundle},
};

int cmd_mil(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(argv[1], subcommands[i].name)) return subcommands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "nectar mil: unknown command '%s'\n", argv[1]);
    return 2;
}
