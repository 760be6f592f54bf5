/* SentencePiece-style BPE steps (see sp_bpe.h): the Replace/Prepend
 * normalizer, the initial symbols with byte fallback, and the
 * Replace/ByteFallback/Fuse/Strip decoder chain, following HF tokenizers'
 * normalizers/replace.rs, models/bpe/model.rs (merge_word) and the
 * decoders of the same names. */
#include "text/sp_bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/spec.h"
#include "text/utf8.h"

#define MAX_NORM_STEPS 8
#define MAX_PIECE 32 /* bytes of a Replace pattern / content or a Prepend */

typedef struct norm_step {
    int is_prepend;
    char from[MAX_PIECE], to[MAX_PIECE];
    size_t from_len, to_len;
} norm_step;

struct tok_sp {
    norm_step steps[MAX_NORM_STEPS];
    size_t n_steps;
    /* decoder */
    char dec_from[MAX_PIECE], dec_to[MAX_PIECE];
    size_t dec_from_len, dec_to_len; /* dec_from_len 0: no Replace */
    int byte_fallback;               /* ByteFallback in the chain */
    char strip[8];                   /* Strip: the character, its start/stop counts */
    size_t strip_len;
    int strip_start, strip_stop;
    int32_t byte_id[256]; /* <0xNN> token ids, -1 when absent */
};

static nc_status copy_piece(const json_t *o, const char *key, char *dst, size_t *len,
                            const char *what, nc_error *err) {
    const char *s = NULL;
    NC_TRY(nc_json_str(o, key, &s, 1, what, err));
    size_t n = strlen(s);
    if (n >= MAX_PIECE)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: '%s' is longer than %d bytes", what, key,
                       MAX_PIECE - 1);
    memcpy(dst, s, n + 1);
    *len = n;
    return NC_OK;
}

/* Replace's pattern: {"String": "..."} (a regex pattern is not supported). */
static nc_status replace_pattern(const json_t *o, char *dst, size_t *len, const char *what,
                                 nc_error *err) {
    const json_t *p = json_object_get(o, "pattern");
    if (!json_is_object(p) || !json_is_string(json_object_get(p, "String")))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: Replace with a non-string pattern is not supported", what);
    NC_TRY(copy_piece(p, "String", dst, len, what, err));
    if (!*len) return nc_fail(err, NC_ERR_FORMAT, "%s: Replace with an empty pattern", what);
    return NC_OK;
}

/* One normaliser of the pipeline (text/spec.h walks the Sequences). */
static nc_status parse_norm(void *ctx, const json_t *spec, const char *type, const char *what,
                            nc_error *err) {
    tok_sp *s = ctx;
    if (s->n_steps == MAX_NORM_STEPS)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: more than %d normalizers", what,
                       MAX_NORM_STEPS);
    norm_step *st = &s->steps[s->n_steps];
    if (!strcmp(type, "Replace")) {
        NC_TRY(replace_pattern(spec, st->from, &st->from_len, what, err));
        NC_TRY(copy_piece(spec, "content", st->to, &st->to_len, what, err));
    } else if (!strcmp(type, "Prepend")) {
        st->is_prepend = 1;
        NC_TRY(copy_piece(spec, "prepend", st->to, &st->to_len, what, err));
    } else {
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: normalizer type '%s' is not supported with byte_fallback BPE "
                       "(Replace, Prepend)",
                       what, type);
    }
    s->n_steps++;
    return NC_OK;
}

static nc_status parse_decoder_step(tok_sp *s, const json_t *d, const char *what, nc_error *err) {
    const char *type;
    NC_TRY(nc_json_str(d, "type", &type, 1, what, err));
    if (!strcmp(type, "Replace")) {
        if (s->dec_from_len)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: decoder has two Replace steps", what);
        NC_TRY(replace_pattern(d, s->dec_from, &s->dec_from_len, what, err));
        NC_TRY(copy_piece(d, "content", s->dec_to, &s->dec_to_len, what, err));
        if (s->dec_to_len > s->dec_from_len)
            return nc_fail(err, NC_ERR_UNSUPPORTED,
                           "%s: decoder Replace that lengthens tokens is not supported", what);
        return NC_OK;
    }
    if (!strcmp(type, "ByteFallback")) {
        s->byte_fallback = 1;
        return NC_OK;
    }
    if (!strcmp(type, "Fuse")) return NC_OK; /* tok_decode joins the tokens anyway */
    if (!strcmp(type, "Strip")) {
        int64_t start = 0, stop = 0;
        NC_TRY(copy_piece(d, "content", s->strip, &s->strip_len, what, err));
        NC_TRY(nc_json_int(d, "start", &start, 0, what, err));
        NC_TRY(nc_json_int(d, "stop", &stop, 0, what, err));
        if (s->strip_len == 0 || s->strip_len > 4 || start < 0 || stop < 0 || start > 1024 ||
            stop > 1024)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: decoder Strip needs one character and "
                           "small counts",
                           what);
        s->strip_start = (int)start;
        s->strip_stop = (int)stop;
        return NC_OK;
    }
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "%s: decoder '%s' is not supported with byte_fallback BPE "
                   "(Replace, ByteFallback, Fuse, Strip)",
                   what, type);
}

static nc_status parse_decoder(tok_sp *s, const json_t *spec, const char *what, nc_error *err) {
    if (!json_is_object(spec))
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "%s: byte_fallback BPE needs a decoder (Replace, ByteFallback, Fuse)", what);
    const char *type;
    NC_TRY(nc_json_str(spec, "type", &type, 1, what, err));
    if (strcmp(type, "Sequence")) return parse_decoder_step(s, spec, what, err);
    const json_t *list = json_object_get(spec, "decoders");
    if (!json_is_array(list))
        return nc_fail(err, NC_ERR_FORMAT, "%s: decoder Sequence needs a 'decoders' array", what);
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *d = json_array_get(list, i);
        if (!json_is_object(d))
            return nc_fail(err, NC_ERR_FORMAT, "%s: decoders[%zu] must be an object", what, i);
        NC_TRY(parse_decoder_step(s, d, what, err));
    }
    return NC_OK;
}

nc_status tok_sp_new(const json_t *root, const char *what, tok_sp **out, nc_error *err) {
    *out = NULL;
    tok_sp *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    for (int b = 0; b < 256; b++)
        s->byte_id[b] = -1;
    nc_status st = tok_spec_walk(json_object_get(root, "normalizer"), "normalizer", "normalizers",
                                 parse_norm, s, what, err);
    if (st == NC_OK) st = parse_decoder(s, json_object_get(root, "decoder"), what, err);
    if (st != NC_OK) {
        free(s);
        return st;
    }
    *out = s;
    return NC_OK;
}

void tok_sp_free(tok_sp *s) {
    free(s);
}

void tok_sp_bind_vocab(tok_sp *s, const tok_strmap *vocab) {
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        s->byte_id[b] = tok_strmap_get(vocab, name, 6);
    }
}

/* One normalizer step into a new buffer. */
static nc_status apply_step(const norm_step *st, const char *in, size_t len, char **out,
                            size_t *out_len, nc_error *err) {
    size_t cap = st->is_prepend ? len + st->to_len
                                : len / st->from_len *
                                          (st->to_len > st->from_len ? st->to_len : st->from_len) +
                                      len % st->from_len + st->to_len;
    char *o = malloc(cap + 1);
    if (!o) return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory");
    size_t n = 0;
    if (st->is_prepend) { /* HF: only a non-empty string gets the prefix */
        if (len) {
            memcpy(o, st->to, st->to_len);
            n = st->to_len;
        }
        memcpy(o + n, in, len);
        n += len;
    } else {
        for (size_t i = 0; i < len;) {
            if (len - i >= st->from_len && !memcmp(in + i, st->from, st->from_len)) {
                memcpy(o + n, st->to, st->to_len);
                n += st->to_len;
                i += st->from_len;
            } else {
                o[n++] = in[i++];
            }
        }
    }
    *out = o;
    *out_len = n;
    return NC_OK;
}

nc_status tok_sp_normalize(const tok_sp *s, const char *text, size_t len, char **out,
                           size_t *out_len, nc_error *err) {
    char *cur = malloc(len + 1);
    if (!cur) return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory");
    memcpy(cur, text, len);
    size_t n = len;
    for (size_t i = 0; i < s->n_steps; i++) {
        char *next = NULL;
        size_t next_len = 0;
        nc_status st = apply_step(&s->steps[i], cur, n, &next, &next_len, err);
        free(cur);
        if (st != NC_OK) return st;
        cur = next;
        n = next_len;
    }
    *out = cur;
    *out_len = n;
    return NC_OK;
}

size_t tok_sp_symbols(const tok_sp *s, const tok_strmap *vocab, int32_t unk_id, int fuse_unk,
                      const char *word, size_t len, int32_t *sym) {
    size_t n = 0;
    int pending_unk = 0; /* HF adds a fused unk when the next known symbol comes */
    for (size_t i = 0; i < len;) {
        size_t cl;
        if (tok_utf8_scan((const unsigned char *)word + i, len - i, &cl) != TOK_UTF8_VALID)
            cl = 1; /* (the text was validated: not reached) */
        int32_t id = tok_strmap_get(vocab, word + i, cl);
        int have_bytes = id < 0;
        for (size_t j = 0; j < cl && have_bytes; j++)
            have_bytes = s->byte_id[(unsigned char)word[i + j]] >= 0;
        if (id >= 0 || have_bytes) {
            if (pending_unk) sym[n++] = unk_id;
            pending_unk = 0;
            if (id >= 0)
                sym[n++] = id;
            else
                for (size_t j = 0; j < cl; j++)
                    sym[n++] = s->byte_id[(unsigned char)word[i + j]];
        } else if (unk_id >= 0) {
            if (pending_unk && !fuse_unk) sym[n++] = unk_id;
            pending_unk = 1;
        }
        i += cl;
    }
    if (pending_unk) sym[n++] = unk_id;
    return n;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

size_t tok_sp_spelling_to_bytes(const tok_sp *s, const char *spell, size_t len, char *out) {
    if (s->byte_fallback && len == 6 && !memcmp(spell, "<0x", 3) && spell[5] == '>' &&
        hexval(spell[3]) >= 0 && hexval(spell[4]) >= 0) {
        out[0] = (char)(hexval(spell[3]) * 16 + hexval(spell[4]));
        return 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        if (s->dec_from_len && len - i >= s->dec_from_len &&
            !memcmp(spell + i, s->dec_from, s->dec_from_len)) {
            memcpy(out + n, s->dec_to, s->dec_to_len);
            n += s->dec_to_len;
            i += s->dec_from_len;
        } else {
            out[n++] = spell[i++];
        }
    }
    return n;
}

int tok_sp_is_byte_token(const tok_sp *s, int32_t id, int32_t *byte) {
    for (int b = 0; b < 256; b++)
        if (s->byte_id[b] == id && id >= 0) {
            if (byte) *byte = b;
            return 1;
        }
    return 0;
}

/* Appends a run of byte tokens: their text when valid UTF-8, else U+FFFD per byte. */
static size_t flush_bytes(const unsigned char *run, size_t n, char *out) {
    if (tok_utf8_valid_prefix(run, n) == n) {
        memcpy(out, run, n);
        return n;
    }
    for (size_t i = 0; i < n; i++)
        memcpy(out + 3 * i, "\xEF\xBF\xBD", 3);
    return 3 * n;
}

nc_status tok_sp_decode(const tok_sp *s, const int32_t *ids, const char *const *text,
                        const size_t *lens, size_t n, char **out, size_t *out_len, nc_error *err) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += 3 * lens[i];
    char *o = malloc(total + 1);
    unsigned char *run = malloc(n ? n : 1);
    if (!o || !run) {
        free(o);
        free(run);
        return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory decoding %zu ids", n);
    }
    size_t m = 0, nrun = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t b;
        if (s->byte_fallback && lens[i] == 1 && s->byte_id[(unsigned char)text[i][0]] == ids[i] &&
            tok_sp_is_byte_token(s, ids[i], &b)) {
            run[nrun++] = (unsigned char)b;
            continue;
        }
        m += flush_bytes(run, nrun, o + m);
        nrun = 0;
        memcpy(o + m, text[i], lens[i]);
        m += lens[i];
    }
    m += flush_bytes(run, nrun, o + m);
    free(run);
    /* Strip: up to start leading and stop trailing copies of the character */
    size_t a = 0, e = m;
    for (int k = 0;
         k < s->strip_start && e - a >= s->strip_len && !memcmp(o + a, s->strip, s->strip_len); k++)
        a += s->strip_len;
    for (int k = 0; k < s->strip_stop && e - a >= s->strip_len &&
                    !memcmp(o + e - s->strip_len, s->strip, s->strip_len);
         k++)
        e -= s->strip_len;
    memmove(o, o + a, e - a);
    o[e - a] = '\0';
    *out = o;
    *out_len = e - a;
    return NC_OK;
}
