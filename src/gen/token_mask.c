/* The vocabulary walk (see token_mask.h). For sorted tokens t[i] with
 * lcp[i] bytes in common with t[i-1], states[d] holds the matcher after the
 * first d bytes of the current token; a token reuses its predecessor's
 * states up to their common prefix. */
#include "gen/token_mask.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/family.h"

typedef struct tm_entry {
    const unsigned char *p;
    uint32_t len;
    int32_t id;
} tm_entry;

struct tm_vocab {
    tm_entry *sorted;
    uint32_t *lcp;
    int n_sorted;
    int32_t *never; /* ids never allowed: specials, ids without bytes */
    int n_never;
    int32_t eog[8];
    int n_eog;
    int n_vocab;
    uint32_t max_len;
};

static int by_bytes(const void *a, const void *b) {
    const tm_entry *x = a, *y = b;
    uint32_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    if (c) return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

static int is_eog(const tm_vocab *v, int32_t id) {
    for (int i = 0; i < v->n_eog; i++)
        if (v->eog[i] == id) return 1;
    return 0;
}

#define MAX_TAGS 16

/* The reasoning tags of every family (family.h) in t's vocabulary: tokens
 * the pipeline routes by id (think.h), so never inside constrained output,
 * even where their text would fit. */
static int think_tags(const tok_tokenizer *t, int32_t *ids) {
    int n = 0;
    for (int i = 0; model_family_at(i) && n + 2 <= MAX_TAGS; i++) {
        const model_family_row *f = model_family_at(i);
        if (f->think_open) ids[n++] = tok_find(t, f->think_open);
        if (f->think_close) ids[n++] = tok_find(t, f->think_close);
    }
    return n;
}

static int is_in(const int32_t *ids, int n, int32_t id) {
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return 1;
    return 0;
}

nc_status tm_vocab_new(const tok_tokenizer *t, int n_vocab, const int32_t *eog, int n_eog,
                       tm_vocab **out, nc_error *err) {
    *out = NULL;
    tm_vocab *v = calloc(1, sizeof *v);
    if (!v) return nc_fail(err, NC_ERR_NOMEM, "token mask: out of memory");
    v->n_vocab = n_vocab;
    v->n_eog = n_eog < 8 ? n_eog : 8;
    memcpy(v->eog, eog, (size_t)v->n_eog * sizeof *eog);
    v->sorted = malloc((size_t)n_vocab * sizeof *v->sorted);
    v->lcp = malloc((size_t)n_vocab * sizeof *v->lcp);
    v->never = malloc((size_t)n_vocab * sizeof *v->never);
    if (!v->sorted || !v->lcp || !v->never) {
        tm_vocab_free(v);
        return nc_fail(err, NC_ERR_NOMEM, "token mask: out of memory");
    }
    int32_t n_tok = tok_vocab_size(t);
    int32_t tags[MAX_TAGS];
    int n_tags = think_tags(t, tags);
    for (int32_t id = 0; id < n_vocab; id++) {
        size_t len = 0;
        const char *p = id < n_tok ? tok_token_bytes(t, id, &len) : NULL;
        if (is_eog(v, id)) continue;
        if (!p || len == 0 || tok_is_special(t, id) || is_in(tags, n_tags, id)) {
            v->never[v->n_never++] = id;
            continue;
        }
        v->sorted[v->n_sorted++] = (tm_entry){(const unsigned char *)p, (uint32_t)len, id};
        if (len > v->max_len) v->max_len = (uint32_t)len;
    }
    qsort(v->sorted, (size_t)v->n_sorted, sizeof *v->sorted, by_bytes);
    for (int i = 0; i < v->n_sorted; i++) {
        uint32_t l = 0;
        if (i > 0) {
            const tm_entry *a = &v->sorted[i - 1], *b = &v->sorted[i];
            while (l < a->len && l < b->len && a->p[l] == b->p[l])
                l++;
        }
        v->lcp[i] = l;
    }
    *out = v;
    return NC_OK;
}

void tm_vocab_free(tm_vocab *v) {
    if (!v) return;
    free(v->sorted);
    free(v->lcp);
    free(v->never);
    free(v);
}

int tm_mask(const tm_vocab *v, const jm_grammar *gr, const jm_state *s, float *logits) {
    jm_state *st = malloc(((size_t)v->max_len + 1) * sizeof *st);
    int n_allowed = 0;
    for (int i = 0; i < v->n_never; i++)
        logits[v->never[i]] = -INFINITY;
    int can_end = jm_can_end(gr, s);
    for (int i = 0; i < v->n_eog; i++)
        if (v->eog[i] >= 0 && v->eog[i] < v->n_vocab) {
            if (can_end)
                n_allowed++;
            else
                logits[v->eog[i]] = -INFINITY;
        }
    if (!st) { /* no room to search: only the end, if anything */
        for (int i = 0; i < v->n_sorted; i++)
            logits[v->sorted[i].id] = -INFINITY;
        return n_allowed;
    }
    jm_copy(&st[0], s);
    uint32_t valid = 0; /* st[0..valid] hold the previous token's prefixes */
    for (int i = 0; i < v->n_sorted; i++) {
        const tm_entry *e = &v->sorted[i];
        uint32_t d = v->lcp[i];
        if (d > valid) { /* shares the byte the previous token failed on */
            logits[e->id] = -INFINITY;
            continue;
        }
        for (; d < e->len; d++) {
            jm_copy(&st[d + 1], &st[d]);
            if (!jm_feed(gr, &st[d + 1], e->p[d])) break;
        }
        valid = d;
        if (d < e->len)
            logits[e->id] = -INFINITY;
        else
            n_allowed++;
    }
    free(st);
    if (n_allowed == 0) /* stuck (nesting too deep): end rather than draw from nothing */
        for (int i = 0; i < v->n_eog; i++)
            if (v->eog[i] >= 0 && v->eog[i] < v->n_vocab) logits[v->eog[i]] = 0;
    return n_allowed;
}

int tm_vocab_n(const tm_vocab *v) {
    return v->n_vocab;
}

int tm_accept(const tm_vocab *v, const jm_grammar *gr, jm_state *s, int32_t id) {
    if (is_eog(v, id)) return jm_can_end(gr, s);
    for (int i = 0; i < v->n_never; i++)
        if (v->never[i] == id) return 0;
    /* Find its bytes: the sorted table has them (a linear scan per accepted
     * token is small next to a mask). */
    for (int i = 0; i < v->n_sorted; i++) {
        if (v->sorted[i].id != id) continue;
        jm_state t;
        jm_copy(&t, s);
        for (uint32_t k = 0; k < v->sorted[i].len; k++)
            if (!jm_feed(gr, &t, v->sorted[i].p[k])) return 0;
        jm_copy(s, &t);
        return 1;
    }
    return 0;
}
