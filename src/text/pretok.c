/* Pre-tokenizer steps (see pretok.h). A run walks the steps recursively:
 * each piece a step produces is handed straight to the next step, so no
 * list of pieces is built and nothing is copied except where a step adds
 * text (ByteLevel's prefix space). Splitting follows HF's
 * NormalizedString::split: matches and the gaps between them, then the
 * behaviour decides what is kept or merged; empty pieces are dropped. */
#include "text/pretok.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "text/spec.h"

/* GPT-2's split, used by a ByteLevel step with use_regex. */
static const char gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

typedef enum step_kind { STEP_SPLIT, STEP_PREFIX_SPACE } step_kind;

typedef enum split_behavior {
    SPLIT_REMOVED,
    SPLIT_ISOLATED,
    SPLIT_MERGED_WITH_PREVIOUS,
    SPLIT_MERGED_WITH_NEXT,
    SPLIT_CONTIGUOUS
} split_behavior;

static const struct {
    const char *name;
    split_behavior b;
} behaviors[] = {
    {"Removed", SPLIT_REMOVED},
    {"Isolated", SPLIT_ISOLATED},
    {"MergedWithPrevious", SPLIT_MERGED_WITH_PREVIOUS},
    {"MergedWithNext", SPLIT_MERGED_WITH_NEXT},
    {"Contiguous", SPLIT_CONTIGUOUS},
};

typedef struct step {
    step_kind kind;
    pcre2_code *re;
    split_behavior behavior;
    int invert;
} step;

#define MAX_STEPS 16

struct tok_pretok {
    step steps[MAX_STEPS];
    size_t n_steps;
};

/* ---- building ---- */

static nc_status add_step(tok_pretok *p, step s, const char *what, nc_error *err) {
    if (p->n_steps == MAX_STEPS) {
        if (s.re) pcre2_code_free(s.re);
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: pre_tokenizer has more than %d steps", what,
                       MAX_STEPS);
    }
    p->steps[p->n_steps++] = s;
    return NC_OK;
}

/* HF runs Split regexes on Oniguruma, whose Unicode \s is Z* plus
 * \t\n\v\f\r and U+0085. PCRE2's \s also takes U+180E (Mongolian vowel
 * separator, a space before Unicode 6.3), which splits text differently,
 * so \s is spelled out as Oniguruma's set, and \S outside a class as its
 * complement. (\S inside a class is left alone: no real pattern has it.) */
#define ONIG_SPACE_SET                                                                             \
    "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{"   \
    "202F}\\x{205F}\\x{3000}"

static char *spell_out_spaces(const char *p, size_t len, size_t *out_len) {
    static const char set[] = ONIG_SPACE_SET;
    char *o = malloc(len * (sizeof set + 3) + 1);
    if (!o) return NULL;
    size_t n = 0;
    int in_class = 0;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (c == '\\' && i + 1 < len) {
            char e = p[i + 1];
            if (e == 's' || (e == 'S' && !in_class)) {
                if (!in_class) o[n++] = '[';
                if (e == 'S') o[n++] = '^';
                memcpy(o + n, set, sizeof set - 1);
                n += sizeof set - 1;
                if (!in_class) o[n++] = ']';
            } else {
                o[n++] = c;
                o[n++] = e;
            }
            i++;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = 1;
            o[n++] = c;
            /* A ']' right after '[' or '[^' is a literal member. */
            if (i + 1 < len && p[i + 1] == '^') o[n++] = p[++i];
            if (i + 1 < len && p[i + 1] == ']') o[n++] = p[++i];
            continue;
        }
        if (in_class && c == '[' && i + 1 < len && p[i + 1] == ':') { /* [:alpha:] */
            const char *end = NULL;
            for (size_t j = i + 2; j + 1 < len; j++)
                if (p[j] == ':' && p[j + 1] == ']') {
                    end = p + j + 2;
                    break;
                }
            if (end) {
                memcpy(o + n, p + i, (size_t)(end - (p + i)));
                n += (size_t)(end - (p + i));
                i = (size_t)(end - p) - 1;
                continue;
            }
        }
        if (in_class && c == ']') in_class = 0;
        o[n++] = c;
    }
    o[n] = '\0';
    *out_len = n;
    return o;
}

static nc_status compile_regex(const char *pattern, size_t len, int literal, const char *what,
                               pcre2_code **out, nc_error *err) {
    int code;
    PCRE2_SIZE at;
    /* PCRE2_LITERAL admits UTF but not UCP (which only matters for classes). */
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    *out = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &code, &at, NULL);
    if (*out && !literal) { /* valid as written: now compile it with \s spelled out */
        size_t n;
        char *spelled = spell_out_spaces(pattern, len, &n);
        pcre2_code *re =
            spelled ? pcre2_compile((PCRE2_SPTR)spelled, n, opts, &code, &at, NULL) : NULL;
        free(spelled);
        if (re) { /* (if the rewrite does not compile, e.g. \s in a range, keep the original) */
            pcre2_code_free(*out);
            *out = re;
        }
    }
    if (!*out) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        return nc_fail(err, NC_ERR_FORMAT, "%s: pre_tokenizer regex: %s at offset %zu", what,
                       (const char *)msg, (size_t)at);
    }
    /* JIT is several times faster; the interpreter is a correct fallback. */
    (void)pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE);
    return NC_OK;
}

static nc_status parse_split(tok_pretok *p, const json_t *spec, const char *what, nc_error *err) {
    const json_t *pat = json_object_get(spec, "pattern");
    const json_t *regex = pat ? json_object_get(pat, "Regex") : NULL;
    const json_t *str = pat ? json_object_get(pat, "String") : NULL;
    const json_t *src = regex ? regex : str;
    if (!json_is_string(src))
        return nc_fail(
            err, NC_ERR_FORMAT,
            "%s: pre_tokenizer Split needs pattern {\"Regex\": ...} or {\"String\": ...}", what);
    const char *bname;
    NC_TRY(nc_json_str(spec, "behavior", &bname, 1, what, err));
    step s = {STEP_SPLIT, NULL, SPLIT_ISOLATED, 0};
    size_t i, n_behaviors = sizeof behaviors / sizeof behaviors[0];
    for (i = 0; i < n_behaviors && strcmp(behaviors[i].name, bname) != 0; i++) {
    }
    if (i == n_behaviors)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: pre_tokenizer Split behavior '%s' is unknown",
                       what, bname);
    s.behavior = behaviors[i].b;
    NC_TRY(nc_json_bool(spec, "invert", &s.invert, 0, what, err));
    NC_TRY(compile_regex(json_string_value(src), json_string_length(src), src == str, what, &s.re,
                         err));
    return add_step(p, s, what, err);
}

/* One pre-tokenizer of the pipeline (text/spec.h walks the Sequences). */
static nc_status parse_leaf(void *ctx, const json_t *spec, const char *type, const char *what,
                            nc_error *err) {
    tok_pretok *p = ctx;
    if (!strcmp(type, "Split")) return parse_split(p, spec, what, err);
    if (!strcmp(type, "ByteLevel")) {
        /* Serde defaults of HF's ByteLevel: add_prefix_space and use_regex true. */
        int add_prefix_space = 1, use_regex = 1;
        NC_TRY(nc_json_bool(spec, "add_prefix_space", &add_prefix_space, 0, what, err));
        NC_TRY(nc_json_bool(spec, "use_regex", &use_regex, 0, what, err));
        if (add_prefix_space)
            NC_TRY(add_step(p, (step){STEP_PREFIX_SPACE, NULL, SPLIT_ISOLATED, 0}, what, err));
        if (use_regex) {
            step s = {STEP_SPLIT, NULL, SPLIT_ISOLATED, 0};
            NC_TRY(compile_regex(gpt2_pattern, sizeof gpt2_pattern - 1, 0, what, &s.re, err));
            NC_TRY(add_step(p, s, what, err));
        }
        /* The byte-to-unicode mapping itself is done by the BPE stage. */
        return NC_OK;
    }
    return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: pre_tokenizer type '%s' is not supported", what,
                   type);
}

nc_status tok_pretok_new(const json_t *spec, const char *what, tok_pretok **out, nc_error *err) {
    *out = NULL;
    tok_pretok *p = calloc(1, sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    if (spec) {
        nc_status st =
            tok_spec_walk(spec, "pre_tokenizer", "pretokenizers", parse_leaf, p, what, err);
        if (st != NC_OK) {
            tok_pretok_free(p);
            return st;
        }
    }
    *out = p;
    return NC_OK;
}

void tok_pretok_free(tok_pretok *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n_steps; i++)
        if (p->steps[i].re) pcre2_code_free(p->steps[i].re);
    free(p);
}

/* ---- running ---- */

typedef struct span {
    size_t start, end;
    int is_match; /* after behaviours: 1 means "remove" */
} span;

typedef struct run_ctx {
    const tok_pretok *p;
    tok_piece_fn fn;
    void *fn_ctx;
    pcre2_match_data *md[MAX_STEPS];
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit_stack;
    span *spans[MAX_STEPS]; /* per-step work lists (a step finishes one piece before the next) */
    size_t cap[MAX_STEPS];
} run_ctx;

static nc_status push_span(run_ctx *c, size_t k, size_t *n, span s, nc_error *err) {
    if (*n == c->cap[k]) {
        size_t cap = c->cap[k] ? 2 * c->cap[k] : 64;
        span *sp = realloc(c->spans[k], cap * sizeof *sp);
        if (!sp) return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (pre-tokenizer)");
        c->spans[k] = sp;
        c->cap[k] = cap;
    }
    c->spans[k][(*n)++] = s;
    return NC_OK;
}

/* The JIT's default 32 KiB stack is enough for ordinary text; very long
 * runs of whitespace backtrack deeper. Then this run gets a large stack of
 * its own (private, so concurrent runs stay independent). */
static nc_status use_large_jit_stack(run_ctx *c, nc_error *err) {
    c->mctx = pcre2_match_context_create(NULL);
    c->jit_stack = pcre2_jit_stack_create((PCRE2_SIZE)32 << 10, (PCRE2_SIZE)256 << 20, NULL);
    if (!c->mctx || !c->jit_stack)
        return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (regex stack)");
    pcre2_jit_stack_assign(c->mctx, NULL, c->jit_stack);
    return NC_OK;
}

static size_t utf8_char_len(unsigned char b) {
    return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

/* Matches and gaps of the regex over the piece, as HF's Pattern::find_matches
 * on a regex: an empty match directly at the end of the previous match is
 * skipped by advancing one character (the onig crate's find_iter rule). */
static nc_status find_matches(run_ctx *c, size_t k, const char *s, size_t len, size_t *n_spans,
                              nc_error *err) {
    const step *st = &c->p->steps[k];
    *n_spans = 0;
    if (len == 0) return push_span(c, k, n_spans, (span){0, 0, 0}, err);
    size_t prev = 0, search_at = 0, last_match_end = (size_t)-1;
    while (search_at <= len) {
        int rc = pcre2_match(st->re, (PCRE2_SPTR)s, len, search_at, PCRE2_NO_UTF_CHECK, c->md[k],
                             c->mctx);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !c->jit_stack) {
            NC_TRY(use_large_jit_stack(c, err));
            continue; /* the same search again */
        }
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return nc_fail(err, NC_ERR_INTERNAL, "tokenizer: pre-tokenizer regex failed: %s",
                           (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md[k]);
        size_t ms = ov[0], me = ov[1];
        if (ms == me && me == last_match_end) {
            search_at += search_at < len ? utf8_char_len((unsigned char)s[search_at]) : 1;
            continue;
        }
        search_at = me;
        last_match_end = me;
        if (prev != ms) NC_TRY(push_span(c, k, n_spans, (span){prev, ms, 0}, err));
        NC_TRY(push_span(c, k, n_spans, (span){ms, me, 1}, err));
        prev = me;
    }
    if (prev != len) NC_TRY(push_span(c, k, n_spans, (span){prev, len, 0}, err));
    return NC_OK;
}

/* Rewrites the spans in place per the behaviour; afterwards is_match means
 * "drop this span" (only Removed drops anything). */
static size_t apply_behavior(span *sp, size_t n, split_behavior b, int invert) {
    if (n == 0 || !sp) return 0; /* (find_matches always gives one span or more) */
    if (invert)
        for (size_t i = 0; i < n; i++)
            sp[i].is_match = !sp[i].is_match;
    size_t o = 0;
    int previous_match = 0;
    switch (b) {
    case SPLIT_REMOVED:
        return n;
    case SPLIT_ISOLATED:
        for (size_t i = 0; i < n; i++)
            sp[i].is_match = 0;
        return n;
    case SPLIT_CONTIGUOUS:
        for (size_t i = 0; i < n; i++) {
            int m = sp[i].is_match;
            if (o > 0 && m == previous_match)
                sp[o - 1].end = sp[i].end;
            else
                sp[o++] = (span){sp[i].start, sp[i].end, 0};
            previous_match = m;
        }
        return o;
    case SPLIT_MERGED_WITH_PREVIOUS:
        for (size_t i = 0; i < n; i++) {
            int m = sp[i].is_match;
            if (o > 0 && m && !previous_match)
                sp[o - 1].end = sp[i].end;
            else
                sp[o++] = (span){sp[i].start, sp[i].end, 0};
            previous_match = m;
        }
        return o;
    case SPLIT_MERGED_WITH_NEXT: {
        /* Walk backwards, merging a match into the span after it. */
        size_t w = n;
        for (size_t i = n; i-- > 0;) {
            int m = sp[i].is_match;
            if (w < n && m && !previous_match)
                sp[w].start = sp[i].start;
            else
                sp[--w] = (span){sp[i].start, sp[i].end, 0};
            previous_match = m;
        }
        memmove(sp, sp + w, (n - w) * sizeof *sp);
        return n - w;
    }
    }
    return n;
}

static nc_status run_from(run_ctx *c, size_t k, const char *s, size_t len, nc_error *err) {
    if (len == 0) return NC_OK;
    if (k == c->p->n_steps) return c->fn(c->fn_ctx, s, len, err);
    const step *st = &c->p->steps[k];
    if (st->kind == STEP_PREFIX_SPACE) {
        if (s[0] == ' ') return run_from(c, k + 1, s, len, err);
        char *buf = malloc(len + 1);
        if (!buf) return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (pre-tokenizer)");
        buf[0] = ' ';
        memcpy(buf + 1, s, len);
        nc_status rc = run_from(c, k + 1, buf, len + 1, err);
        free(buf);
        return rc;
    }
    size_t n;
    NC_TRY(find_matches(c, k, s, len, &n, err));
    n = apply_behavior(c->spans[k], n, st->behavior, st->invert);
    for (size_t i = 0; i < n && c->spans[k]; i++) {
        span sp = c->spans[k][i]; /* copied: deeper steps use their own lists */
        if (!sp.is_match) NC_TRY(run_from(c, k + 1, s + sp.start, sp.end - sp.start, err));
    }
    return NC_OK;
}

nc_status tok_pretok_run(const tok_pretok *p, const char *text, size_t len, tok_piece_fn fn,
                         void *ctx, nc_error *err) {
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.fn = fn;
    c.fn_ctx = ctx;
    nc_status st = NC_OK;
    for (size_t k = 0; k < p->n_steps && st == NC_OK; k++) {
        if (!p->steps[k].re) continue;
        c.md[k] = pcre2_match_data_create_from_pattern(p->steps[k].re, NULL);
        if (!c.md[k]) st = nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (regex)");
    }
    if (st == NC_OK) st = run_from(&c, 0, text, len, err);
    for (size_t k = 0; k < p->n_steps; k++) {
        if (c.md[k]) pcre2_match_data_free(c.md[k]);
        free(c.spans[k]);
    }
    if (c.jit_stack) pcre2_jit_stack_free(c.jit_stack);
    if (c.mctx) pcre2_match_context_free(c.mctx);
    return st;
}
