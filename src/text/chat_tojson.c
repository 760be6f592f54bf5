/* JSON text exactly as Python's json.dumps(x, ensure_ascii=False) writes it,
 * which is the `tojson` filter transformers gives chat templates: ", " and
 * ": " separators, keys in their given order, non-ASCII as is, control
 * characters as \uXXXX in lower-case hex, floats as Python's repr (the
 * shortest digits that read back to the same double). Tool definitions in a
 * rendered prompt must match HF byte for byte, so jansson's own dumper
 * (other separators, upper-case escapes, 17-digit reals) cannot be used.
 * With an indent, the same as json.dumps(x, ensure_ascii=False, indent=N). */
#include "text/chat_tojson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text is built in an open_memstream (POSIX 2008); a failed write
 * shows up as an error on the stream. */
typedef FILE jbuf;

static void put_n(jbuf *b, const char *s, size_t n) {
    fwrite(s, 1, n, b);
}

static void put(jbuf *b, const char *s) {
    fputs(s, b);
}

static void put_string(jbuf *b, const char *s, size_t n) {
    put(b, "\"");
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20) {
            snprintf(u, sizeof u, "\\u%04x", c);
            esc = u;
        }
        if (!esc) continue;
        put_n(b, s + from, i - from);
        put(b, esc);
        from = i + 1;
    }
    put_n(b, s + from, n - from);
    put(b, "\"");
}

/* Python's repr(float): shortest round-trip digits; fixed notation when
 * the decimal exponent is in [-4, 16), else d.ddde+XX. */
static void put_real(jbuf *b, double x) {
    char e[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, x);
        if (strtod(e, NULL) == x) break;
    }
    const char *s = e;
    int neg = *s == '-';
    if (neg) s++;
    char digits[24];
    size_t nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.') digits[nd++] = *s;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int exp10 = atoi(s + 1);
    int decpt = exp10 + 1;
    char out[64];
    size_t o = 0;
    if (neg) out[o++] = '-';
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out[o++] = '0';
            out[o++] = '.';
            for (int i = 0; i < -decpt; i++)
                out[o++] = '0';
            memcpy(out + o, digits, nd);
            o += nd;
        } else if ((size_t)decpt >= nd) {
            memcpy(out + o, digits, nd);
            o += nd;
            for (size_t i = nd; i < (size_t)decpt; i++)
                out[o++] = '0';
            out[o++] = '.';
            out[o++] = '0';
        } else {
            memcpy(out + o, digits, (size_t)decpt);
            o += (size_t)decpt;
            out[o++] = '.';
            memcpy(out + o, digits + decpt, nd - (size_t)decpt);
            o += nd - (size_t)decpt;
        }
        out[o] = '\0';
    } else {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            memcpy(out + o, digits + 1, nd - 1);
            o += nd - 1;
        }
        snprintf(out + o, sizeof out - o, "e%c%02d", exp10 < 0 ? '-' : '+',
                 exp10 < 0 ? -exp10 : exp10);
    }
    put(b, out);
}

/* A new line and the indentation of depth d (indent > 0 only). */
static void put_newline(jbuf *b, int indent, int d) {
    fputc('\n', b);
    for (int i = 0; i < indent * d; i++)
        fputc(' ', b);
}

/* indent < 0: one line (", " between items); else Python's indent=N: each
 * item on its own line, "," between them, "{}" and "[]" when empty. */
static void put_value(jbuf *b, const json_t *v, int indent, int depth) {
    char num[32];
    const char *sep = indent < 0 ? ", " : ",";
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        put(b, "{");
        const char *k;
        json_t *x;
        int first = 1;
        json_object_foreach((json_t *)v, k, x) {
            if (!first) put(b, sep);
            if (indent >= 0) put_newline(b, indent, depth + 1);
            first = 0;
            put_string(b, k, strlen(k));
            put(b, ": ");
            put_value(b, x, indent, depth + 1);
        }
        if (!first && indent >= 0) put_newline(b, indent, depth);
        put(b, "}");
        break;
    }
    case JSON_ARRAY:
        put(b, "[");
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) put(b, sep);
            if (indent >= 0) put_newline(b, indent, depth + 1);
            put_value(b, json_array_get(v, i), indent, depth + 1);
        }
        if (json_array_size(v) && indent >= 0) put_newline(b, indent, depth);
        put(b, "]");
        break;
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        put(b, num);
        break;
    case JSON_REAL:
        put_real(b, json_real_value(v));
        break;
    case JSON_TRUE:
        put(b, "true");
        break;
    case JSON_FALSE:
        put(b, "false");
        break;
    default:
        put(b, "null");
        break;
    }
}

static nc_status dump(const json_t *v, int indent, char **out, nc_error *err) {
    char *p = NULL;
    size_t n = 0;
    *out = NULL;
    FILE *f = open_memstream(&p, &n);
    if (!f) return nc_fail(err, NC_ERR_NOMEM, "tojson: out of memory");
    put_value(f, v, indent, 0);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        free(p);
        return nc_fail(err, NC_ERR_NOMEM, "tojson: out of memory");
    }
    *out = p;
    return NC_OK;
}

nc_status chat_tojson(const json_t *v, char **out, nc_error *err) {
    return dump(v, -1, out, err);
}

nc_status chat_tojson_indent(const json_t *v, int indent, char **out, nc_error *err) {
    return dump(v, indent < 0 ? 0 : indent, out, err);
}
