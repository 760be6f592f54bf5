/* The one command-line parser of `nectar`: each subcommand describes its
 * options as a table (names, kind, range, help) and cli_parse walks argv
 * against it. Numbers are range-checked (the whole string must parse),
 * `--help` prints the generated help on stdout (exit 0), and every usage
 * error is one line on stderr in one wording (exit 2):
 *   nectar CMD: unknown option '--foo'
 *   nectar CMD: --x needs a value
 *   nectar CMD: --x: 'abc' is not an integer in [1, 1024]
 *   nectar CMD: --x: 'abc' is not a number in [0, 1]
 *   nectar CMD: --x: 'abc' is not one of ane|cpu
 *   nectar CMD: --x is required
 *   nectar CMD: unexpected argument 'abc' */
#ifndef NECTAR_CLI_OPTS_H
#define NECTAR_CLI_OPTS_H

#include <stdint.h>
#include <stdio.h>

typedef enum cli_kind {
    CLI_END = 0,  /* the row that ends a table */
    CLI_FLAG,     /* no value; *(int *)dst = 1 */
    CLI_INT,      /* *(int *)dst, in [min, max] */
    CLI_INT64,    /* *(int64_t *)dst, in [min, max] */
    CLI_DOUBLE,   /* *(double *)dst, in [lo, hi] */
    CLI_FLOAT,    /* *(float *)dst, in [lo, hi] */
    CLI_STRING,   /* *(const char **)dst = the argument */
    CLI_CHOICE,   /* *(int *)dst = index of the value in choices "a|b|c" */
    CLI_INT_LIST, /* "A,B,C": ((int *)dst)[0..*count), each in [min, max], at most cap */
    CLI_STRINGS,  /* repeatable: ((const char **)dst)[0..*count), at most cap */
} cli_kind;

/* One option. Either name may be NULL (but not both). */
typedef struct cli_opt {
    const char *s, *l; /* "-m", "--model" */
    cli_kind kind;
    const char *meta; /* the value's name in the help: "DIR", "N" */
    const char *help; /* may hold '\n' for more lines; says the default */
    void *dst;
    long long min, max;  /* CLI_INT, CLI_INT64, CLI_INT_LIST */
    double lo, hi;       /* CLI_DOUBLE, CLI_FLOAT; hi = INFINITY: no upper end */
    int open_lo;         /* lo itself excluded ("must be positive") */
    int allow_inf;       /* "inf" accepted (hi must be INFINITY) */
    const char *choices; /* CLI_CHOICE: "ane|cpu" */
    int *count, cap;     /* CLI_INT_LIST, CLI_STRINGS */
    int *seen;           /* optional: set to 1 when the option is given */
    int required;        /* a usage error when not given */
    int hidden;          /* accepted but left out of --help (test-only options) */
} cli_opt;

/* A row: CLI_OPT("-t", "--threads", CLI_INT, "N", "threads", &n, .min = 1,
 * .max = 64); the fields after dst are named. A table ends with CLI_ENDROW. */
#define CLI_OPT(s_, l_, kind_, meta_, help_, dst_, ...)                                            \
    {                                                                                              \
        .s = (s_), .l = (l_), .kind = (kind_), .meta = (meta_), .help = (help_), .dst = (dst_),    \
        __VA_ARGS__                                                                                \
    }
#define CLI_ENDROW                                                                                 \
    { .kind = CLI_END }

#define CLI_MAX_GROUPS 4
#define CLI_MAX_OPTS 64 /* rows per table */

/* A subcommand: its name as typed ("compile", "mil run"), the usage line
 * after "usage: nectar NAME ", a paragraph printed after it, and up to
 * CLI_MAX_GROUPS option tables (one may be shared between commands), each
 * ended by a CLI_ENDROW row. Positional arguments go to pos[0..*n_pos) (n_pos
 * may be NULL): at least min_pos (else "no POS_NAME given"), at most max_pos
 * (none accepted when max_pos is 0); `--` ends the options. */
typedef struct cli_command {
    const char *name, *usage, *about;
    const cli_opt *opts[CLI_MAX_GROUPS];
    const char **pos, *pos_name;
    int min_pos, max_pos, *n_pos;
} cli_command;

#define CLI_GO (-1)

/* Parses argv[1..argc) (argv[0] is the subcommand). Returns CLI_GO when the
 * command should go on, else its exit code: 0 after printing the help, 2
 * after saying what is wrong. */
int cli_parse(const cli_command *c, int argc, char **argv);

/* Prints the generated help of c to f. */
void cli_help(const cli_command *c, FILE *f);

/* Prints "nectar NAME: <message>" to stderr and returns 2 (a usage error
 * the table cannot express, e.g. two options that exclude each other). */
int cli_usage_error(const cli_command *c, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The value checks cli_parse uses, for values that arrive another way (a
 * "key=value" item, a list element): 0 and the value, or -1 after the
 * one-line usage error naming `opt`. */
int cli_parse_int_value(const char *cmd, const char *opt, const char *v, long long min,
                        long long max, long long *out);
int cli_parse_int_list_value(const char *cmd, const char *opt, const char *v, long long min,
                             long long max, int cap, int *vals, int *n);

#endif
