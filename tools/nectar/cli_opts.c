/* The option-table parser (cli_opts.h): matching names, checking values,
 * the generated --help and the one wording of every usage error. */
#include "cli_opts.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_model.h"

static int verror(const char *cmd, const char *fmt, va_list ap) {
    fprintf(stderr, "nectar %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    return 2;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static int
error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verror(cmd, fmt, ap);
    va_end(ap);
    return 2;
}

int cli_usage_error(const cli_command *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verror(c->name, fmt, ap);
    va_end(ap);
    return 2;
}

/* The name errors use: the long one when there is one. */
static const char *opt_name(const cli_opt *o) {
    return o->l ? o->l : o->s;
}

/* An integer at the start of s; -1 when there is none or it overflows. */
static int scan_int(const char *s, long long *out, const char **end_out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s) return -1;
    *out = v;
    *end_out = end;
    return 0;
}

int cli_parse_int_value(const char *cmd, const char *opt, const char *v, long long min,
                        long long max, long long *out) {
    const char *end;
    long long x;
    if (scan_int(v, &x, &end) || *end || x < min || x > max) {
        error(cmd, "%s: '%s' is not an integer in [%lld, %lld]", opt, v, min, max);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_parse_int_list_value(const char *cmd, const char *opt, const char *v, long long min,
                             long long max, int cap, int *vals, int *n) {
    *n = 0;
    for (const char *p = v;;) {
        const char *end;
        long long x;
        if (scan_int(p, &x, &end) || (*end && *end != ',') || x < min || x > max) {
            error(cmd, "%s: '%s' is not a list of integers in [%lld, %lld]", opt, v, min, max);
            return -1;
        }
        if (*n == cap) {
            error(cmd, "%s: '%s' has more than %d values", opt, v, cap);
            return -1;
        }
        vals[(*n)++] = (int)x;
        if (!*end) return 0;
        p = end + 1;
    }
}

static int parse_double(const char *cmd, const cli_opt *o, const char *name, const char *v,
                        double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    int ok = !errno && end != v && !*end && !isnan(x) && (!isinf(x) || o->allow_inf) &&
             (o->open_lo ? x > o->lo : x >= o->lo) && x <= o->hi;
    if (!ok) {
        error(cmd, "%s: '%s' is not a number in %c%g, %g%c", name, v, o->open_lo ? '(' : '[', o->lo,
              o->hi, isinf(o->hi) && !o->allow_inf ? ')' : ']');
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_choice(const char *cmd, const cli_opt *o, const char *name, const char *v,
                        int *out) {
    size_t len = strlen(v);
    int i = 0;
    for (const char *p = o->choices;; i++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && !strncmp(p, v, n)) {
            *out = i;
            return 0;
        }
        if (!bar) break;
        p = bar + 1;
    }
    error(cmd, "%s: '%s' is not one of %s", name, v, o->choices);
    return -1;
}

/* Stores the value v of option o (typed as `name`); 0 or -1 after the
 * error line. */
static int set_value(const char *cmd, const cli_opt *o, const char *name, const char *v) {
    long long x;
    double d;
    if (o->l && !strcmp(o->l, "--model") && !(v = cli_model_path(cmd, v))) return -1;
    switch (o->kind) {
    case CLI_INT:
        if (cli_parse_int_value(cmd, name, v, o->min, o->max, &x)) return -1;
        *(int *)o->dst = (int)x;
        return 0;
    case CLI_INT64:
        if (cli_parse_int_value(cmd, name, v, o->min, o->max, &x)) return -1;
        *(int64_t *)o->dst = (int64_t)x;
        return 0;
    case CLI_DOUBLE:
        return parse_double(cmd, o, name, v, (double *)o->dst);
    case CLI_FLOAT:
        if (parse_double(cmd, o, name, v, &d)) return -1;
        *(float *)o->dst = (float)d;
        return 0;
    case CLI_STRING:
        *(const char **)o->dst = v;
        return 0;
    case CLI_CHOICE:
        return parse_choice(cmd, o, name, v, (int *)o->dst);
    case CLI_INT_LIST:
        return cli_parse_int_list_value(cmd, name, v, o->min, o->max, o->cap, o->dst, o->count);
    case CLI_STRINGS:
        if (*o->count == o->cap) {
            error(cmd, "%s: given more than %d times", name, o->cap);
            return -1;
        }
        ((const char **)o->dst)[(*o->count)++] = v;
        return 0;
    case CLI_END:
    case CLI_FLAG:
        break;
    }
    return -1;
}

/* The option named by arg (up to len characters: "--x=v" names "--x"),
 * and where it sits: table g, row k. */
static const cli_opt *find(const cli_command *c, const char *arg, size_t len, int *g, int *k) {
    for (*g = 0; *g < CLI_MAX_GROUPS && c->opts[*g]; ++*g)
        for (*k = 0; *k < CLI_MAX_OPTS && c->opts[*g][*k].kind != CLI_END; ++*k) {
            const cli_opt *o = &c->opts[*g][*k];
            if ((o->s && strlen(o->s) == len && !strncmp(o->s, arg, len)) ||
                (o->l && strlen(o->l) == len && !strncmp(o->l, arg, len)))
                return o;
        }
    return NULL;
}

#define HELP_COLUMN 24
#define HELP_WIDTH 100

void cli_help(const cli_command *c, FILE *f) {
    fprintf(f, "usage: nectar %s %s\n", c->name, c->usage ? c->usage : "[options]");
    if (c->about) fprintf(f, "\n%s", c->about);
    if (c->about && c->about[strlen(c->about) - 1] != '\n') fputc('\n', f);
    fprintf(f, "\noptions:\n");
    for (int g = 0; g < CLI_MAX_GROUPS && c->opts[g]; g++)
        for (const cli_opt *o = c->opts[g]; o->kind != CLI_END; o++) {
            if (o->hidden) continue;
            char head[128];
            snprintf(head, sizeof head, "  %s%s%s%s%s", o->s ? o->s : "    ",
                     o->s && o->l ? ", " : "", o->l ? o->l : "", o->meta ? " " : "",
                     o->meta ? o->meta : "");
            int w = (int)strlen(head);
            fputs(head, f);
            if (w >= HELP_COLUMN) {
                fputc('\n', f);
                w = 0;
            }
            /* each line of the help at the column, long ones broken at a space */
            for (const char *p = o->help ? o->help : ""; *p;) {
                const char *nl = strchr(p, '\n');
                int n = nl ? (int)(nl - p) : (int)strlen(p), skip = nl != NULL;
                if (n > HELP_WIDTH - HELP_COLUMN) {
                    int cut = HELP_WIDTH - HELP_COLUMN;
                    while (cut > 0 && p[cut] != ' ')
                        cut--;
                    if (cut > 0) n = cut, skip = 1;
                }
                fprintf(f, "%*s%.*s\n", HELP_COLUMN - w, "", n, p);
                w = 0;
                p += n + skip;
            }
            if (!o->help || !*o->help) fputc('\n', f);
        }
    fprintf(f, "  -h, --help            this help\n");
}

static int is_option(const char *a) {
    return a[0] == '-' && a[1] != '\0';
}

int cli_parse(const cli_command *c, int argc, char **argv) {
    int n_pos = 0, options_done = 0;
    char given[CLI_MAX_GROUPS][CLI_MAX_OPTS] = {{0}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options_done || !is_option(a)) {
            if (n_pos == c->max_pos) return error(c->name, "unexpected argument '%s'", a);
            c->pos[n_pos++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            options_done = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cli_help(c, stdout);
            return 0;
        }
        const char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
        int len = eq ? (int)(eq - a) : (int)strlen(a), g, k;
        const cli_opt *o = find(c, a, (size_t)len, &g, &k);
        if (!o) return error(c->name, "unknown option '%.*s'", len, a);
        given[g][k] = 1;
        if (o->seen) *o->seen = 1;
        char name[64]; /* as typed: -t or --threads */
        snprintf(name, sizeof name, "%.*s", len, a);
        if (o->kind == CLI_FLAG) {
            if (eq) return error(c->name, "%s takes no value", name);
            *(int *)o->dst = 1;
            continue;
        }
        const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!v) return error(c->name, "%s needs a value", name);
        if (set_value(c->name, o, name, v)) return 2;
    }
    if (c->n_pos) *c->n_pos = n_pos;
    if (n_pos < c->min_pos) return error(c->name, "no %s given", c->pos_name);
    for (int g = 0; g < CLI_MAX_GROUPS && c->opts[g]; g++)
        for (int k = 0; c->opts[g][k].kind != CLI_END; k++) {
            const cli_opt *o = &c->opts[g][k];
            if (o->required && !given[g][k])
                return error(c->name, "%s%s%s is required", opt_name(o), o->meta ? " " : "",
                             o->meta ? o->meta : "");
        }
    return CLI_GO;
}
