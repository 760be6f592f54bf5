/* MIL text parser (see parse.h): a lexer that turns the whole text into
 * tokens first (so the parser can look two tokens ahead), then recursive
 * descent over the grammar of docs/mil.md. Literal data is stored as the
 * declared dtype; every failure names file:line:col and what was expected. */
#include "mil/parse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "base/mmap.h"
#include "mil/ops.h"

#define MAX_DEPTH 64 /* nesting of types and literals: bounds recursion */
#define MAX_RANK 64

typedef enum { T_EOF, T_IDENT, T_NUM, T_STR, T_PUNCT } tok_kind;

typedef struct {
    tok_kind kind;
    const char *s; /* start in the text */
    int len;
    int line, col;
    char *str; /* T_STR: unescaped contents (heap) */
} token;

typedef struct {
    const char *src; /* file name for messages */
    token *toks;
    int n, cap, pos;
    mil_program *prog;
    mil_function *fn; /* function being parsed */
    nc_error *err;
    int depth;
} parser;

/* --- lexer --------------------------------------------------------------- */

static int is_ident_start(int c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '@';
}
static int is_ident_char(int c) {
    return is_ident_start(c) || (c >= '0' && c <= '9');
}
static int is_digit(int c) {
    return c >= '0' && c <= '9';
}
static int is_hex(int c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static nc_status lex_fail(parser *p, int line, int col, const char *what) {
    return nc_fail(p->err, NC_ERR_FORMAT, "%s:%d:%d: %s", p->src, line, col, what);
}

static nc_status push(parser *p, token t) {
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 1024;
        token *nt = realloc(p->toks, (size_t)cap * sizeof *nt);
        if (!nt) return nc_fail(p->err, NC_ERR_NOMEM, "%s: out of memory", p->src);
        p->toks = nt;
        p->cap = cap;
    }
    p->toks[p->n++] = t;
    return NC_OK;
}

/* Scans a number at s (optional '-', decimal or C99 hex float, or inf/nan);
 * returns its length, 0 if none. */
static int scan_number(const char *s, const char *end) {
    const char *q = s;
    if (q < end && *q == '-') q++;
    if (end - q >= 3 && (!strncmp(q, "inf", 3) || !strncmp(q, "nan", 3)) &&
        (end - q == 3 || !is_ident_char((unsigned char)q[3])))
        return (int)(q + 3 - s);
    if (q >= end || !(is_digit((unsigned char)*q) ||
                      (*q == '.' && q + 1 < end && is_digit((unsigned char)q[1]))))
        return 0;
    int hex = end - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X');
    if (hex) q += 2;
    while (q < end && (hex ? is_hex((unsigned char)*q) : is_digit((unsigned char)*q)))
        q++;
    if (q < end && *q == '.') {
        q++;
        while (q < end && (hex ? is_hex((unsigned char)*q) : is_digit((unsigned char)*q)))
            q++;
    }
    if (q < end && (hex ? (*q == 'p' || *q == 'P') : (*q == 'e' || *q == 'E'))) {
        const char *e = q + 1;
        if (e < end && (*e == '+' || *e == '-')) e++;
        if (e < end && is_digit((unsigned char)*e)) {
            while (e < end && is_digit((unsigned char)*e))
                e++;
            q = e;
        }
    }
    return (int)(q - s);
}

static nc_status lex(parser *p, const char *text, size_t len) {
    const char *s = text, *end = text + len;
    if (len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) s += 3; /* a UTF-8 byte-order mark */
    int line = 1;
    const char *line_start = s;
    while (1) {
        while (s < end) { /* whitespace and // comments (seen in hand-written files) */
            if (*s == '\n') {
                line++;
                line_start = ++s;
            } else if (*s == ' ' || *s == '\t' || *s == '\r') {
                s++;
            } else if (*s == '/' && s + 1 < end && s[1] == '/') {
                while (s < end && *s != '\n')
                    s++;
            } else {
                break;
            }
        }
        token t = {0};
        t.s = s;
        t.line = line;
        t.col = (int)(s - line_start) + 1;
        if (s >= end) {
            t.kind = T_EOF;
            return push(p, t);
        }
        unsigned char c = (unsigned char)*s;
        int n;
        if (c == '"') {
            size_t cap = 16, k = 0;
            char *buf = malloc(cap);
            if (!buf) return nc_fail(p->err, NC_ERR_NOMEM, "%s: out of memory", p->src);
            const char *q = s + 1;
            for (;; q++) {
                if (q >= end || *q == '\n') {
                    free(buf);
                    return lex_fail(p, t.line, t.col, "unterminated string");
                }
                char ch = *q;
                if (ch == '"') break;
                if (ch == '\\') {
                    if (++q >= end) continue; /* reported as unterminated */
                    switch (*q) {
                    case 'n':
                        ch = '\n';
                        break;
                    case 't':
                        ch = '\t';
                        break;
                    case 'r':
                        ch = '\r';
                        break;
                    case '"':
                    case '\\':
                    case '\'':
                        ch = *q;
                        break;
                    case 'x':
                        if (q + 2 < end && is_hex((unsigned char)q[1]) &&
                            is_hex((unsigned char)q[2])) {
                            char hx[3] = {q[1], q[2], 0};
                            ch = (char)strtol(hx, NULL, 16);
                            q += 2;
                            break;
                        }
                        /* fall through */
                    default:
                        free(buf);
                        return lex_fail(p, line, (int)(q - line_start), "unknown escape in string");
                    }
                }
                if (ch == 0) {
                    free(buf);
                    return lex_fail(p, line, (int)(q - line_start) + 1, "NUL byte in string");
                }
                if (k + 2 > cap) {
                    char *nb = realloc(buf, cap *= 2);
                    if (!nb) {
                        free(buf);
                        return nc_fail(p->err, NC_ERR_NOMEM, "%s: out of memory", p->src);
                    }
                    buf = nb;
                }
                buf[k++] = ch;
            }
            buf[k] = 0;
            t.kind = T_STR;
            t.str = buf;
            t.len = (int)(q + 1 - s);
            s = q + 1;
        } else if (c == '-' && s + 1 < end && s[1] == '>') {
            t.kind = T_PUNCT;
            t.len = 2;
            s += 2;
        } else if ((n = scan_number(s, end)) > 0) {
            t.kind = T_NUM;
            t.len = n;
            s += n;
        } else if (is_ident_start(c)) {
            const char *q = s;
            while (q < end && is_ident_char((unsigned char)*q))
                q++;
            t.kind = T_IDENT;
            t.len = (int)(q - s);
            s = q;
        } else if (strchr("()[]{}<>,=;?", c) && c) {
            t.kind = T_PUNCT;
            t.len = 1;
            s++;
        } else {
            char msg[64];
            snprintf(msg, sizeof msg,
                     (c >= 32 && c < 127) ? "unexpected character '%c'" : "unexpected byte 0x%02x",
                     c);
            return lex_fail(p, t.line, t.col, msg);
        }
        if (t.len > 1 << 20) return lex_fail(p, t.line, t.col, "token too long");
        NC_TRY(push(p, t));
    }
}

/* --- token helpers ------------------------------------------------------- */

static const token *peek(parser *p, int k) {
    int i = p->pos + k;
    return &p->toks[i < p->n ? i : p->n - 1];
}
static const token *next(parser *p) {
    const token *t = peek(p, 0);
    if (p->pos < p->n - 1) p->pos++;
    return t;
}
static int is_punct(const token *t, const char *s) {
    return t->kind == T_PUNCT && t->len == (int)strlen(s) && !strncmp(t->s, s, (size_t)t->len);
}
static int is_word(const token *t, const char *s) {
    return t->kind == T_IDENT && t->len == (int)strlen(s) && !strncmp(t->s, s, (size_t)t->len);
}

static nc_status expected(parser *p, const char *what) {
    const token *t = peek(p, 0);
    if (t->kind == T_EOF)
        return nc_fail(p->err, NC_ERR_FORMAT, "%s:%d:%d: expected %s, found end of file", p->src,
                       t->line, t->col, what);
    int n = t->len > 40 ? 40 : t->len;
    return nc_fail(p->err, NC_ERR_FORMAT, "%s:%d:%d: expected %s, found '%.*s'%s", p->src, t->line,
                   t->col, what, n, t->s, t->len > n ? "..." : "");
}

static nc_status at_fail(parser *p, const token *t, const char *msg) {
    return nc_fail(p->err, NC_ERR_FORMAT, "%s:%d:%d: %s", p->src, t->line, t->col, msg);
}

static nc_status expect(parser *p, const char *punct) {
    if (!is_punct(peek(p, 0), punct)) {
        char what[8];
        snprintf(what, sizeof what, "'%s'", punct);
        return expected(p, what);
    }
    next(p);
    return NC_OK;
}

static nc_status oom(parser *p) {
    return nc_fail(p->err, NC_ERR_NOMEM, "%s: out of memory", p->src);
}

static nc_status ident(parser *p, const char *what, const char **out) {
    const token *t = peek(p, 0);
    if (t->kind != T_IDENT) return expected(p, what);
    next(p);
    *out = nc_arena_strndup(&p->prog->arena, t->s, (size_t)t->len);
    return *out ? NC_OK : oom(p);
}

static int tok_is_int(const token *t) {
    if (t->kind != T_NUM) return 0;
    for (int i = 0; i < t->len; i++)
        if (!(is_digit((unsigned char)t->s[i]) || (i == 0 && t->s[i] == '-'))) return 0;
    return 1;
}

static nc_status int_token(parser *p, const char *what, int64_t lo, int64_t hi, int64_t *out) {
    const token *t = peek(p, 0);
    if (!tok_is_int(t)) return expected(p, what);
    char buf[32];
    if (t->len >= (int)sizeof buf) return at_fail(p, t, "integer out of range");
    memcpy(buf, t->s, (size_t)t->len);
    buf[t->len] = 0;
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno || v < lo || v > hi) return expected(p, what);
    next(p);
    *out = v;
    return NC_OK;
}

/* --- types --------------------------------------------------------------- */

static int is_type_word(const token *t) {
    if (t->kind != T_IDENT) return 0;
    static const char *kw[] = {"tensor", "list", "tuple", "dict", "state", "tensor_buffer"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (is_word(t, kw[i])) return 1;
    char buf[16];
    if (t->len >= (int)sizeof buf) return 0;
    memcpy(buf, t->s, (size_t)t->len);
    buf[t->len] = 0;
    return mil_dtype_from_name(buf) != MIL_DT_INVALID;
}

static nc_status parse_dtype(parser *p, mil_dtype *out) {
    const token *t = peek(p, 0);
    char buf[16];
    if (t->kind == T_IDENT && t->len < (int)sizeof buf) {
        memcpy(buf, t->s, (size_t)t->len);
        buf[t->len] = 0;
        *out = mil_dtype_from_name(buf);
        if (*out != MIL_DT_INVALID) {
            next(p);
            return NC_OK;
        }
    }
    return expected(p, "a dtype (fp16, int32, ...)");
}

static nc_status parse_type(parser *p, const mil_type **out);

/* `[d0, d1, ...]` with ints, `?` or symbols. */
static nc_status parse_dims(parser *p, mil_type *t) {
    int64_t dims[MAX_RANK];
    const char *syms[MAX_RANK];
    int rank = 0, has_sym = 0;
    NC_TRY(expect(p, "["));
    if (!is_punct(peek(p, 0), "]")) {
        while (1) {
            if (rank == MAX_RANK) return at_fail(p, peek(p, 0), "too many dimensions");
            syms[rank] = NULL;
            if (is_punct(peek(p, 0), "?")) {
                next(p);
                dims[rank] = MIL_DIM_UNKNOWN;
            } else if (peek(p, 0)->kind == T_IDENT) {
                NC_TRY(ident(p, "a dimension", &syms[rank]));
                dims[rank] = MIL_DIM_UNKNOWN;
                has_sym = 1;
            } else {
                NC_TRY(
                    int_token(p, "a dimension (an integer >= 0, or ?)", 0, INT32_MAX, &dims[rank]));
            }
            rank++;
            if (!is_punct(peek(p, 0), ",")) break;
            next(p);
        }
    }
    NC_TRY(expect(p, "]"));
    t->rank = rank;
    if (rank) {
        t->dims = nc_arena_memdup(&p->prog->arena, dims, (size_t)rank * sizeof *dims);
        if (!t->dims) return oom(p);
    }
    if (has_sym) {
        t->dim_syms = nc_arena_memdup(&p->prog->arena, syms, (size_t)rank * sizeof *syms);
        if (!t->dim_syms) return oom(p);
    }
    return NC_OK;
}

static nc_status parse_buffer_type(parser *p, mil_type *t) {
    const char *names[16];
    int lens[16];
    const int64_t *vals[16];
    int n = 0;
    NC_TRY(parse_dtype(p, &t->dtype));
    while (is_punct(peek(p, 0), ",")) {
        next(p);
        if (n == 16) return at_fail(p, peek(p, 0), "too many tensor_buffer parameters");
        NC_TRY(ident(p, "a tensor_buffer parameter name", &names[n]));
        NC_TRY(expect(p, "="));
        mil_type tmp = {0};
        NC_TRY(parse_dims(p, &tmp));
        if (tmp.dim_syms)
            return at_fail(p, peek(p, 0), "tensor_buffer parameters must be integers");
        for (int i = 0; i < tmp.rank; i++)
            if (tmp.dims[i] < 0)
                return at_fail(p, peek(p, 0), "tensor_buffer parameters must be integers");
        lens[n] = tmp.rank;
        vals[n] = tmp.dims;
        if (!strcmp(names[n], "shape")) {
            t->rank = tmp.rank;
            t->dims = tmp.dims;
        }
        n++;
    }
    NC_TRY(expect(p, ">"));
    nc_arena *a = &p->prog->arena;
    t->n_params = n;
    t->param_names = nc_arena_memdup(a, names, sizeof names);
    t->param_lens = nc_arena_memdup(a, lens, sizeof lens);
    t->param_vals = nc_arena_memdup(a, vals, sizeof vals);
    if (!t->param_names || !t->param_lens || !t->param_vals) return oom(p);
    return NC_OK;
}

static nc_status parse_type_inner(parser *p, const mil_type **out) {
    const token *t = peek(p, 0);
    mil_type *ty = nc_arena_alloc(&p->prog->arena, sizeof *ty);
    if (!ty) return oom(p);
    *out = ty;
    if (is_word(t, "tensor")) {
        next(p);
        ty->kind = MIL_TYPE_TENSOR;
        NC_TRY(expect(p, "<"));
        NC_TRY(parse_dtype(p, &ty->dtype));
        NC_TRY(expect(p, ","));
        NC_TRY(parse_dims(p, ty));
        return expect(p, ">");
    }
    if (is_word(t, "tensor_buffer")) {
        next(p);
        ty->kind = MIL_TYPE_BUFFER;
        NC_TRY(expect(p, "<"));
        return parse_buffer_type(p, ty);
    }
    const mil_type *elems[64];
    int n = 0;
    if (is_word(t, "list")) {
        next(p);
        ty->kind = MIL_TYPE_LIST;
        NC_TRY(expect(p, "<"));
        NC_TRY(parse_type(p, &elems[n++]));
        NC_TRY(expect(p, ","));
        if (is_punct(peek(p, 0), "?")) {
            next(p);
            ty->list_len = MIL_LEN_UNKNOWN;
        } else {
            NC_TRY(int_token(p, "a list length (an integer, or ?)", 0, INT64_MAX, &ty->list_len));
        }
    } else if (is_word(t, "tuple") || is_word(t, "dict") || is_word(t, "state")) {
        ty->kind = is_word(t, "tuple")  ? MIL_TYPE_TUPLE
                   : is_word(t, "dict") ? MIL_TYPE_DICT
                                        : MIL_TYPE_STATE;
        next(p);
        NC_TRY(expect(p, "<"));
        while (1) {
            if (n == 64) return at_fail(p, peek(p, 0), "too many tuple elements");
            NC_TRY(parse_type(p, &elems[n++]));
            if (!is_punct(peek(p, 0), ",")) break;
            next(p);
        }
        if ((ty->kind == MIL_TYPE_DICT && n != 2) || (ty->kind == MIL_TYPE_STATE && n != 1))
            return expected(p, ty->kind == MIL_TYPE_DICT ? "a dict<key, value> type"
                                                         : "a state<tensor> type");
    } else {
        ty->kind = MIL_TYPE_TENSOR; /* a scalar dtype (dialect B) */
        return parse_dtype(p, &ty->dtype);
    }
    NC_TRY(expect(p, ">"));
    ty->n_elems = n;
    ty->elems = nc_arena_memdup(&p->prog->arena, elems, (size_t)n * sizeof *elems);
    return ty->elems ? NC_OK : oom(p);
}

static nc_status parse_type(parser *p, const mil_type **out) {
    if (p->depth >= MAX_DEPTH) return at_fail(p, peek(p, 0), "types nested too deeply");
    p->depth++;
    nc_status st = parse_type_inner(p, out);
    p->depth--;
    return st;
}

/* --- literals ------------------------------------------------------------ */

typedef struct {
    uint8_t *data;
    size_t n, cap_bytes;
    const char **strs;
    size_t cap_strs;
} elem_buf;

static nc_status fp8_encode(double d, int e4m3, uint8_t *out) {
    /* nearest of the 256 codes; fp8 literals are rare and tiny */
    double best = INFINITY;
    int best_code = 0;
    for (int c = 0; c < 256; c++) {
        double v;
        if (e4m3) {
            int exp = (c >> 3) & 0xf, mant = c & 7;
            if (exp == 0xf && mant == 7) continue;
            v = exp ? ldexp(1.0 + mant / 8.0, exp - 7) : ldexp(mant / 8.0, -6);
            if (c & 0x80) v = -v;
        } else {
            v = nc_fp16_to_f32((uint16_t)(c << 8));
        }
        if (isnan(v)) continue;
        double diff = isnan(d) ? 0 : fabs(v - d);
        if (diff < best || (diff == best && v == d)) {
            best = diff;
            best_code = c;
        }
        if (isnan(d)) {
            best_code = e4m3 ? 0x7f : 0x7e;
            break;
        }
    }
    *out = (uint8_t)best_code;
    return NC_OK;
}

/* Appends one scalar element of dtype dt from the current token. */
static nc_status parse_element(parser *p, mil_dtype dt, elem_buf *b) {
    const token *t = peek(p, 0);
    if (dt == MIL_DT_STRING) {
        if (t->kind != T_STR) return expected(p, "a string");
        if (b->n == b->cap_strs) {
            size_t cap = b->cap_strs ? b->cap_strs * 2 : 8;
            const char **ns = realloc(b->strs, cap * sizeof *ns);
            if (!ns) return oom(p);
            b->strs = ns;
            b->cap_strs = cap;
        }
        if (!(b->strs[b->n] = nc_arena_strdup(&p->prog->arena, t->str))) return oom(p);
        b->n++;
        next(p);
        return NC_OK;
    }
    size_t eb = mil_dtype_storage_bytes(dt);
    if ((b->n + 1) * eb > b->cap_bytes) {
        size_t cap = b->cap_bytes ? b->cap_bytes * 2 : 64;
        uint8_t *nd = realloc(b->data, cap);
        if (!nd) return oom(p);
        b->data = nd;
        b->cap_bytes = cap;
    }
    uint8_t *dst = b->data + b->n * eb;
    if (dt == MIL_DT_BOOL) {
        if (is_word(t, "true"))
            *dst = 1;
        else if (is_word(t, "false"))
            *dst = 0;
        else if (is_punct(t, "?") || !tok_is_int(t) || (t->len != 1) ||
                 (t->s[0] != '0' && t->s[0] != '1'))
            return expected(p, "true or false");
        else
            *dst = (uint8_t)(t->s[0] - '0');
        next(p);
        b->n++;
        return NC_OK;
    }
    if (t->kind != T_NUM) return expected(p, mil_dtype_is_float(dt) ? "a number" : "an integer");
    char buf[128];
    if (t->len >= (int)sizeof buf) return at_fail(p, t, "number too long");
    memcpy(buf, t->s, (size_t)t->len);
    buf[t->len] = 0;
    if (mil_dtype_is_float(dt)) {
        double d = strtod(buf, NULL);
        if (!strcmp(buf, "nan") || !strcmp(buf, "-nan")) d = buf[0] == '-' ? -NAN : NAN;
        switch (dt) {
        case MIL_DT_FP16: {
            uint16_t h = nc_f32_to_fp16((float)d);
            memcpy(dst, &h, 2);
            break;
        }
        case MIL_DT_BF16: {
            uint16_t h = nc_f32_to_bf16((float)d);
            memcpy(dst, &h, 2);
            break;
        }
        case MIL_DT_FP32: {
            float f = (float)d;
            memcpy(dst, &f, 4);
            break;
        }
        case MIL_DT_FP64:
            memcpy(dst, &d, 8);
            break;
        default:
            fp8_encode(d, dt == MIL_DT_FP8E4M3FN, dst);
            break;
        }
    } else {
        if (!tok_is_int(t)) return expected(p, "an integer");
        int bits = mil_dtype_bits(dt);
        errno = 0;
        if (mil_dtype_is_signed(dt)) {
            long long v = strtoll(buf, NULL, 10);
            long long lo = bits >= 64 ? LLONG_MIN : -(1LL << (bits - 1));
            long long hi = bits >= 64 ? LLONG_MAX : (1LL << (bits - 1)) - 1;
            if (errno || v < lo || v > hi)
                return at_fail(p, t, "integer out of range for its dtype");
            if (bits >= 8)
                memcpy(dst, &v, eb); /* little-endian: low bytes first */
            else
                *dst = (uint8_t)(int8_t)v;
        } else {
            if (buf[0] == '-') return at_fail(p, t, "negative value for an unsigned dtype");
            unsigned long long v = strtoull(buf, NULL, 10);
            unsigned long long hi = bits >= 64 ? ULLONG_MAX : (1ULL << bits) - 1;
            if (errno || v > hi) return at_fail(p, t, "integer out of range for its dtype");
            memcpy(dst, &v, eb);
        }
    }
    next(p);
    b->n++;
    return NC_OK;
}

/* Tensor data: a scalar, or `[...]` (nested brackets are flattened). */
static nc_status parse_tensor_elems(parser *p, mil_dtype dt, elem_buf *b) {
    if (!is_punct(peek(p, 0), "[")) return parse_element(p, dt, b);
    if (p->depth >= MAX_DEPTH) return at_fail(p, peek(p, 0), "literal nested too deeply");
    p->depth++;
    next(p);
    nc_status st = NC_OK;
    if (!is_punct(peek(p, 0), "]")) {
        while (st == NC_OK) {
            st = parse_tensor_elems(p, dt, b);
            if (st != NC_OK || !is_punct(peek(p, 0), ",")) break;
            next(p);
        }
    }
    p->depth--;
    NC_TRY(st);
    return expect(p, "]");
}

static nc_status parse_raw(parser *p, const mil_type *type, const mil_value **out);

static nc_status finish_tensor(parser *p, const mil_type *type, elem_buf *b, const token *at,
                               const mil_value **out) {
    int64_t numel = mil_type_numel(type);
    if (numel >= 0 && (uint64_t)numel != b->n) {
        char msg[128];
        snprintf(msg, sizeof msg, "expected %lld elements for the declared shape, found %zu",
                 (long long)numel, b->n);
        return at_fail(p, at, msg);
    }
    mil_value *v = nc_arena_alloc(&p->prog->arena, sizeof *v);
    if (!v) return oom(p);
    v->type = type;
    v->kind = MIL_VALUE_TENSOR;
    v->n = b->n;
    if (type->dtype == MIL_DT_STRING) {
        v->strs = nc_arena_memdup(&p->prog->arena, b->strs, b->n * sizeof *b->strs);
        if (!v->strs) return oom(p);
    } else {
        v->data =
            nc_arena_memdup(&p->prog->arena, b->data, b->n * mil_dtype_storage_bytes(type->dtype));
        if (!v->data) return oom(p);
    }
    *out = v;
    return NC_OK;
}

static nc_status parse_items(parser *p, const mil_type *type, const char *close, int is_dict,
                             mil_value *v) {
    const mil_value **items = NULL;
    size_t n = 0, cap = 0;
    nc_status st = NC_OK;
    if (!is_punct(peek(p, 0), close)) {
        while (1) {
            if (n + 2 > cap) {
                cap = cap ? cap * 2 : 8;
                const mil_value **ni = realloc(items, cap * sizeof *ni);
                if (!ni) {
                    st = oom(p);
                    break;
                }
                items = ni;
            }
            if (is_dict) {
                if ((st = expect(p, "{")) || (st = parse_raw(p, type->elems[0], &items[n])) ||
                    (st = expect(p, ",")) || (st = parse_raw(p, type->elems[1], &items[n + 1])) ||
                    (st = expect(p, "}")))
                    break;
                n += 2;
            } else {
                const mil_type *et;
                if (type->kind == MIL_TYPE_TUPLE) {
                    if (n >= (size_t)type->n_elems) {
                        st = expected(p, "')' (more items than the tuple type has)");
                        break;
                    }
                    et = type->elems[n];
                } else {
                    et = type->elems[0];
                }
                if ((st = parse_raw(p, et, &items[n]))) break;
                n++;
            }
            if (!is_punct(peek(p, 0), ",")) break;
            next(p);
        }
    }
    if (st == NC_OK && type->kind == MIL_TYPE_TUPLE && n != (size_t)type->n_elems)
        st = expected(p, "as many items as the tuple type has");
    if (st == NC_OK && type->kind == MIL_TYPE_LIST && type->list_len >= 0 &&
        n != (size_t)type->list_len)
        st = expected(p, "as many items as the list type's length");
    if (st == NC_OK) st = expect(p, close);
    if (st == NC_OK) {
        v->n = is_dict ? n / 2 : n;
        v->items = nc_arena_memdup(&p->prog->arena, items, (n ? n : 1) * sizeof *items);
        if (!v->items) st = oom(p);
    }
    free(items);
    return st;
}

/* The untyped part of a literal, interpreted by `type`. */
static nc_status parse_raw_inner(parser *p, const mil_type *type, const mil_value **out) {
    const token *at = peek(p, 0);
    if (type->kind == MIL_TYPE_TENSOR) {
        elem_buf b = {0};
        nc_status st = parse_tensor_elems(p, type->dtype, &b);
        if (st == NC_OK) st = finish_tensor(p, type, &b, at, out);
        free(b.data);
        free(b.strs);
        return st;
    }
    mil_value *v = nc_arena_alloc(&p->prog->arena, sizeof *v);
    if (!v) return oom(p);
    v->type = type;
    *out = v;
    switch (type->kind) {
    case MIL_TYPE_LIST:
        v->kind = MIL_VALUE_LIST;
        NC_TRY(expect(p, "["));
        return parse_items(p, type, "]", 0, v);
    case MIL_TYPE_TUPLE:
        v->kind = MIL_VALUE_TUPLE;
        NC_TRY(expect(p, "("));
        return parse_items(p, type, ")", 0, v);
    case MIL_TYPE_DICT:
        v->kind = MIL_VALUE_DICT;
        NC_TRY(expect(p, "{"));
        return parse_items(p, type, "}", 1, v);
    default:
        return at_fail(p, at, "state and tensor_buffer types have no literal form");
    }
}

static nc_status parse_raw(parser *p, const mil_type *type, const mil_value **out) {
    if (p->depth >= MAX_DEPTH) return at_fail(p, peek(p, 0), "literal nested too deeply");
    p->depth++;
    nc_status st = parse_raw_inner(p, type, out);
    p->depth--;
    return st;
}

static nc_status parse_value(parser *p, const mil_value **out);

/* BLOBFILE(path = <string>, offset = <uint64>) after the tensor type. */
static nc_status parse_blobfile(parser *p, const mil_type *type, const mil_value **out) {
    const token *at = peek(p, 0);
    next(p); /* BLOBFILE */
    if (type->kind != MIL_TYPE_TENSOR) return at_fail(p, at, "BLOBFILE needs a tensor type");
    NC_TRY(expect(p, "("));
    const char *key;
    const mil_value *path = NULL, *off = NULL;
    for (int i = 0; i < 2; i++) {
        if (i) NC_TRY(expect(p, ","));
        const token *kt = peek(p, 0);
        NC_TRY(ident(p, "path or offset", &key));
        NC_TRY(expect(p, "="));
        if (!strcmp(key, "path"))
            NC_TRY(parse_value(p, &path));
        else if (!strcmp(key, "offset"))
            NC_TRY(parse_value(p, &off));
        else
            return at_fail(p, kt, "expected path or offset in BLOBFILE");
    }
    NC_TRY(expect(p, ")"));
    int64_t o = 0;
    if (!path || !off || !mil_value_str(path) || off->kind != MIL_VALUE_TENSOR || off->n != 1 ||
        !mil_dtype_is_int(off->type->dtype) || mil_value_to_i64(p->prog, off, 0, &o, NULL) || o < 0)
        return at_fail(p, at, "BLOBFILE needs path = string(...) and offset = uint64(...)");
    *out = mil_value_blob(p->prog, type, mil_value_str(path), (uint64_t)o);
    return *out ? NC_OK : oom(p);
}

/* A typed literal: TYPE "(" raw? ")" with BLOBFILE as one raw form. */
static nc_status parse_value(parser *p, const mil_value **out) {
    const mil_type *type;
    NC_TRY(parse_type(p, &type));
    if (type->kind == MIL_TYPE_STATE || type->kind == MIL_TYPE_BUFFER)
        return at_fail(p, peek(p, 0), "state and tensor_buffer types have no literal form");
    NC_TRY(expect(p, "("));
    if (is_word(peek(p, 0), "BLOBFILE")) {
        NC_TRY(parse_blobfile(p, type, out));
    } else if (is_punct(peek(p, 0), ")") && type->kind == MIL_TYPE_TENSOR) {
        elem_buf b = {0}; /* `T()`: an empty tensor */
        NC_TRY(finish_tensor(p, type, &b, peek(p, 0), out));
    } else if (is_punct(peek(p, 0), ")")) {
        mil_value *v = nc_arena_alloc(&p->prog->arena, sizeof *v);
        if (!v) return oom(p);
        v->type = type;
        v->kind = type->kind == MIL_TYPE_LIST    ? MIL_VALUE_LIST
                  : type->kind == MIL_TYPE_TUPLE ? MIL_VALUE_TUPLE
                                                 : MIL_VALUE_DICT;
        *out = v;
    } else {
        NC_TRY(parse_raw(p, type, out));
    }
    return expect(p, ")");
}

/* `[name = value, ...]` */
static nc_status parse_attrs(parser *p, mil_attr **out, int *n_out) {
    mil_attr tmp[256];
    int n = 0;
    *out = NULL;
    *n_out = 0;
    if (!is_punct(peek(p, 0), "[")) return NC_OK;
    next(p);
    while (1) {
        if (n == 256) return at_fail(p, peek(p, 0), "too many attributes");
        const token *nt = peek(p, 0);
        NC_TRY(ident(p, "an attribute name", &tmp[n].name));
        for (int i = 0; i < n; i++)
            if (!strcmp(tmp[i].name, tmp[n].name)) return at_fail(p, nt, "attribute given twice");
        NC_TRY(expect(p, "="));
        NC_TRY(parse_value(p, &tmp[n].value));
        n++;
        if (!is_punct(peek(p, 0), ",")) break;
        next(p);
    }
    NC_TRY(expect(p, "]"));
    *out = nc_arena_memdup(&p->prog->arena, tmp, (size_t)n * sizeof *tmp);
    *n_out = n;
    return *out ? NC_OK : oom(p);
}

/* --- functions and statements -------------------------------------------- */

static nc_status var_ref(parser *p, mil_var **out) {
    const token *t = peek(p, 0);
    char name[256];
    if (t->kind != T_IDENT) return expected(p, "a variable name or a literal");
    if (t->len >= (int)sizeof name) return at_fail(p, t, "name too long");
    memcpy(name, t->s, (size_t)t->len);
    name[t->len] = 0;
    *out = mil_function_var(p->fn, name);
    if (!*out) {
        char msg[320];
        snprintf(msg, sizeof msg, "unknown variable '%s'", name);
        return at_fail(p, t, msg);
    }
    next(p);
    return NC_OK;
}

/* One binding: a variable, an inline literal (an anonymous variable). */
static nc_status parse_operand(parser *p, mil_var **out) {
    const token *t = peek(p, 0), *t1 = peek(p, 1);
    if (is_type_word(t) && (is_punct(t1, "(") || is_punct(t1, "<"))) {
        const mil_value *v;
        NC_TRY(parse_value(p, &v));
        *out = mil_var_literal(p->fn, v, p->err);
        return *out ? NC_OK : NC_ERR_NOMEM;
    }
    return var_ref(p, out);
}

static nc_status parse_args(parser *p, mil_op *op) {
    mil_arg tmp[64];
    int n = 0;
    NC_TRY(expect(p, "("));
    if (!is_punct(peek(p, 0), ")")) {
        while (1) {
            if (n == 64) return at_fail(p, peek(p, 0), "too many arguments");
            mil_arg *a = &tmp[n];
            memset(a, 0, sizeof *a);
            const token *nt = peek(p, 0);
            NC_TRY(ident(p, "an argument name", &a->name));
            for (int i = 0; i < n; i++)
                if (!strcmp(tmp[i].name, a->name)) return at_fail(p, nt, "argument given twice");
            NC_TRY(expect(p, "="));
            mil_var *items[1024];
            int k = 0;
            if (is_punct(peek(p, 0), "(")) {
                next(p);
                a->is_tuple = 1;
                if (!is_punct(peek(p, 0), ")")) {
                    while (1) {
                        if (k == 1024) return at_fail(p, peek(p, 0), "too many tuple items");
                        NC_TRY(parse_operand(p, &items[k++]));
                        if (!is_punct(peek(p, 0), ",")) break;
                        next(p);
                    }
                }
                NC_TRY(expect(p, ")"));
            } else {
                NC_TRY(parse_operand(p, &items[k++]));
            }
            a->n_items = k;
            a->items = nc_arena_memdup(&p->prog->arena, items, (size_t)(k ? k : 1) * sizeof *items);
            if (!a->items) return oom(p);
            n++;
            if (!is_punct(peek(p, 0), ",")) break;
            next(p);
        }
    }
    NC_TRY(expect(p, ")"));
    op->n_args = n;
    op->args = nc_arena_memdup(&p->prog->arena, tmp, (size_t)(n ? n : 1) * sizeof *tmp);
    return op->args ? NC_OK : oom(p);
}

static nc_status parse_stmt(parser *p) {
    const mil_type *types[MIL_MAX_OUTPUTS];
    const char *names[MIL_MAX_OUTPUTS];
    int n_out = 0;
    const token *start = peek(p, 0);
    if (is_type_word(start)) {
        while (1) {
            if (n_out == MIL_MAX_OUTPUTS) return at_fail(p, peek(p, 0), "too many outputs");
            NC_TRY(parse_type(p, &types[n_out]));
            NC_TRY(ident(p, "an output name", &names[n_out]));
            n_out++;
            if (!is_punct(peek(p, 0), ",")) break;
            next(p);
        }
        NC_TRY(expect(p, "="));
    }
    const char *type, *opset = NULL;
    const token *op_tok = peek(p, 0);
    NC_TRY(ident(p, "an operation type", &type));
    if (is_punct(peek(p, 0), "<")) {
        next(p);
        NC_TRY(ident(p, "an opset name", &opset));
        NC_TRY(expect(p, ">"));
    }
    mil_op *op = mil_op_append(p->fn, type, opset, p->err);
    if (!op) return NC_ERR_NOMEM;
    op->line = op_tok->line;
    NC_TRY(parse_args(p, op));
    NC_TRY(parse_attrs(p, &op->attrs, &op->n_attrs));
    NC_TRY(expect(p, ";"));
    op->n_outputs = n_out;
    op->outputs =
        nc_arena_calloc(&p->prog->arena, (size_t)(n_out ? n_out : 1), sizeof *op->outputs);
    if (!op->outputs) return oom(p);
    const mil_value *val = !strcmp(type, "const") ? mil_op_attr(op, "val") : NULL;
    for (int i = 0; i < n_out; i++) {
        mil_var *v = mil_var_new(p->fn, names[i], types[i], p->err);
        if (!v) return NC_ERR_NOMEM;
        v->def = op;
        v->def_output = i;
        if (val && n_out == 1) v->cval = val;
        op->outputs[i] = v;
    }
    return NC_OK;
}

static nc_status parse_function(parser *p) {
    const token *ft = peek(p, 0);
    const char *name, *opset;
    next(p); /* func */
    NC_TRY(ident(p, "a function name", &name));
    NC_TRY(expect(p, "<"));
    NC_TRY(ident(p, "an opset name (ios18, ...)", &opset));
    NC_TRY(expect(p, ">"));
    mil_function *fn = mil_function_add(p->prog, name, opset, p->err);
    if (!fn) return NC_ERR_NOMEM;
    fn->line = ft->line;
    p->fn = fn;
    NC_TRY(expect(p, "("));
    mil_var *inputs[1024];
    int n = 0;
    if (!is_punct(peek(p, 0), ")")) {
        while (1) {
            const mil_type *t;
            const char *in_name;
            if (n == 1024) return at_fail(p, peek(p, 0), "too many inputs");
            NC_TRY(parse_type(p, &t));
            NC_TRY(ident(p, "an input name", &in_name));
            mil_var *v = mil_var_new(fn, in_name, t, p->err);
            if (!v) return NC_ERR_NOMEM;
            v->is_input = 1;
            inputs[n++] = v;
            if (!is_punct(peek(p, 0), ",")) break;
            next(p);
        }
    }
    NC_TRY(expect(p, ")"));
    fn->n_inputs = n;
    fn->inputs = nc_arena_memdup(&p->prog->arena, inputs, (size_t)(n ? n : 1) * sizeof *inputs);
    if (!fn->inputs) return oom(p);
    NC_TRY(parse_attrs(p, &fn->attrs, &fn->n_attrs));
    NC_TRY(expect(p, "{"));
    while (!is_punct(peek(p, 0), "}")) {
        if (peek(p, 0)->kind == T_EOF) return expected(p, "'}' closing the function");
        NC_TRY(parse_stmt(p));
    }
    next(p);
    NC_TRY(expect(p, "->"));
    NC_TRY(expect(p, "("));
    mil_var **outs = NULL;
    int n_out = 0, cap = 0;
    nc_status st = NC_OK;
    if (!is_punct(peek(p, 0), ")")) {
        while (1) {
            if (n_out == cap) {
                cap = cap ? cap * 2 : 8;
                mil_var **no = realloc(outs, (size_t)cap * sizeof *no);
                if (!no) {
                    st = oom(p);
                    break;
                }
                outs = no;
            }
            if ((st = var_ref(p, &outs[n_out]))) break;
            n_out++;
            if (!is_punct(peek(p, 0), ",")) break;
            next(p);
        }
    }
    if (st == NC_OK) {
        fn->n_outputs = n_out;
        fn->outputs =
            nc_arena_memdup(&p->prog->arena, outs, (size_t)(n_out ? n_out : 1) * sizeof *outs);
        if (!fn->outputs) st = oom(p);
    }
    free(outs);
    NC_TRY(st);
    NC_TRY(expect(p, ")"));
    return expect(p, ";");
}

static nc_status parse_program(parser *p) {
    if (!is_word(peek(p, 0), "program")) return expected(p, "'program'");
    next(p);
    NC_TRY(expect(p, "("));
    const token *v = peek(p, 0);
    if (v->kind != T_NUM) return expected(p, "a version number");
    next(p);
    p->prog->version = nc_arena_strndup(&p->prog->arena, v->s, (size_t)v->len);
    if (!p->prog->version) return oom(p);
    NC_TRY(expect(p, ")"));
    NC_TRY(parse_attrs(p, &p->prog->attrs, &p->prog->n_attrs));
    NC_TRY(expect(p, "{"));
    while (is_word(peek(p, 0), "func"))
        NC_TRY(parse_function(p));
    NC_TRY(expect(p, "}"));
    if (peek(p, 0)->kind != T_EOF) return expected(p, "end of file");
    return NC_OK;
}

nc_status mil_parse(const char *text, size_t len, const char *source, mil_program **out,
                    nc_error *err) {
    *out = NULL;
    parser p = {0};
    p.src = source ? source : "<mil>";
    p.err = err;
    nc_status st = mil_program_new(&p.prog, err);
    if (st != NC_OK) return st;
    p.prog->source = nc_arena_strdup(&p.prog->arena, p.src);
    st = p.prog->source ? lex(&p, text, len) : oom(&p);
    if (st == NC_OK) st = parse_program(&p);
    for (int i = 0; i < p.n; i++)
        free(p.toks[i].str);
    free(p.toks);
    if (st != NC_OK) {
        mil_program_free(p.prog);
        return st;
    }
    *out = p.prog;
    return NC_OK;
}

nc_status mil_function_parse_attrs(mil_function *fn, const char *text, nc_error *err) {
    parser p = {0};
    p.src = "<attributes>";
    p.err = err;
    p.prog = fn->prog;
    p.fn = fn;
    nc_status st = lex(&p, text, strlen(text));
    mil_attr *attrs = NULL;
    int n = 0;
    if (st == NC_OK) st = parse_attrs(&p, &attrs, &n);
    if (st == NC_OK && peek(&p, 0)->kind != T_EOF) st = expected(&p, "end of the attributes");
    for (int i = 0; i < p.n; i++)
        free(p.toks[i].str);
    free(p.toks);
    if (st != NC_OK) return st;
    fn->attrs = attrs;
    fn->n_attrs = n;
    return NC_OK;
}

nc_status mil_parse_file(const char *path, mil_program **out, nc_error *err) {
    char *text;
    size_t len;
    *out = NULL;
    NC_TRY(nc_read_file(path, &text, &len, err));
    nc_status st = mil_parse(text, len, path, out, err);
    free(text);
    if (st != NC_OK) return st;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash > path ? slash - path : 1), path);
    st = mil_program_set_model_dir(*out, dir, err);
    if (st != NC_OK) {
        mil_program_free(*out);
        *out = NULL;
    }
    return st;
}
