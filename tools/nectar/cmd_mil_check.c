/* `nectar mil check FILE.mil|DIR [--target ane]`: parses and checks MIL
 * programs and prints every problem as "file:line: severity: message
 * [rule]". A folder is a model folder (model.mil inside) or a tree of .mil
 * files, each checked in turn. Exits non-zero when any error is found;
 * warnings alone do not fail. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mmap.h"
#include "cli_opts.h"
#include "commands.h"
#include "mil/ane_profile.h"
#include "mil/ane_rules.h"
#include "mil/check.h"
#include "mil/parse.h"

static void list_rules(void) {
    int n;
    const mil_ane_rule *r = mil_ane_rules(&n);
    for (int i = 0; i < n; i++)
        printf("%-22s %-7s %s\n%22s         rewrite: %s\n%22s         source: %s\n", r[i].id,
               r[i].severity == MIL_SEV_ERROR ? "error" : "warning", r[i].description, "",
               r[i].suggestion ? r[i].suggestion : "-", "", r[i].source);
}

typedef struct path_list {
    char **p;
    int n, cap;
} path_list;

static int add_path(path_list *l, const char *s) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **q = realloc(l->p, (size_t)cap * sizeof *q);
        if (!q) return -1;
        l->p = q;
        l->cap = cap;
    }
    l->p[l->n] = strdup(s);
    return l->p[l->n] ? (l->n++, 0) : -1;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Every *.mil under dir (depth-limited; symlinks not followed). */
static int walk(const char *dir, path_list *out, int depth) {
    if (depth > 16) return 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st)) continue;
        if (S_ISDIR(st.st_mode))
            rc = walk(path, out, depth + 1);
        else if (S_ISREG(st.st_mode) && ends_with(e->d_name, ".mil"))
            rc = add_path(out, path);
    }
    closedir(d);
    return rc;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Prints a parse error as "file:line:col: error: what [parse]" (the parser
 * says "file:line:col: what"); other failures as "file: error: what". */
static void print_parse_error(const char *path, const char *msg) {
    size_t n = strlen(path);
    const char *p = msg + n;
    if (!strncmp(msg, path, n) && *p == ':') {
        const char *q = p + 1;
        int fields = 0;
        while (fields < 2 && *q >= '0' && *q <= '9') {
            while (*q >= '0' && *q <= '9')
                q++;
            if (*q != ':') break;
            q++;
            fields++;
        }
        if (fields == 2) {
            printf("%.*s error:%s [parse]\n", (int)(q - msg), msg, q);
            return;
        }
    }
    printf("%s: error: %s [parse]\n", path, msg);
}

/* Checks one file; adds its counts. Returns -1 when the checker could not run. */
static int check_file(const char *path, const mil_check_options *opt,
                      const mil_ane_profile *profile, int quiet, int *n_err, int *n_warn) {
    nc_error err;
    mil_program *prog;
    if (mil_parse_file(path, &prog, &err) != NC_OK) {
        if (!quiet) print_parse_error(path, err.msg);
        (*n_err)++;
        return 0;
    }
    mil_diagnostics d = {0};
    nc_status st = mil_check_program_profile(prog, opt, profile, &d, &err);
    if (st == NC_OK && !quiet) mil_diagnostics_print(&d, stdout);
    *n_err += d.n_errors;
    *n_warn += d.n_warnings;
    mil_diagnostics_free(&d);
    mil_program_free(prog);
    if (st != NC_OK) {
        cli_fail(&err);
        return -1;
    }
    return 0;
}

int cmd_mil_check(int argc, char **argv) {
    mil_check_options opt = {0};
    const char *target = NULL, *profile_path = NULL;
    int quiet = 0, list = 0, ane = -1;
    const cli_opt opts[] = {
        CLI_OPT(NULL, "--target", CLI_CHOICE, "ane",
                "also apply the ANE rules (errors: rejected or wrong on the ANE;\n"
                "warnings: ops that fail on some chips, with the rewrite)",
                &ane, .choices = "ane"),
        CLI_OPT(NULL, "--fn", CLI_STRING, "NAME", "check only function NAME", &opt.function),
        CLI_OPT(NULL, "--skip", CLI_STRING, "RULES", "comma-separated rule ids to leave out",
                &opt.skip_rules),
        CLI_OPT(NULL, "--ane-profile", CLI_STRING, "FILE",
                "settle the chip-dependent ANE rules by a probe profile\n"
                "(`nectar ane probe --json FILE`): failing cases become errors",
                &profile_path),
        CLI_OPT(NULL, "--list-rules", CLI_FLAG, NULL, "print the ANE rule table", &list),
        CLI_OPT("-q", "--quiet", CLI_FLAG, NULL, "print only the summary line", &quiet),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "mil check",
        .usage = "FILE.mil|DIR [--target ane] [--fn NAME] [--skip RULE,...]\n"
                 "       nectar mil check --list-rules",
        .about =
            "Reports every problem of the program(s) with its line: unknown ops or arguments,\n"
            "missing or non-constant arguments, dtypes the opset does not allow, declared\n"
            "types that disagree with inference, broken BLOBFILE references.\n",
        .opts = {opts},
        .pos = &target,
        .pos_name = "FILE.mil or DIR",
        .max_pos = 1};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    if (list) {
        list_rules();
        return 0;
    }
    opt.target_ane = ane == 0;
    if (!target) return cli_usage_error(&cmd, "no FILE.mil or DIR given");
    static mil_ane_profile profile;
    nc_error perr = {0};
    if (profile_path && mil_ane_profile_read(profile_path, &profile, &perr)) return cli_fail(&perr);
    path_list files = {0};
    rc = 0;
    if (nc_is_dir(target)) {
        char model[4096];
        snprintf(model, sizeof model, "%s/model.mil", target);
        rc = nc_file_exists(model) ? add_path(&files, model) : walk(target, &files, 0);
        if (!rc && files.n == 0)
            rc = cli_failf("mil check: no .mil files under %s", target);
        else if (rc < 0)
            rc = cli_failf("mil check: out of memory");
    } else if (!nc_file_exists(target)) {
        rc = cli_failf("mil check: %s: no such file or folder", target);
    } else {
        rc = add_path(&files, target) ? cli_failf("mil check: out of memory") : 0;
    }
    if (rc) goto done;
    qsort(files.p, (size_t)files.n, sizeof *files.p, cmp_str);
    int n_err = 0, n_warn = 0, n_bad_files = 0;
    for (int i = 0; i < files.n; i++) {
        int before = n_err;
        if (check_file(files.p[i], &opt, profile_path ? &profile : NULL, quiet, &n_err, &n_warn)) {
            rc = 1;
            goto done;
        }
        if (n_err > before) n_bad_files++;
    }
    if (files.n > 1 || quiet)
        printf("%d file%s checked: %d with errors; %d error%s, %d warning%s\n", files.n,
               files.n == 1 ? "" : "s", n_bad_files, n_err, n_err == 1 ? "" : "s", n_warn,
               n_warn == 1 ? "" : "s");
    rc = n_err ? 1 : 0;
done:
    for (int i = 0; i < files.n; i++)
        free(files.p[i]);
    free(files.p);
    return rc;
}
