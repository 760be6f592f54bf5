/* Parameter counts, dense FLOPs and floors for encoders and Qwen3 decoders.
 * Counts are doubles: exact for every integer below 2^53, which covers any
 * model that fits in memory. */
#include "bench/bounds.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "models/family.h"
#include "models/presets.h"
#include "models/qwen35.h"
#include "models/qwen3_config.h"

const nc_weight_format nc_weight_formats[] = {
    {"fp32", 4.0},       {"fp16", 2.0},
    {"bf16", 2.0},       {"q8", 34.0 / 32.0}, /* 32 int8 values + one fp16 scale */
    {"q4", 18.0 / 32.0},                      /* 32 4-bit values + one fp16 scale */
};
const int nc_n_weight_formats = (int)(sizeof nc_weight_formats / sizeof nc_weight_formats[0]);

const nc_weight_format *nc_weight_format_find(const char *name) {
    for (int i = 0; i < nc_n_weight_formats; i++)
        if (!strcmp(nc_weight_formats[i].name, name)) return &nc_weight_formats[i];
    return NULL;
}

double nc_encoder_params(const nc_encoder_shape *s) {
    double n = (double)s->n_layers, d = (double)s->d_model, i = (double)s->d_ff;
    double h = (double)s->n_head_layers;
    double ih = s->d_head_ff > 0 ? (double)s->d_head_ff : 4.0 * d;
    /* per layer: Wqkv 3D^2 + Wo D^2 = 4D^2; Wi D x 2I + Wo I x D = 3DI;
     * per head layer: 4D^2 + an ungated D -> I_h -> D MLP (I_h = 4D: 12D^2) */
    return n * (4.0 * d * d + 3.0 * d * i) + h * (4.0 * d * d + 2.0 * d * ih);
}

double nc_encoder_flops(const nc_encoder_shape *s, int64_t batch, int64_t seq_len) {
    double b = (double)batch, l = (double)seq_len, d = (double)s->d_model;
    double layers = (double)(s->n_layers + s->n_head_layers);
    /* 2 FLOPs per weight per token, plus QK^T and AV: 2 x 2 x L^2 x D per layer */
    return 2.0 * b * l * nc_encoder_params(s) + 4.0 * b * layers * l * l * d;
}

static double q_dim(const nc_qwen3_shape *s) {
    return (double)s->num_attention_heads * (double)s->head_dim;
}

static double kv_dim(const nc_qwen3_shape *s) {
    return (double)s->num_key_value_heads * (double)s->head_dim;
}

/* Qwen3.5's linear-attention layers: value width, conv channels. */
static double lin_vd(const nc_qwen3_shape *s) {
    return (double)s->lin_v_heads * (double)s->lin_v_dim;
}
static double lin_conv(const nc_qwen3_shape *s) {
    return 2.0 * (double)s->lin_k_heads * (double)s->lin_k_dim + lin_vd(s);
}

nc_qwen3_params nc_qwen3_count(const nc_qwen3_shape *s) {
    nc_qwen3_params p;
    double h = (double)s->hidden_size, inter = (double)s->intermediate_size;
    double n = (double)s->num_hidden_layers, vocab = (double)s->vocab_size;
    double nl = (double)s->n_linear, nf = n - nl;
    /* q_proj h->q_dim (Qwen3.5: twice, the output gate), k_proj and v_proj
     * h->kv_dim (GQA), o_proj q_dim->h */
    double attn = h * q_dim(s) * (s->n_linear ? 2.0 : 1.0) + 2.0 * h * kv_dim(s) + q_dim(s) * h;
    /* in_proj_qkv h->conv channels, in_proj_z h->v width, in_proj_b/a h->v
     * heads, out_proj v width->h */
    double lin = h * lin_conv(s) + h * lin_vd(s) + 2.0 * h * (double)s->lin_v_heads + lin_vd(s) * h;
    double mlp = 3.0 * h * inter; /* gate, up: h->inter; down: inter->h */
    p.layer_matmul = nf * attn + nl * lin + n * mlp;
    /* input and post-attention RMSNorm (h each), q_norm and k_norm (head_dim
     * each, shared by all heads of a layer), then the final norm; a linear
     * layer's gated norm (v head dim), A_log and dt_bias (v heads) and
     * depthwise conv1d (conv channels x kernel) instead of q/k norms */
    p.norms = n * (s->sandwich_norms ? 4.0 : 2.0) * h +
              (s->no_qk_norm ? 0.0 : nf * 2.0 * (double)s->head_dim) +
              nl * ((double)s->lin_v_dim + 2.0 * (double)s->lin_v_heads +
                    lin_conv(s) * (double)s->lin_conv_kernel) +
              h;
    p.embedding = vocab * h;
    p.lm_head = s->is_tied ? 0.0 : vocab * h;
    p.total = p.layer_matmul + p.norms + p.embedding + p.lm_head;
    p.non_embedding = p.total - p.embedding - p.lm_head;
    /* the head multiplies every token (tied or not); the embedding is a
     * gather of one row and costs no multiplications */
    p.matmul_per_token = p.layer_matmul + vocab * h;
    return p;
}

/* The recurrent form's work per token of one linear layer: the decay
 * (1 multiply), S^T k (2), the rank-1 update (2) and S^T q (2) per state
 * entry, and the conv (2 per channel and tap). */
static double linear_flops_per_token(const nc_qwen3_shape *s) {
    return (double)s->n_linear *
           (7.0 * (double)s->lin_v_heads * (double)s->lin_k_dim * (double)s->lin_v_dim +
            2.0 * lin_conv(s) * (double)s->lin_conv_kernel);
}

static double full_layers(const nc_qwen3_shape *s) {
    return (double)(s->num_hidden_layers - s->n_linear);
}

double nc_qwen3_prefill_flops(const nc_qwen3_shape *s, int64_t batch, int64_t seq_len) {
    double b = (double)batch, l = (double)seq_len;
    return 2.0 * b * l * nc_qwen3_count(s).matmul_per_token +
           4.0 * b * full_layers(s) * l * l * q_dim(s) + b * l * linear_flops_per_token(s);
}

double nc_qwen3_decode_flops(const nc_qwen3_shape *s, int64_t context) {
    return 2.0 * nc_qwen3_count(s).matmul_per_token +
           4.0 * full_layers(s) * (double)context * q_dim(s) + linear_flops_per_token(s);
}

double nc_qwen3_kv_bytes(const nc_qwen3_shape *s, int64_t context) {
    return 2.0 * full_layers(s) * kv_dim(s) * (double)context * 2.0;
}

double nc_qwen3_state_bytes(const nc_qwen3_shape *s) {
    double state = (double)s->lin_v_heads * (double)s->lin_k_dim * (double)s->lin_v_dim;
    double window = (double)(s->lin_conv_kernel - 1) * lin_conv(s);
    return s->n_linear ? 2.0 * (double)s->n_linear * (state + window) * 4.0 : 0.0;
}

nc_status nc_qwen3_validate(const nc_qwen3_shape *s, const char *what, nc_error *err) {
    const struct {
        const char *name;
        int64_t v;
    } f[] = {{"hidden_size", s->hidden_size},
             {"intermediate_size", s->intermediate_size},
             {"num_hidden_layers", s->num_hidden_layers},
             {"num_attention_heads", s->num_attention_heads},
             {"num_key_value_heads", s->num_key_value_heads},
             {"head_dim", s->head_dim},
             {"vocab_size", s->vocab_size}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].v <= 0 || f[i].v > (int64_t)1 << 24)
            return nc_fail(err, NC_ERR_RANGE, "%s: field '%s' = %lld is out of range (1..2^24)",
                           what, f[i].name, (long long)f[i].v);
    const struct {
        const char *name;
        int64_t v;
    } lf[] = {{"linear_num_key_heads", s->lin_k_heads},
              {"linear_num_value_heads", s->lin_v_heads},
              {"linear_key_head_dim", s->lin_k_dim},
              {"linear_value_head_dim", s->lin_v_dim},
              {"linear_conv_kernel_dim", s->lin_conv_kernel}};
    for (size_t i = 0; s->n_linear && i < sizeof lf / sizeof lf[0]; i++)
        if (lf[i].v <= 0 || lf[i].v > (int64_t)1 << 24)
            return nc_fail(err, NC_ERR_RANGE, "%s: field '%s' = %lld is out of range (1..2^24)",
                           what, lf[i].name, (long long)lf[i].v);
    if (s->n_linear < 0 || s->n_linear > s->num_hidden_layers)
        return nc_fail(err, NC_ERR_RANGE, "%s: %lld linear-attention layers of %lld", what,
                       (long long)s->n_linear, (long long)s->num_hidden_layers);
    if (s->num_attention_heads % s->num_key_value_heads != 0)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld",
                       what, (long long)s->num_attention_heads, (long long)s->num_key_value_heads);
    return NC_OK;
}

nc_status nc_encoder_validate(const nc_encoder_shape *s, nc_error *err) {
    if (s->n_layers <= 0 || s->d_model <= 0 || s->d_ff <= 0)
        return nc_fail(err, NC_ERR_INVALID, "encoder shape: -N, -D and -I must all be positive");
    if (s->n_head_layers < 0) return nc_fail(err, NC_ERR_INVALID, "encoder shape: -H must be >= 0");
    if (s->n_layers > (1 << 24) || s->d_model > (1 << 24) || s->d_ff > (1 << 24) ||
        s->n_head_layers > (1 << 24))
        return nc_fail(err, NC_ERR_RANGE, "encoder shape: a dimension exceeds 2^24");
    return NC_OK;
}

nc_qwen3_shape nc_decoder_shape_of(const decoder_dims *d) {
    nc_qwen3_shape s = {d->hidden,    d->intermediate,    d->layers,      d->heads,
                        d->kv_heads,  d->head_dim,        d->vocab,       d->tied,
                        d->n_linear,  d->lin_k_heads,     d->lin_v_heads, d->lin_k_dim,
                        d->lin_v_dim, d->lin_conv_kernel, d->no_qk_norm,  d->sandwich_norms};
    return s;
}

nc_qwen3_shape nc_qwen3_shape_of(const qwen3_config *c) {
    decoder_dims d = qwen3_dims(c);
    return nc_decoder_shape_of(&d);
}

nc_qwen3_shape nc_qwen35_shape_of(const qwen35_config *c) {
    decoder_dims d = qwen35_dims(c);
    return nc_decoder_shape_of(&d);
}

nc_status nc_qwen3_shape_load(const char *config_path, nc_qwen3_shape *out, nc_error *err) {
    /* a folder's config.json: its family's reader (family.h, read_dims) */
    const char *slash = strrchr(config_path, '/');
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - config_path) : 1,
             slash ? config_path : ".");
    const model_family_row *f = NULL;
    nc_error ferr = {0};
    if (slash && !strcmp(slash + 1, "config.json") &&
        model_family_of_dir(dir, &f, &ferr) == NC_OK && f->read_dims) {
        decoder_dims d;
        NC_TRY(f->read_dims(dir, &d, err));
        *out = nc_decoder_shape_of(&d);
        return nc_qwen3_validate(out, config_path, err);
    }
    qwen3_config c;
    NC_TRY(qwen3_config_load_file(config_path, &c, err));
    *out = nc_qwen3_shape_of(&c);
    return nc_qwen3_validate(out, config_path, err);
}

/* The preset `name` of the wanted family (models/presets.h). */
static nc_status preset_of(const char *name, model_family family, const char *arch,
                           const model_preset **p, nc_error *err) {
    NC_TRY(model_preset_get(name, p, err));
    if ((*p)->family != family)
        return nc_fail(err, NC_ERR_INVALID, "--like %s is not a %s shape", name, arch);
    return NC_OK;
}

nc_status nc_qwen3_shape_like(const char *name, nc_qwen3_shape *out, nc_error *err) {
    const model_preset *p;
    NC_TRY(model_preset_get(name, &p, err));
    /* Llama has Qwen3's layout less the q/k norms, Gemma 3 two norms more */
    if (p->family != MODEL_FAMILY_QWEN35 && p->family != MODEL_FAMILY_LLAMA &&
        p->family != MODEL_FAMILY_GEMMA3)
        NC_TRY(preset_of(name, MODEL_FAMILY_QWEN3, "qwen3", &p, err));
    nc_qwen3_shape s = {p->hidden,
                        p->intermediate,
                        p->layers,
                        p->heads,
                        p->kv_heads,
                        p->head_dim,
                        p->vocab,
                        p->tied,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        p->family == MODEL_FAMILY_LLAMA,
                        p->family == MODEL_FAMILY_GEMMA3};
    if (p->family == MODEL_FAMILY_QWEN35) { /* every 4th layer full attention, conv kernel 4 */
        s.n_linear = p->layers - p->layers / 4;
        s.lin_k_heads = p->lin_k_heads;
        s.lin_v_heads = p->lin_v_heads;
        s.lin_k_dim = s.lin_v_dim = p->lin_head_dim;
        s.lin_conv_kernel = 4;
    }
    *out = s;
    return NC_OK;
}

nc_status nc_encoder_shape_like(const char *name, nc_encoder_shape *out, nc_error *err) {
    const model_preset *p;
    NC_TRY(preset_of(name, MODEL_FAMILY_MODERNBERT, "modernbert", &p, err));
    nc_encoder_shape s = {p->layers, p->hidden, p->intermediate, 0, 0};
    *out = s;
    return NC_OK;
}

nc_status nc_encoder_shape_load(const char *config_path, nc_encoder_shape *out, nc_error *err) {
    json_t *cfg;
    NC_TRY(nc_json_load_file(config_path, &cfg, err));
    nc_encoder_shape s = *out;
    nc_status st = nc_json_int(cfg, "hidden_size", &s.d_model, 1, config_path, err);
    if (st == NC_OK) st = nc_json_int(cfg, "intermediate_size", &s.d_ff, 1, config_path, err);
    if (st == NC_OK) st = nc_json_int(cfg, "num_hidden_layers", &s.n_layers, 1, config_path, err);
    json_decref(cfg);
    NC_TRY(st);
    /* a decision-model folder: its head layers from decision.json */
    char dpath[4200];
    const char *slash = strrchr(config_path, '/');
    snprintf(dpath, sizeof dpath, "%.*sdecision.json", slash ? (int)(slash - config_path + 1) : 0,
             config_path);
    json_t *dec = NULL;
    if (access(dpath, F_OK) == 0) {
        NC_TRY(nc_json_load_file(dpath, &dec, err));
        st = nc_json_int(dec, "head_layers", &s.n_head_layers, 1, dpath, err);
        if (st == NC_OK)
            st = nc_json_int(dec, "head_intermediate_size", &s.d_head_ff, 1, dpath, err);
        json_decref(dec);
        NC_TRY(st);
    }
    if (nc_encoder_validate(&s, err) != NC_OK) return nc_fail_prefix(err, "%s", config_path);
    *out = s;
    return NC_OK;
}

double nc_floor_s(double flops, double compute_flops_per_s, double bytes,
                  double bandwidth_bytes_per_s) {
    double t_compute = compute_flops_per_s > 0 ? flops / compute_flops_per_s : 0.0;
    double t_bytes = bandwidth_bytes_per_s > 0 ? bytes / bandwidth_bytes_per_s : 0.0;
    return fmax(t_compute, t_bytes);
}

double nc_amdahl(double fraction, double speedup) {
    if (isinf(speedup)) return 1.0 / (1.0 - fraction);
    return 1.0 / (1.0 - fraction + fraction / speedup);
}
