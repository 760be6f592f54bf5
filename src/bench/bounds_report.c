/* Builds the `nectar bounds` JSON document and prints it as a table. */
#include "bench/bounds_report.h"

#include <math.h>
#include <string.h>

/* A floor that was not asked for (no rate given) is a JSON null. */
static json_t *opt_real(double v, int is_given) {
    return is_given ? json_real(v) : json_null();
}

/* Parameter counts are exact integers (below 2^53): print them as such. */
static json_t *count(double v) {
    return json_integer((json_int_t)v);
}

static json_t *format_row(const nc_bounds_query *q, const nc_weight_format *wf, double a,
                          double flops) {
    int has_bw = q->bandwidth_bytes_per_s > 0, has_fl = q->compute_flops_per_s > 0;
    double bytes = a * wf->bytes_per_param;
    json_t *row = json_object();
    json_object_set_new(row, "format", json_string(wf->name));
    json_object_set_new(row, "bytes_per_param", json_real(wf->bytes_per_param));
    json_object_set_new(row, "weight_bytes", json_real(bytes));
    json_object_set_new(row, "bandwidth_floor_s",
                        opt_real(has_bw ? bytes / q->bandwidth_bytes_per_s : 0, has_bw));
    json_object_set_new(row, "compute_floor_s",
                        opt_real(has_fl ? flops / q->compute_flops_per_s : 0, has_fl));
    json_object_set_new(
        row, "floor_s",
        opt_real(nc_floor_s(flops, q->compute_flops_per_s, bytes, q->bandwidth_bytes_per_s),
                 has_bw || has_fl));
    if (q->is_decoder) {
        double tok_bytes =
            bytes + nc_qwen3_kv_bytes(&q->decoder, q->context) + nc_qwen3_state_bytes(&q->decoder);
        double tok_flops = nc_qwen3_decode_flops(&q->decoder, q->context);
        double t =
            nc_floor_s(tok_flops, q->compute_flops_per_s, tok_bytes, q->bandwidth_bytes_per_s);
        json_object_set_new(row, "decode_bytes_per_token", json_real(tok_bytes));
        json_object_set_new(row, "decode_floor_s", opt_real(t, has_bw || has_fl));
        json_object_set_new(row, "tokens_per_s_ceiling",
                            opt_real(t > 0 ? 1.0 / t : 0, (has_bw || has_fl) && t > 0));
    }
    return row;
}

nc_status nc_bounds_report(const nc_bounds_query *q, json_t **out, nc_error *err) {
    if (q->batch <= 0 || q->seq_len <= 0)
        return nc_fail(err, NC_ERR_INVALID, "bounds: -B and -L must be positive");
    if (q->context < 0) return nc_fail(err, NC_ERR_INVALID, "bounds: --context must be >= 0");
    if (q->has_amdahl && (!(q->fraction >= 0 && q->fraction <= 1) || !(q->speedup > 0)))
        return nc_fail(err, NC_ERR_INVALID,
                       "bounds: --fraction must be in [0, 1] and --speedup positive");
    if (q->format && !nc_weight_format_find(q->format))
        return nc_fail(err, NC_ERR_INVALID, "--format %s: unknown (fp32, fp16, bf16, q8, q4)",
                       q->format);
    if (q->is_decoder)
        NC_TRY(nc_qwen3_validate(&q->decoder, q->source ? q->source : "qwen3", err));
    else
        NC_TRY(nc_encoder_validate(&q->encoder, err));
    json_t *r = json_object();
    json_t *shape = json_object(), *params = json_object();
    double a, flops;
    if (q->is_decoder) {
        const nc_qwen3_shape *s = &q->decoder;
        nc_qwen3_params p = nc_qwen3_count(s);
        json_object_set_new(r, "arch", json_string("qwen3"));
        json_object_set_new(shape, "hidden_size", json_integer(s->hidden_size));
        json_object_set_new(shape, "intermediate_size", json_integer(s->intermediate_size));
        json_object_set_new(shape, "num_hidden_layers", json_integer(s->num_hidden_layers));
        json_object_set_new(shape, "num_attention_heads", json_integer(s->num_attention_heads));
        json_object_set_new(shape, "num_key_value_heads", json_integer(s->num_key_value_heads));
        json_object_set_new(shape, "head_dim", json_integer(s->head_dim));
        json_object_set_new(shape, "vocab_size", json_integer(s->vocab_size));
        json_object_set_new(shape, "tie_word_embeddings", json_boolean(s->is_tied));
        if (s->n_linear) { /* Qwen3.5 */
            json_object_set_new(shape, "linear_attention_layers", json_integer(s->n_linear));
            json_object_set_new(shape, "linear_num_key_heads", json_integer(s->lin_k_heads));
            json_object_set_new(shape, "linear_num_value_heads", json_integer(s->lin_v_heads));
            json_object_set_new(shape, "linear_key_head_dim", json_integer(s->lin_k_dim));
            json_object_set_new(shape, "linear_value_head_dim", json_integer(s->lin_v_dim));
            json_object_set_new(shape, "linear_conv_kernel_dim", json_integer(s->lin_conv_kernel));
        }
        json_object_set_new(params, "total", count(p.total));
        json_object_set_new(params, "non_embedding", count(p.non_embedding));
        json_object_set_new(params, "embedding", count(p.embedding));
        json_object_set_new(params, "lm_head", count(p.lm_head));
        json_object_set_new(params, "layer_matmul", count(p.layer_matmul));
        json_object_set_new(params, "norms", count(p.norms));
        json_object_set_new(params, "A", count(p.matmul_per_token));
        a = p.matmul_per_token;
        flops = nc_qwen3_prefill_flops(s, q->batch, q->seq_len);
    } else {
        const nc_encoder_shape *s = &q->encoder;
        json_object_set_new(r, "arch", json_string("modernbert"));
        json_object_set_new(shape, "N", json_integer(s->n_layers));
        json_object_set_new(shape, "D", json_integer(s->d_model));
        json_object_set_new(shape, "I", json_integer(s->d_ff));
        json_object_set_new(shape, "H", json_integer(s->n_head_layers));
        json_object_set_new(shape, "I_h",
                            json_integer(s->d_head_ff > 0 ? s->d_head_ff : 4 * s->d_model));
        a = nc_encoder_params(s);
        json_object_set_new(params, "A", count(a));
        flops = nc_encoder_flops(s, q->batch, q->seq_len);
    }
    json_object_set_new(r, "source", json_string(q->source ? q->source : "command line"));
    json_object_set_new(r, "shape", shape);
    json_object_set_new(r, "params", params);
    json_object_set_new(r, "batch", json_integer(q->batch));
    json_object_set_new(r, "seq_len", json_integer(q->seq_len));
    json_object_set_new(r, "flops_dense", json_real(flops));
    if (q->is_decoder) {
        json_object_set_new(r, "context", json_integer(q->context));
        json_object_set_new(r, "decode_flops_per_token",
                            json_real(nc_qwen3_decode_flops(&q->decoder, q->context)));
        json_object_set_new(r, "kv_bytes_per_token",
                            json_real(nc_qwen3_kv_bytes(&q->decoder, q->context)));
        json_object_set_new(r, "state_bytes_per_token",
                            json_real(nc_qwen3_state_bytes(&q->decoder)));
    }
    json_object_set_new(r, "bandwidth_bytes_per_s",
                        opt_real(q->bandwidth_bytes_per_s, q->bandwidth_bytes_per_s > 0));
    json_object_set_new(r, "compute_flops_per_s",
                        opt_real(q->compute_flops_per_s, q->compute_flops_per_s > 0));
    json_t *formats = json_array();
    for (int i = 0; i < nc_n_weight_formats; i++)
        if (!q->format || !strcmp(q->format, nc_weight_formats[i].name))
            json_array_append_new(formats, format_row(q, &nc_weight_formats[i], a, flops));
    json_object_set_new(r, "formats", formats);
    if (q->has_amdahl) {
        json_t *am = json_object();
        json_object_set_new(am, "fraction", json_real(q->fraction));
        json_object_set_new(am, "speedup", opt_real(q->speedup, !isinf(q->speedup)));
        json_object_set_new(am, "S", json_real(nc_amdahl(q->fraction, q->speedup)));
        json_object_set_new(am, "S_limit",
                            q->fraction < 1 ? json_real(nc_amdahl(q->fraction, INFINITY))
                                            : json_null());
        json_object_set_new(r, "amdahl", am);
    }
    *out = r;
    return NC_OK;
}

/* --- the table --------------------------------------------------------- */

static double num(const json_t *o, const char *key) {
    return json_number_value(json_object_get(o, key));
}

/* Engineering units: 1.234 G, 456.7 M ... */
static const char *si(double v, char *buf, size_t n) {
    const char *units[] = {"", "k", "M", "G", "T", "P", "E"};
    int u = 0;
    while (fabs(v) >= 1000 && u < 6) {
        v /= 1000;
        u++;
    }
    snprintf(buf, n, "%.4g %s", v, units[u]);
    return buf;
}

/* Seconds as "1.842 ms" or "-" when the value is null (not asked for). */
static const char *dur(const json_t *v, char *buf, size_t n) {
    if (!json_is_number(v)) return "-";
    double s = json_number_value(v);
    if (s >= 1)
        snprintf(buf, n, "%.4g s", s);
    else if (s >= 1e-3)
        snprintf(buf, n, "%.4g ms", s * 1e3);
    else
        snprintf(buf, n, "%.4g us", s * 1e6);
    return buf;
}

void nc_bounds_print_table(FILE *f, const json_t *r) {
    char b1[64], b2[64], b3[64], b4[64];
    const json_t *shape = json_object_get(r, "shape"), *params = json_object_get(r, "params");
    int is_decoder = !strcmp(json_string_value(json_object_get(r, "arch")), "qwen3");
    fprintf(f, "source: %s\n", json_string_value(json_object_get(r, "source")));
    if (is_decoder) {
        fprintf(f,
                "qwen3: hidden %lld, intermediate %lld, layers %lld, heads %lld/%lld kv, "
                "head_dim %lld, vocab %lld, %s\n",
                (long long)num(shape, "hidden_size"), (long long)num(shape, "intermediate_size"),
                (long long)num(shape, "num_hidden_layers"),
                (long long)num(shape, "num_attention_heads"),
                (long long)num(shape, "num_key_value_heads"), (long long)num(shape, "head_dim"),
                (long long)num(shape, "vocab_size"),
                json_is_true(json_object_get(shape, "tie_word_embeddings")) ? "tied head"
                                                                            : "separate head");
        if (json_object_get(shape, "linear_attention_layers"))
            fprintf(f,
                    "  qwen3.5: %lld linear-attention layers, %lld/%lld heads of %lld/%lld, "
                    "conv %lld; the other layers gated attention\n",
                    (long long)num(shape, "linear_attention_layers"),
                    (long long)num(shape, "linear_num_key_heads"),
                    (long long)num(shape, "linear_num_value_heads"),
                    (long long)num(shape, "linear_key_head_dim"),
                    (long long)num(shape, "linear_value_head_dim"),
                    (long long)num(shape, "linear_conv_kernel_dim"));
        fprintf(f, "  params total          %15.0f  (%sparams)\n", num(params, "total"),
                si(num(params, "total"), b1, sizeof b1));
        fprintf(f, "  params non-embedding  %15.0f  (%sparams)\n", num(params, "non_embedding"),
                si(num(params, "non_embedding"), b1, sizeof b1));
        fprintf(f, "  embedding             %15.0f\n", num(params, "embedding"));
        fprintf(f, "  lm_head (stored)      %15.0f\n", num(params, "lm_head"));
        fprintf(f, "  layer matrices        %15.0f\n", num(params, "layer_matmul"));
        fprintf(f, "  norms                 %15.0f\n", num(params, "norms"));
        fprintf(f, "  A (matmul per token)  %15.0f  (layers + head)\n", num(params, "A"));
    } else {
        int is_4d = num(shape, "I_h") == 4 * num(shape, "D");
        fprintf(f, "encoder: N=%lld D=%lld I=%lld H=%lld", (long long)num(shape, "N"),
                (long long)num(shape, "D"), (long long)num(shape, "I"), (long long)num(shape, "H"));
        if (!is_4d) fprintf(f, " I_h=%lld", (long long)num(shape, "I_h"));
        fprintf(f, "\n  A = N(4D^2 + 3DI) + %s = %.0f  (%sparams)\n",
                is_4d ? "12HD^2" : "H(4D^2 + 2D I_h)", num(params, "A"),
                si(num(params, "A"), b1, sizeof b1));
    }
    fprintf(f, "  F_dense(B=%lld, L=%lld) = %sFLOP\n", (long long)num(r, "batch"),
            (long long)num(r, "seq_len"), si(num(r, "flops_dense"), b1, sizeof b1));
    const json_t *bw = json_object_get(r, "bandwidth_bytes_per_s");
    const json_t *fl = json_object_get(r, "compute_flops_per_s");
    fprintf(f, "  bandwidth %s, compute %s\n",
            json_is_number(bw)
                ? (snprintf(b1, sizeof b1, "%g GB/s", json_number_value(bw) / 1e9), b1)
                : "not given (--bandwidth GB/s)",
            json_is_number(fl)
                ? (snprintf(b2, sizeof b2, "%g TFLOP/s", json_number_value(fl) / 1e12), b2)
                : "not given (--flops TFLOP/s)");
    fprintf(f, "\n  %s:\n", is_decoder ? "prefill (weights read once)" : "one forward pass");
    fprintf(f, "  %-6s %-11s %-13s %-16s %-14s %s\n", "format", "bytes/param", "weight bytes",
            "bandwidth floor", "compute floor", "floor");
    size_t i;
    const json_t *row;
    json_array_foreach(json_object_get(r, "formats"), i, row) {
        fprintf(f, "  %-6s %-11.4g %-13s %-16s %-14s %s\n",
                json_string_value(json_object_get(row, "format")), num(row, "bytes_per_param"),
                si(num(row, "weight_bytes"), b1, sizeof b1),
                dur(json_object_get(row, "bandwidth_floor_s"), b2, sizeof b2),
                dur(json_object_get(row, "compute_floor_s"), b3, sizeof b3),
                dur(json_object_get(row, "floor_s"), b4, sizeof b4));
    }
    if (is_decoder) {
        fprintf(f, "\n  decode, one token at context %lld (KV cache fp16, %sB/token",
                (long long)num(r, "context"), si(num(r, "kv_bytes_per_token"), b1, sizeof b1));
        if (num(r, "state_bytes_per_token") > 0)
            fprintf(f, "; recurrent states read + written, fp32, %sB/token",
                    si(num(r, "state_bytes_per_token"), b1, sizeof b1));
        fprintf(f, "):\n");
        fprintf(f, "  %-6s %-13s %-11s %s\n", "format", "bytes/token", "floor", "tokens/s ceiling");
        json_array_foreach(json_object_get(r, "formats"), i, row) {
            const json_t *tps = json_object_get(row, "tokens_per_s_ceiling");
            if (json_is_number(tps))
                snprintf(b3, sizeof b3, "%.1f", json_number_value(tps));
            else
                snprintf(b3, sizeof b3, "-");
            fprintf(f, "  %-6s %-13s %-11s %s\n", json_string_value(json_object_get(row, "format")),
                    si(num(row, "decode_bytes_per_token"), b1, sizeof b1),
                    dur(json_object_get(row, "decode_floor_s"), b2, sizeof b2), b3);
        }
    }
    const json_t *am = json_object_get(r, "amdahl");
    if (am) {
        const json_t *sp = json_object_get(am, "speedup");
        fprintf(f, "\n  Amdahl: fraction %g sped up %s: S = 1/(1-f+f/s) = %.4g",
                num(am, "fraction"),
                json_is_number(sp) ? (snprintf(b1, sizeof b1, "%gx", json_number_value(sp)), b1)
                                   : "infinitely",
                num(am, "S"));
        const json_t *lim = json_object_get(am, "S_limit");
        if (json_is_number(lim)) fprintf(f, " (limit for s -> inf: %.4g)", json_number_value(lim));
        fputc('\n', f);
    }
}
