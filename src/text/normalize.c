/* Normalisers (see normalize.h). ASCII is unchanged by every Unicode
 * normal form, so pure-ASCII text skips utf8proc entirely. */
#include "text/normalize.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/spec.h"

#define MAX_FORMS 8

struct tok_norm {
    utf8proc_option_t forms[MAX_FORMS];
    size_t n_forms;
};

static const struct {
    const char *type;
    utf8proc_option_t opts;
} forms[] = {
    {"NFC", UTF8PROC_STABLE | UTF8PROC_COMPOSE},
    {"NFD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE},
    {"NFKC", UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
    {"NFKD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT},
};

/* One normaliser of the pipeline (text/spec.h walks the Sequences). */
static nc_status parse_leaf(void *ctx, const json_t *spec, const char *type, const char *what,
                            nc_error *err) {
    (void)spec;
    tok_norm *n = ctx;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        if (strcmp(forms[i].type, type) != 0) continue;
        if (n->n_forms == MAX_FORMS)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: more than %d normalizers", what,
                           MAX_FORMS);
        n->forms[n->n_forms++] = forms[i].opts;
        return NC_OK;
    }
    return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: normalizer type '%s' is not supported", what,
                   type);
}

nc_status tok_norm_new(const json_t *spec, const char *what, tok_norm **out, nc_error *err) {
    *out = NULL;
    tok_norm *n = calloc(1, sizeof *n);
    if (!n) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    if (spec) {
        nc_status st = tok_spec_walk(spec, "normalizer", "normalizers", parse_leaf, n, what, err);
        if (st != NC_OK) {
            free(n);
            return st;
        }
    }
    *out = n;
    return NC_OK;
}

void tok_norm_free(tok_norm *n) {
    free(n);
}

static int is_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return 0;
    return 1;
}

nc_status tok_norm_apply(const tok_norm *n, const char *text, size_t len, char **out,
                         size_t *out_len, nc_error *err) {
    *out = (char *)text;
    *out_len = len;
    if (n->n_forms == 0 || is_ascii(text, len)) return NC_OK;
    for (size_t i = 0; i < n->n_forms; i++) {
        utf8proc_uint8_t *dst = NULL;
        utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)*out,
                                          (utf8proc_ssize_t)*out_len, &dst, n->forms[i]);
        if (*out != text) free(*out);
        if (r < 0) {
            *out = (char *)text;
            return nc_fail(err, r == UTF8PROC_ERROR_NOMEM ? NC_ERR_NOMEM : NC_ERR_INVALID,
                           "tokenizer: normalizer: %s", utf8proc_errmsg(r));
        }
        *out = (char *)dst;
        *out_len = (size_t)r;
    }
    return NC_OK;
}
