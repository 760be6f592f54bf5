/* Adapter: qwen3_* calls in the shape of gen_engine. */
#include "gen/engine_qwen3.h"

static int q_pos(const void *s) {
    return qwen3_state_pos(s);
}
static int q_ctx(const void *s) {
    return qwen3_state_ctx(s);
}
static void q_truncate(void *s, int n_keep) {
    qwen3_state_truncate(s, n_keep);
}
static nc_status q_forward(void *m, void *s, const int32_t *tokens, int n, float *logits_last,
                           nc_error *err) {
    return qwen3_forward(m, s, tokens, n, logits_last, NULL, err);
}

gen_engine gen_engine_qwen3(qwen3_model *m, qwen3_state *s) {
    const qwen3_config *cfg = qwen3_model_config(m);
    gen_engine e = {0};
    e.model = m;
    e.state = s;
    e.n_vocab = cfg->vocab_size;
    for (int i = 0; i < cfg->n_eos && i < 8; i++)
        e.eos_ids[e.n_eos++] = cfg->eos_token_ids[i];
    e.pos = q_pos;
    e.ctx = q_ctx;
    e.truncate = q_truncate;
    e.forward = q_forward;
    return e;
}
