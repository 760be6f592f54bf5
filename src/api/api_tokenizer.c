/* Tokenizer and chat template calls of the public API, over src/text; the
 * template is the model's family's. */
#include <stdlib.h>
#include <string.h>

#include "api/api_model.h"
#include "base/error.h"
#include "text/chat.h"

NC_API nc_status nc_tokenizer_open(const char *path, nc_tokenizer **out, nc_error *err) {
    if (!path || !out) return nc_fail(err, NC_ERR_INVALID, "nc_tokenizer_open: NULL argument");
    *out = NULL;
    nc_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return nc_fail(err, NC_ERR_NOMEM, "nc_tokenizer_open: out of memory");
    nc_status st = tok_load(path, &t->tok, err);
    if (st != NC_OK) {
        free(t);
        return st;
    }
    *out = t;
    return NC_OK;
}

NC_API void nc_tokenizer_free(nc_tokenizer *t) {
    if (!t) return;
    tok_free(t->tok);
    free(t);
}

NC_API int32_t nc_tokenizer_vocab_size(const nc_tokenizer *t) {
    return t ? tok_vocab_size(t->tok) : 0;
}

NC_API nc_status nc_tokenize(const nc_tokenizer *t, const char *text, size_t len, int add_special,
                             int32_t **ids, size_t *n_ids, nc_error *err) {
    if (!t || (!text && len) || !ids || !n_ids)
        return nc_fail(err, NC_ERR_INVALID, "nc_tokenize: NULL argument");
    return add_special ? tok_encode_special(t->tok, text ? text : "", len, ids, n_ids, err)
                       : tok_encode(t->tok, text ? text : "", len, ids, n_ids, err);
}

NC_API nc_status nc_detokenize(const nc_tokenizer *t, const int32_t *ids, size_t n_ids,
                               int skip_special, char **text, size_t *len, nc_error *err) {
    if (!t || (!ids && n_ids) || !text)
        return nc_fail(err, NC_ERR_INVALID, "nc_detokenize: NULL argument");
    return tok_decode(t->tok, ids, n_ids, skip_special, text, len, err);
}

NC_API int32_t nc_token_id(const nc_tokenizer *t, const char *token) {
    return t && token ? tok_find(t->tok, token) : -1;
}

NC_API const char *nc_token_bytes(const nc_tokenizer *t, int32_t id, size_t *len) {
    size_t n = 0;
    const char *b = t ? tok_token_bytes(t->tok, id, &n) : NULL;
    if (len) *len = b ? n : 0;
    return b;
}

NC_API nc_status nc_chat_apply_template(const nc_model *model, const nc_chat_message *msgs,
                                        size_t n_msgs, unsigned flags, char **out, nc_error *err) {
    if (!msgs || !out) return nc_fail(err, NC_ERR_INVALID, "nc_chat_apply_template: NULL argument");
    if (model && model->kind != NC_MODEL_DECODER)
        return nc_fail(err, NC_ERR_UNSUPPORTED,
                       "nc_chat_apply_template: an encoder has no chat template");
    /* the template of the model's family (models/family.h) */
    chat_family family = model ? model->gm->e->family->chat : CHAT_QWEN3;
    if (flags & ~(NC_CHAT_ADD_GENERATION_PROMPT | NC_CHAT_NO_THINKING))
        return nc_fail(err, NC_ERR_INVALID, "nc_chat_apply_template: unknown flags 0x%x", flags);
    chat_message *cm = calloc(n_msgs ? n_msgs : 1, sizeof *cm);
    if (!cm) return nc_fail(err, NC_ERR_NOMEM, "nc_chat_apply_template: out of memory");
    for (size_t i = 0; i < n_msgs; i++)
        cm[i] = (chat_message){msgs[i].role, msgs[i].content, msgs[i].reasoning_content};
    chat_options o = CHAT_OPTIONS_DEFAULT;
    o.add_generation_prompt = (flags & NC_CHAT_ADD_GENERATION_PROMPT) != 0;
    o.enable_thinking = !(flags & NC_CHAT_NO_THINKING);
    nc_status st = chat_render_family(family, cm, n_msgs, &o, NULL, out, err);
    free(cm);
    return st;
}
