/* The tokenizer object: loading tokenizer.json into flat tables, encoding
 * (added tokens -> normaliser -> pre-tokenizer -> byte-level BPE) and
 * decoding. After tok_load everything here is read-only, so one tokenizer
 * serves any number of threads; per-call state lives on the caller's stack
 * or in buffers owned by the call. */
#include "text/tokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mmap.h"
#include "text/added.h"
#include "text/bpe.h"
#include "text/bytelevel.h"
#include "text/normalize.h"
#include "text/post_template.h"
#include "text/pretok.h"
#include "text/sp_bpe.h"
#include "text/tokmap.h"
#include "text/utf8.h"

/* Ids above this are rejected: they would make the per-id tables huge and
 * no real vocabulary comes close. */
#define TOK_MAX_ID (1 << 24)

struct tok_tokenizer {
    int32_t vocab_size;
    /* Per id: the bytes it stands for (tok_len UINT32_MAX: no such id). */
    uint32_t *tok_off, *tok_len;
    char *tok_bytes;
    unsigned char *is_special;
    size_t max_token_bytes;

    /* BPE model: spelling -> id, merges, the id of each single byte. */
    char *spellings; /* arena the vocab map's keys point into */
    tok_strmap vocab;
    tok_pairmap merges;
    int32_t byte_id[256];
    int32_t unk_id;
    int fuse_unk, ignore_merges;

    tok_added *added;
    size_t n_added;
    tok_added_set raw_set, norm_set; /* normalized=false / true tokens */

    tok_norm *norm;
    tok_pretok *pretok;

    /* Encoder tokenizers (post_template.c, sp_bpe.c): the special tokens of
     * add_special_tokens (post_err: why the post_processor was refused), and
     * the SentencePiece-style steps when the BPE model has byte_fallback. */
    tok_template *post;
    char post_err[256];
    int is_sp;
    tok_sp *sp;
};

/* ---------------------------------------------------------------- loading */

typedef struct loader {
    tok_tokenizer *t;
    const char *what;
    nc_error *err;
} loader;

static nc_status check_id(const loader *L, json_int_t id, const char *where, const char *name) {
    if (id < 0 || id >= TOK_MAX_ID)
        return nc_fail(L->err, NC_ERR_RANGE, "%s: %s '%s': id %lld is out of range [0, %d)",
                       L->what, where, name, (long long)id, TOK_MAX_ID);
    return NC_OK;
}

/* Reads model.vocab into the spelling map; returns the largest id. */
static nc_status load_vocab(loader *L, const json_t *vocab, int32_t *max_id) {
    tok_tokenizer *t = L->t;
    if (!json_is_object(vocab))
        return nc_fail(L->err, NC_ERR_FORMAT, "%s: model.vocab must be an object", L->what);
    size_t n = json_object_size(vocab), total = 0;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)vocab, key, val) total += strlen(key) + 1;
    t->spellings = malloc(total ? total : 1);
    if (!t->spellings) return nc_fail(L->err, NC_ERR_NOMEM, "%s: out of memory", L->what);
    NC_TRY(tok_strmap_init(&t->vocab, n, L->err));
    size_t off = 0;
    *max_id = -1;
    json_object_foreach((json_t *)vocab, key, val) {
        if (!json_is_integer(val))
            return nc_fail(L->err, NC_ERR_FORMAT, "%s: model.vocab['%s'] must be an integer id",
                           L->what, key);
        json_int_t id = json_integer_value(val);
        NC_TRY(check_id(L, id, "model.vocab", key));
        size_t len = strlen(key);
        memcpy(t->spellings + off, key, len + 1);
        tok_strmap_put(&t->vocab, t->spellings + off, len, (int32_t)id);
        off += len + 1;
        if (id > *max_id) *max_id = (int32_t)id;
    }
    return NC_OK;
}

static int32_t vocab_id(const tok_tokenizer *t, const char *s, size_t len) {
    return tok_strmap_get(&t->vocab, s, len);
}

/* Reads model.merges ("a b" strings or ["a", "b"] pairs); the rank of a
 * merge is its index. */
static nc_status load_merges(loader *L, const json_t *merges) {
    tok_tokenizer *t = L->t;
    if (!merges || json_is_null(merges))
        merges = NULL;
    else if (!json_is_array(merges))
        return nc_fail(L->err, NC_ERR_FORMAT, "%s: model.merges must be an array", L->what);
    size_t n = merges ? json_array_size(merges) : 0;
    NC_TRY(tok_pairmap_init(&t->merges, n, L->err));
    char *buf = NULL;
    size_t buf_cap = 0;
    nc_status st = NC_OK;
    for (size_t i = 0; i < n && st == NC_OK; i++) {
        const json_t *m = json_array_get(merges, i);
        const char *a, *b;
        size_t la, lb;
        if (json_is_string(m)) {
            const char *s = json_string_value(m);
            const char *sp = strchr(s, ' ');
            if (!strncmp(s, "#version", 8)) continue;
            if (!sp || strchr(sp + 1, ' ') || sp == s || !sp[1]) {
                st = nc_fail(L->err, NC_ERR_FORMAT,
                             "%s: model.merges[%zu] '%s' is not two tokens separated by a space",
                             L->what, i, s);
                break;
            }
            a = s, la = (size_t)(sp - s), b = sp + 1, lb = strlen(sp + 1);
        } else if (json_is_array(m) && json_array_size(m) == 2 &&
                   json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
            a = json_string_value(json_array_get(m, 0));
            la = json_string_length(json_array_get(m, 0));
            b = json_string_value(json_array_get(m, 1));
            lb = json_string_length(json_array_get(m, 1));
        } else {
            st = nc_fail(L->err, NC_ERR_FORMAT,
                         "%s: model.merges[%zu] must be \"a b\" or [\"a\", \"b\"]", L->what, i);
            break;
        }
        if (!buf || la + lb > buf_cap) { /* (allocated even for two empty strings) */
            buf_cap = 2 * (la + lb) + 64;
            char *nb = realloc(buf, buf_cap);
            if (!nb) {
                st = nc_fail(L->err, NC_ERR_NOMEM, "%s: out of memory", L->what);
                break;
            }
            buf = nb;
        }
        memcpy(buf, a, la);
        memcpy(buf + la, b, lb);
        int32_t ia = vocab_id(t, a, la), ib = vocab_id(t, b, lb), im = vocab_id(t, buf, la + lb);
        if (ia < 0 || ib < 0 || im < 0) {
            const char *miss = ia < 0 ? "left token" : ib < 0 ? "right token" : "merged token";
            st = nc_fail(L->err, NC_ERR_FORMAT, "%s: model.merges[%zu]: %s is not in model.vocab",
                         L->what, i, miss);
            break;
        }
        tok_pairmap_put(&t->merges, ia, ib, (uint32_t)i, im);
    }
    free(buf);
    return st;
}

static nc_status load_model(loader *L, const json_t *model, int32_t *max_id) {
    tok_tokenizer *t = L->t;
    if (!json_is_object(model))
        return nc_fail(L->err, NC_ERR_FORMAT, "%s: missing object 'model'", L->what);
    const char *type = "BPE";
    NC_TRY(nc_json_str(model, "type", &type, 0, L->what, L->err));
    if (strcmp(type, "BPE") != 0)
        return nc_fail(L->err, NC_ERR_UNSUPPORTED,
                       "%s: model type '%s' is not supported (BPE only)", L->what, type);
    const char *prefix = "", *suffix = "", *unk = NULL;
    NC_TRY(nc_json_str(model, "continuing_subword_prefix", &prefix, 0, L->what, L->err));
    NC_TRY(nc_json_str(model, "end_of_word_suffix", &suffix, 0, L->what, L->err));
    if (*prefix || *suffix)
        return nc_fail(L->err, NC_ERR_UNSUPPORTED,
                       "%s: model.continuing_subword_prefix / end_of_word_suffix are not supported",
                       L->what);
    int byte_fallback = 0;
    NC_TRY(nc_json_bool(model, "byte_fallback", &byte_fallback, 0, L->what, L->err));
    t->is_sp = byte_fallback; /* SentencePiece-style steps, sp_bpe.c */
    double dropout = 0;
    NC_TRY(nc_json_num(model, "dropout", &dropout, 0, L->what, L->err));
    if (dropout > 0)
        return nc_fail(L->err, NC_ERR_UNSUPPORTED, "%s: model.dropout is not supported", L->what);
    NC_TRY(nc_json_bool(model, "fuse_unk", &t->fuse_unk, 0, L->what, L->err));
    NC_TRY(nc_json_bool(model, "ignore_merges", &t->ignore_merges, 0, L->what, L->err));
    NC_TRY(nc_json_str(model, "unk_token", &unk, 0, L->what, L->err));

    NC_TRY(load_vocab(L, json_object_get(model, "vocab"), max_id));
    NC_TRY(load_merges(L, json_object_get(model, "merges")));
    t->unk_id = unk ? vocab_id(t, unk, strlen(unk)) : -1;
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b, spell[2];
        size_t n = tok_bytes_to_spelling(&c, 1, spell);
        t->byte_id[b] = vocab_id(t, (const char *)spell, n);
    }
    return NC_OK;
}

static nc_status load_added(loader *L, const json_t *list, int32_t *max_id) {
    tok_tokenizer *t = L->t;
    if (!list || json_is_null(list)) return NC_OK;
    if (!json_is_array(list))
        return nc_fail(L->err, NC_ERR_FORMAT, "%s: added_tokens must be an array", L->what);
    size_t n = json_array_size(list);
    t->added = calloc(n ? n : 1, sizeof *t->added);
    if (!t->added) return nc_fail(L->err, NC_ERR_NOMEM, "%s: out of memory", L->what);
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(list, i);
        char what[160];
        snprintf(what, sizeof what, "%s: added_tokens[%zu]", L->what, i);
        int64_t id;
        const char *content;
        int special = 0, single_word = 0, lstrip = 0, rstrip = 0, normalized = 0;
        NC_TRY(nc_json_int(o, "id", &id, 1, what, L->err));
        NC_TRY(nc_json_str(o, "content", &content, 1, what, L->err));
        NC_TRY(nc_json_bool(o, "special", &special, 0, what, L->err));
        NC_TRY(nc_json_bool(o, "single_word", &single_word, 0, what, L->err));
        NC_TRY(nc_json_bool(o, "lstrip", &lstrip, 0, what, L->err));
        NC_TRY(nc_json_bool(o, "rstrip", &rstrip, 0, what, L->err));
        NC_TRY(nc_json_bool(o, "normalized", &normalized, 0, what, L->err));
        NC_TRY(check_id(L, id, "added_tokens", content));
        size_t len = json_string_length(json_object_get(o, "content"));
        if (len == 0) return nc_fail(L->err, NC_ERR_FORMAT, "%s: empty 'content'", what);
        tok_added *a = &t->added[t->n_added++];
        a->content = malloc(len + 1);
        if (!a->content) return nc_fail(L->err, NC_ERR_NOMEM, "%s: out of memory", L->what);
        memcpy(a->content, content, len + 1);
        a->len = len;
        a->id = (int32_t)id;
        a->special = (unsigned char)special;
        a->single_word = (unsigned char)single_word;
        a->lstrip = (unsigned char)lstrip;
        a->rstrip = (unsigned char)rstrip;
        a->normalized = (unsigned char)normalized;
        if (a->id > *max_id) *max_id = a->id;
    }
    return NC_OK;
}

/* Normalised tokens are matched on normalised text, so their content is
 * normalised the same way (as HF builds its normalised trie). */
/* The normaliser: tokenizer.json's, or the SentencePiece-style one. */
static nc_status normalize(const tok_tokenizer *t, const char *s, size_t len, char **out,
                           size_t *out_len, nc_error *err) {
    if (t->sp) return tok_sp_normalize(t->sp, s, len, out, out_len, err);
    return tok_norm_apply(t->norm, s, len, out, out_len, err);
}

static nc_status normalize_added(loader *L) {
    tok_tokenizer *t = L->t;
    for (size_t i = 0; i < t->n_added; i++) {
        tok_added *a = &t->added[i];
        if (!a->normalized) continue;
        char *out;
        size_t len;
        NC_TRY(normalize(t, a->content, a->len, &out, &len, L->err));
        if (out == a->content) continue;
        char *copy = realloc(out, len + 1);
        if (!copy) {
            free(out);
            return nc_fail(L->err, NC_ERR_NOMEM, "%s: out of memory", L->what);
        }
        copy[len] = '\0';
        free(a->content);
        a->content = copy;
        a->len = len;
    }
    return NC_OK;
}

/* The id -> bytes table: an added token's literal text wins over a vocab
 * entry with the same id (HF looks up added tokens first). Both go through
 * the byte-level decoding rule of HF's ByteLevel decoder. */
static nc_status build_id_table(loader *L, int32_t max_id) {
    tok_tokenizer *t = L->t;
    size_t n = (size_t)max_id + 1, total = 0;
    t->vocab_size = max_id + 1;
    t->tok_off = malloc(n * sizeof *t->tok_off);
    t->tok_len = malloc(n * sizeof *t->tok_len);
    t->is_special = calloc(n, 1);
    const char **spell = calloc(n, sizeof *spell);
    size_t *spell_len = calloc(n, sizeof *spell_len);
    if (!t->tok_off || !t->tok_len || !t->is_special || !spell || !spell_len) {
        free(spell);
        free(spell_len);
        return nc_fail(L->err, NC_ERR_NOMEM, "%s: out of memory", L->what);
    }
    for (size_t s = 0; s <= t->vocab.mask; s++) {
        const tok_strmap_slot *slot = &t->vocab.slots[s];
        if (slot->key && !spell[slot->val]) {
            spell[slot->val] = slot->key;
            spell_len[slot->val] = slot->len;
        }
    }
    for (size_t i = 0; i < t->n_added; i++) {
        const tok_added *a = &t->added[i];
        spell[a->id] = a->content;
        spell_len[a->id] = a->len;
        t->is_special[a->id] = a->special;
    }
    for (size_t id = 0; id < n; id++)
        total += spell_len[id];
    t->tok_bytes = malloc(total ? total : 1);
    if (!t->tok_bytes) {
        free(spell);
        free(spell_len);
        return nc_fail(L->err, NC_ERR_NOMEM, "%s: out of memory", L->what);
    }
    size_t off = 0;
    for (size_t id = 0; id < n; id++) {
        if (!spell[id]) {
            t->tok_off[id] = 0;
            t->tok_len[id] = UINT32_MAX;
            continue;
        }
        size_t len =
            t->sp ? tok_sp_spelling_to_bytes(t->sp, spell[id], spell_len[id], t->tok_bytes + off)
                  : tok_spelling_to_bytes((const unsigned char *)spell[id], spell_len[id],
                                          (unsigned char *)t->tok_bytes + off);
        t->tok_off[id] = (uint32_t)off;
        t->tok_len[id] = (uint32_t)len;
        if (len > t->max_token_bytes) t->max_token_bytes = len;
        off += len;
    }
    free(spell);
    free(spell_len);
    return NC_OK;
}

static nc_status check_decoder(loader *L, const json_t *dec) {
    const char *type = NULL;
    if (json_is_object(dec)) NC_TRY(nc_json_str(dec, "type", &type, 0, L->what, L->err));
    if (!type || strcmp(type, "ByteLevel") != 0)
        return nc_fail(L->err, NC_ERR_UNSUPPORTED, "%s: decoder must be ByteLevel (found %s)",
                       L->what, type ? type : "none");
    return NC_OK;
}

static nc_status load_json(tok_tokenizer *t, const json_t *root, const char *what, nc_error *err) {
    loader L = {t, what, err};
    if (!json_is_object(root))
        return nc_fail(err, NC_ERR_FORMAT, "%s: the document must be a JSON object", what);
    int32_t max_id = -1;
    NC_TRY(load_model(&L, json_object_get(root, "model"), &max_id));
    NC_TRY(load_added(&L, json_object_get(root, "added_tokens"), &max_id));
    if (max_id < 0) return nc_fail(err, NC_ERR_FORMAT, "%s: the vocabulary is empty", what);
    if (t->is_sp) {
        NC_TRY(tok_sp_new(root, what, &t->sp, err));
        tok_sp_bind_vocab(t->sp, &t->vocab);
    }
    NC_TRY(tok_norm_new(t->sp ? NULL : json_object_get(root, "normalizer"), what, &t->norm, err));
    NC_TRY(tok_pretok_new(json_object_get(root, "pre_tokenizer"), what, &t->pretok, err));
    if (!t->sp) NC_TRY(check_decoder(&L, json_object_get(root, "decoder")));
    /* A post_processor this code cannot apply fails tok_encode_special only. */
    nc_error perr = {0};
    if (tok_template_new(json_object_get(root, "post_processor"), what, &t->post, &perr) != NC_OK)
        snprintf(t->post_err, sizeof t->post_err, "%s", perr.msg);
    NC_TRY(normalize_added(&L));
    NC_TRY(tok_added_set_build(&t->raw_set, t->added, t->n_added, 0, err));
    NC_TRY(tok_added_set_build(&t->norm_set, t->added, t->n_added, 1, err));
    return build_id_table(&L, max_id);
}

static nc_status load_parsed(json_t *root, const char *what, tok_tokenizer **out, nc_error *err) {
    tok_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        json_decref(root);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    }
    nc_status st = load_json(t, root, what, err);
    json_decref(root);
    if (st != NC_OK) {
        tok_free(t);
        return st;
    }
    *out = t;
    return NC_OK;
}

nc_status tok_load_from_memory(const char *json, size_t len, const char *what, tok_tokenizer **out,
                               nc_error *err) {
    *out = NULL;
    json_t *root;
    NC_TRY(nc_json_parse(json, len, what, &root, err));
    return load_parsed(root, what, out, err);
}

nc_status tok_load(const char *path, tok_tokenizer **out, nc_error *err) {
    *out = NULL;
    char file[4096];
    if (nc_is_dir(path)) {
        snprintf(file, sizeof file, "%s/tokenizer.json", path);
        if (!nc_file_exists(file))
            return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no tokenizer.json in this folder", path);
    } else {
        if (!nc_file_exists(path))
            return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no such file or folder", path);
        snprintf(file, sizeof file, "%s", path);
    }
    /* Reading the file whole and parsing the buffer is much faster than
     * jansson's file reader (which goes through getc). */
    char *buf;
    size_t len;
    NC_TRY(nc_read_file(file, &buf, &len, err));
    nc_status st = tok_load_from_memory(buf, len, file, out, err);
    free(buf);
    return st;
}

void tok_free(tok_tokenizer *t) {
    if (!t) return;
    free(t->tok_off);
    free(t->tok_len);
    free(t->tok_bytes);
    free(t->is_special);
    free(t->spellings);
    tok_strmap_free(&t->vocab);
    tok_pairmap_free(&t->merges);
    for (size_t i = 0; i < t->n_added; i++)
        free(t->added[i].content);
    free(t->added);
    tok_added_set_free(&t->raw_set);
    tok_added_set_free(&t->norm_set);
    tok_norm_free(t->norm);
    tok_pretok_free(t->pretok);
    tok_template_free(t->post);
    tok_sp_free(t->sp);
    free(t);
}

/* ----------------------------------------------------------------- lookup */

int32_t tok_vocab_size(const tok_tokenizer *t) {
    return t->vocab_size;
}

size_t tok_max_token_bytes(const tok_tokenizer *t) {
    return t->max_token_bytes;
}

const char *tok_token_bytes(const tok_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->vocab_size || t->tok_len[id] == UINT32_MAX) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->tok_len[id];
    return t->tok_bytes + t->tok_off[id];
}

int32_t tok_find(const tok_tokenizer *t, const char *token_text) {
    size_t len = strlen(token_text);
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].len == len && !memcmp(t->added[i].content, token_text, len))
            return t->added[i].id;
    return vocab_id(t, token_text, len);
}

int tok_is_special(const tok_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->vocab_size && t->is_special[id];
}

/* --------------------------------------------------------------- encoding */

typedef struct encoder {
    const tok_tokenizer *t;
    int32_t *ids;
    size_t n, cap;
    tok_bpe_scratch scratch;
    char *spell; /* ignore_merges lookups */
    size_t spell_cap;
} encoder;

static nc_status reserve_ids(encoder *e, size_t more, nc_error *err) {
    if (e->n + more <= e->cap) return NC_OK;
    size_t cap = e->cap ? e->cap : 64;
    while (cap < e->n + more)
        cap *= 2;
    int32_t *ids = realloc(e->ids, cap * sizeof *ids);
    if (!ids) return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory (%zu ids)", cap);
    e->ids = ids;
    e->cap = cap;
    return NC_OK;
}

/* One pre-token through the SentencePiece-style BPE (characters, byte fallback). */
static nc_status encode_sp_piece(encoder *e, const char *piece, size_t len, nc_error *err) {
    const tok_tokenizer *t = e->t;
    int32_t id = t->ignore_merges ? vocab_id(t, piece, len) : -1;
    NC_TRY(reserve_ids(e, id >= 0 ? 1 : len, err));
    if (id >= 0) {
        e->ids[e->n++] = id;
        return NC_OK;
    }
    size_t n = tok_sp_symbols(t->sp, &t->vocab, t->unk_id, t->fuse_unk, piece, len, e->ids + e->n);
    size_t merged;
    NC_TRY(tok_bpe_merge(&t->merges, e->ids + e->n, n, &merged, &e->scratch, err));
    e->n += merged;
    return NC_OK;
}

/* One pre-token through the BPE model. */
static nc_status encode_piece(void *ctx, const char *piece, size_t len, nc_error *err) {
    encoder *e = ctx;
    const tok_tokenizer *t = e->t;
    if (t->sp) return encode_sp_piece(e, piece, len, err);
    if (t->ignore_merges) { /* a whole word in the vocabulary is taken as is */
        if (2 * len > e->spell_cap) {
            char *s = realloc(e->spell, 2 * len);
            if (!s) return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory");
            e->spell = s;
            e->spell_cap = 2 * len;
        }
        size_t n =
            tok_bytes_to_spelling((const unsigned char *)piece, len, (unsigned char *)e->spell);
        int32_t id = vocab_id(t, e->spell, n);
        if (id >= 0) {
            NC_TRY(reserve_ids(e, 1, err));
            e->ids[e->n++] = id;
            return NC_OK;
        }
    }
    NC_TRY(reserve_ids(e, len, err));
    int32_t *sym = e->ids + e->n;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        int32_t id = t->byte_id[(unsigned char)piece[i]];
        if (id < 0) { /* a byte missing from the vocabulary: unk, or dropped as HF does */
            if (t->unk_id < 0 || (t->fuse_unk && n > 0 && sym[n - 1] == t->unk_id)) continue;
            id = t->unk_id;
        }
        sym[n++] = id;
    }
    size_t merged;
    NC_TRY(tok_bpe_merge(&t->merges, sym, n, &merged, &e->scratch, err));
    e->n += merged;
    return NC_OK;
}

static nc_status emit_token(encoder *e, int32_t id, nc_error *err) {
    NC_TRY(reserve_ids(e, 1, err));
    e->ids[e->n++] = id;
    return NC_OK;
}

/* Plain text after normalisation: normalised added tokens, then pre-tokens. */
static nc_status encode_normalized_segment(void *ctx, int32_t id, const char *s, size_t len,
                                           nc_error *err) {
    encoder *e = ctx;
    if (id >= 0) return emit_token(e, id, err);
    return tok_pretok_run(e->t->pretok, s, len, encode_piece, e, err);
}

/* Plain text between raw added tokens. */
static nc_status encode_raw_segment(void *ctx, int32_t id, const char *s, size_t len,
                                    nc_error *err) {
    encoder *e = ctx;
    if (id >= 0) return emit_token(e, id, err);
    char *norm;
    size_t norm_len;
    NC_TRY(normalize(e->t, s, len, &norm, &norm_len, err));
    nc_status st =
        tok_added_split(&e->t->norm_set, norm, norm_len, encode_normalized_segment, e, err);
    if (norm != s) free(norm);
    return st;
}

nc_status tok_encode(const tok_tokenizer *t, const char *text, size_t len, int32_t **ids,
                     size_t *n_ids, nc_error *err) {
    *ids = NULL;
    *n_ids = 0;
    size_t valid = tok_utf8_valid_prefix((const unsigned char *)text, len);
    if (valid != len)
        return nc_fail(err, NC_ERR_INVALID, "tokenizer: text is not valid UTF-8 (at byte %zu)",
                       valid);
    encoder e = {.t = t};
    nc_status st = tok_added_split(&t->raw_set, text, len, encode_raw_segment, &e, err);
    tok_bpe_scratch_free(&e.scratch);
    free(e.spell);
    if (st != NC_OK) {
        free(e.ids);
        return st;
    }
    *ids = e.ids;
    *n_ids = e.n;
    return NC_OK;
}

nc_status tok_encode_special(const tok_tokenizer *t, const char *text, size_t len, int32_t **ids,
                             size_t *n_ids, nc_error *err) {
    if (t->post_err[0]) return nc_fail(err, NC_ERR_UNSUPPORTED, "%s", t->post_err);
    NC_TRY(tok_encode(t, text, len, ids, n_ids, err));
    nc_status st = tok_template_wrap(t->post, ids, n_ids, err);
    if (st != NC_OK) {
        free(*ids);
        *ids = NULL;
        *n_ids = 0;
    }
    return st;
}

/* --------------------------------------------------------------- decoding */

/* SentencePiece-style: the decoder chain needs token boundaries (byte runs). */
static nc_status decode_sp(const tok_tokenizer *t, const int32_t *ids, size_t n, int skip_special,
                           char **out, size_t *len, nc_error *err) {
    const char **text = malloc((n ? n : 1) * sizeof *text);
    size_t *lens = malloc((n ? n : 1) * sizeof *lens), m = 0, out_len;
    int32_t *kept = malloc((n ? n : 1) * sizeof *kept);
    nc_status st = NC_OK;
    if (!text || !lens || !kept)
        st = nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory decoding %zu ids", n);
    for (size_t i = 0; i < n && st == NC_OK; i++) {
        const char *b = tok_token_bytes(t, ids[i], &lens[m]);
        if (!b || (skip_special && t->is_special[ids[i]])) continue; /* HF skips unknown ids */
        text[m] = b;
        kept[m++] = ids[i];
    }
    if (st == NC_OK) st = tok_sp_decode(t->sp, kept, text, lens, m, out, &out_len, err);
    if (st == NC_OK && len) *len = out_len;
    free(text);
    free(lens);
    free(kept);
    return st;
}

nc_status tok_decode(const tok_tokenizer *t, const int32_t *ids, size_t n, int skip_special,
                     char **out, size_t *len, nc_error *err) {
    *out = NULL;
    if (len) *len = 0;
    if (t->sp) return decode_sp(t, ids, n, skip_special, out, len, err);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l;
        if (tok_token_bytes(t, ids[i], &l) && !(skip_special && t->is_special[ids[i]])) total += l;
    }
    unsigned char *raw = malloc(total ? total : 1), *text = malloc(3 * total + 1);
    if (!raw || !text) {
        free(raw);
        free(text);
        return nc_fail(err, NC_ERR_NOMEM, "tokenizer: out of memory decoding %zu ids", n);
    }
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l;
        const char *b = tok_token_bytes(t, ids[i], &l);
        if (!b || (skip_special && t->is_special[ids[i]])) continue; /* HF skips unknown ids */
        memcpy(raw + off, b, l);
        off += l;
    }
    size_t m = tok_utf8_lossy(raw, total, text);
    free(raw);
    text[m] = '\0';
    *out = (char *)text;
    if (len) *len = m;
    return NC_OK;
}
