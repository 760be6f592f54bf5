/* The CPU tail of a ModernBERT pass, from final hidden states: pooling (CLS
 * token or mean over real tokens), the prediction head shared by both task
 * heads (dense -> classifier_activation -> LayerNorm), then the MLM decoder
 * (tied to the embeddings, + bias) or the classifier (+ bias), as
 * ModernBertForMaskedLM / ModernBertForSequenceClassification compute them. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "models/modernbert_impl.h"

/* rows [n, D] -> norm(act(dense(rows) + bias)), in place. */
static void prediction_head(modernbert_model *m, float *rows, float *tmp, int n) {
    size_t d = (size_t)m->cfg.hidden_size;
    modernbert_matmul(m, &m->head_dense, rows, d, tmp, d, n);
    for (int r = 0; r < n; r++) {
        float *y = tmp + (size_t)r * d;
        if (m->head_dense_bias)
            for (size_t i = 0; i < d; i++)
                y[i] += m->head_dense_bias[i];
        modernbert_act_apply(m, m->cfg.classifier_act, y, d);
    }
    modernbert_layernorm_rows(m, rows, tmp, m->head_norm, n);
}

static void add_bias(float *y, const float *bias, int n, size_t width) {
    if (!bias) return;
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < width; i++)
            y[(size_t)r * width + i] += bias[i];
}

static void pool_rows(const modernbert_model *m, const float *last, const modernbert_io *io,
                      int pooling, float *out) {
    size_t d = (size_t)m->cfg.hidden_size;
    for (int b = 0; b < io->batch; b++) {
        const float *x = last + (size_t)b * io->seq * d;
        float *o = out + (size_t)b * d;
        if (pooling == MODERNBERT_POOL_CLS) {
            memcpy(o, x, d * sizeof(float));
            continue;
        }
        /* HF: (h * mask).sum(1) / mask.sum(1), summed in order over positions */
        memset(o, 0, d * sizeof(float));
        int count = 0;
        for (int t = 0; t < io->seq; t++) {
            if (io->mask && !io->mask[(size_t)b * io->seq + t]) continue;
            count++;
            for (size_t i = 0; i < d; i++)
                o[i] += x[(size_t)t * d + i];
        }
        for (size_t i = 0; i < d; i++)
            o[i] /= (float)(count ? count : 1);
    }
}

nc_status modernbert_tail(modernbert_model *m, const float *last, const modernbert_io *io,
                          nc_error *err) {
    const modernbert_config *c = &m->cfg;
    size_t d = (size_t)c->hidden_size;
    if (!io->pooled && !io->cls_logits && !io->mlm_logits) return NC_OK;
    if ((io->mlm_logits && c->head != MODERNBERT_HEAD_MLM) ||
        (io->cls_logits && c->head != MODERNBERT_HEAD_CLASSIFIER))
        return nc_fail(err, NC_ERR_INVALID, "%s: the model has no %s head", m->dir,
                       io->mlm_logits ? "masked-LM" : "classifier");
    int n_mlm = io->mlm_logits ? (io->mlm_rows ? io->n_mlm_rows : io->batch * io->seq) : 0;
    size_t rows = (size_t)(n_mlm > io->batch ? n_mlm : io->batch);
    float *a = nc_alloc_aligned(rows * d * sizeof(float)),
          *t = nc_alloc_aligned(rows * d * sizeof(float));
    if (!a || !t) {
        nc_free_aligned(a);
        nc_free_aligned(t);
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for the head", m->dir);
    }
    if (io->pooled || io->cls_logits) {
        int pooling = io->pooling < 0 ? (int)c->pooling : io->pooling;
        pool_rows(m, last, io, pooling, a);
        if (io->pooled) memcpy(io->pooled, a, (size_t)io->batch * d * sizeof(float));
        if (io->cls_logits) {
            /* the classifier always pools as the config says */
            if (pooling != (int)c->pooling) pool_rows(m, last, io, (int)c->pooling, a);
            prediction_head(m, a, t, io->batch);
            modernbert_matmul(m, &m->classifier, a, d, io->cls_logits, (size_t)c->num_labels,
                              io->batch);
            add_bias(io->cls_logits, m->classifier_bias, io->batch, (size_t)c->num_labels);
        }
    }
    if (n_mlm > 0) {
        for (int i = 0; i < n_mlm; i++) {
            size_t r = io->mlm_rows ? (size_t)io->mlm_rows[i] : (size_t)i;
            memcpy(a + (size_t)i * d, last + r * d, d * sizeof(float));
        }
        prediction_head(m, a, t, n_mlm);
        modernbert_matmul(m, &m->decoder, a, d, io->mlm_logits, (size_t)c->vocab_size, n_mlm);
        add_bias(io->mlm_logits, m->decoder_bias, n_mlm, (size_t)c->vocab_size);
    }
    nc_free_aligned(a);
    nc_free_aligned(t);
    return NC_OK;
}
