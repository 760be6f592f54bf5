/* nectar bounds against figures published elsewhere: the 0.622 ms / 1.842 ms
 * fp16 floors at 400 GB/s from the ANE feasibility study (docs/references.md §E.3), the
 * Qwen3-0.6B 0.6B / 0.44B-non-embedding model-card counts, llama.cpp's
 * "596.05 M", the 751,632,384 params stored in the 0.6B safetensors (head
 * stored untied), and parameter counts that HF transformers reports for the
 * same configs (tests/fixtures/bench/param_counts.json, made by
 * tools/make_bench_fixtures.py). */
#include <math.h>

#include "../test.h"
#include "base/json.h"
#include "bench/bounds.h"
#include "bench/bounds_report.h"
#include "io/safetensors.h"
#include "models/presets.h"
#include "models/qwen3_config.h"

static const nc_encoder_shape mm_base = {22, 768, 1152, 2, 0};
static const nc_encoder_shape en_large = {28, 1024, 2624, 2, 0};

static void test_encoder_fp16_floor_at_400_gbps_matches_study(void) {
    const nc_weight_format *fp16 = nc_weight_format_find("fp16");
    CHECK(fp16 != NULL);
    double t_base = nc_floor_s(0, 0, nc_encoder_params(&mm_base) * fp16->bytes_per_param, 400e9);
    double t_large = nc_floor_s(0, 0, nc_encoder_params(&en_large) * fp16->bytes_per_param, 400e9);
    /* the study prints three decimals of milliseconds */
    CHECKF(round(t_base * 1e6) == 622, "multilingual base floor %.6f ms", t_base * 1e3);
    CHECKF(round(t_large * 1e6) == 1842, "English large floor %.6f ms", t_large * 1e3);
}

static void test_encoder_params_and_flops_by_hand(void) {
    /* A = 22(4*768^2 + 3*768*1152) + 12*2*768^2 */
    CHECK(nc_encoder_params(&mm_base) == 124452864.0);
    CHECK(nc_encoder_params(&en_large) == 368312320.0);
    /* F_dense(1,96) = 2*96*A + 4*(22+2)*96^2*768 */
    CHECK(nc_encoder_flops(&mm_base, 1, 96) == 2.0 * 96 * 124452864.0 + 4.0 * 24 * 96 * 96 * 768);
    /* docs/references.md §E.3: ModernBERT-base 110.3M and
     * ModernBERT-large 343.1M linear parameters (no head layers) */
    nc_encoder_shape base, large;
    nc_error err;
    CHECK_OK(nc_encoder_shape_like("modernbert-base", &base, &err), &err);
    CHECK_OK(nc_encoder_shape_like("modernbert-large", &large, &err), &err);
    CHECK(round(nc_encoder_params(&base) / 1e5) == 1103);
    CHECK(round(nc_encoder_params(&large) / 1e5) == 3431);
    /* B scales F linearly */
    CHECK(nc_encoder_flops(&mm_base, 3, 64) == 3 * nc_encoder_flops(&mm_base, 1, 64));
}

/* Qwen3.5 presets: totals as HF transformers counts them
 * (tools/qwen35_param_counts.py: Qwen3_5ForCausalLM on the meta device). */
static void test_qwen35_presets_match_hf_counts(void) {
    const struct {
        const char *name;
        double total;
    } hf[] = {{"qwen3.5-0.8b", 752393024.0},
              {"qwen3.5-2b", 1881825088.0},
              {"qwen3.5-4b", 4205751296.0},
              {"qwen3.5-9b", 8953803264.0}};
    for (size_t i = 0; i < sizeof hf / sizeof hf[0]; i++) {
        nc_qwen3_shape s;
        nc_error err;
        CHECK_OK(nc_qwen3_shape_like(hf[i].name, &s, &err), &err);
        CHECK_OK(nc_qwen3_validate(&s, hf[i].name, &err), &err);
        double t = nc_qwen3_count(&s).total;
        CHECKF(t == hf[i].total, "%s: %.0f, HF %.0f", hf[i].name, t, hf[i].total);
        CHECK(s.n_linear == s.num_hidden_layers * 3 / 4);
        /* decoding reads and writes every linear layer's state: 18 layers x
         * 16 x 128 x 128 fp32 x 2 for the 0.8B, plus the conv windows */
        if (i == 0) CHECK(nc_qwen3_state_bytes(&s) == 2.0 * 18 * (16 * 128 * 128 + 3 * 6144) * 4);
        /* only the full-attention layers keep K and V */
        CHECK(nc_qwen3_kv_bytes(&s, 100) == 2.0 * (s.num_hidden_layers / 4) *
                                                (double)(s.num_key_value_heads * s.head_dim) * 100 *
                                                2);
    }
}

/* A Qwen3.5 folder's config.json: its count is what its safetensors store. */
static void test_qwen35_config_count_matches_safetensors(void) {
    nc_qwen3_shape s;
    nc_error err;
    CHECK_OK(nc_qwen3_shape_load("tests/fixtures/qwen35/tiny_text_untied/config.json", &s, &err),
             &err);
    st_file *f = NULL;
    CHECK_OK(st_open("tests/fixtures/qwen35/tiny_text_untied/model.safetensors", &f, &err), &err);
    double stored = 0;
    for (int i = 0; i < f->n_tensors; i++)
        stored += (double)f->tensors[i].n_elems;
    st_close(f);
    CHECKF(nc_qwen3_count(&s).total == stored, "count %.0f, stored %.0f", nc_qwen3_count(&s).total,
           stored);
    CHECK(s.n_linear == 2 && s.lin_conv_kernel == 4); /* full_attention_interval 2: layer 1 */
}

static void test_qwen3_06b_counts_match_published(void) {
    nc_qwen3_shape s;
    nc_error err;
    CHECK_OK(nc_qwen3_shape_load("tests/fixtures/bench/qwen3-0.6b-config.json", &s, &err), &err);
    nc_qwen3_params p = nc_qwen3_count(&s);
    /* model card: 0.6B total, 0.44B non-embedding; llama.cpp: 596.05 M */
    CHECKF(round(p.total / 1e8) == 6, "total %.0f", p.total);
    CHECKF(round(p.non_embedding / 1e7) == 44, "non-embedding %.0f", p.non_embedding);
    CHECKF(round(p.total / 1e4) == 59605, "total %.0f", p.total);
    /* safetensors dump: 751,632,384 params stored, lm_head written separately */
    s.is_tied = 0;
    CHECK(nc_qwen3_count(&s).total == 751632384.0);
}

static void test_qwen3_counts_match_transformers(void) {
    json_t *ref;
    nc_error err;
    CHECK_OK(nc_json_load_file("tests/fixtures/bench/param_counts.json", &ref, &err), &err);
    const char *name;
    json_t *row;
    int n = 0, bad = 0;
    json_object_foreach(ref, name, row) {
        qwen3_config c;
        if (qwen3_config_from_json(json_object_get(row, "config"), &c, name, &err) != NC_OK) {
            printf("  %s\n", err.msg);
            bad++;
            continue;
        }
        nc_qwen3_shape s = nc_qwen3_shape_of(&c);
        nc_qwen3_params p = nc_qwen3_count(&s);
        double total = json_number_value(json_object_get(row, "total"));
        double non_emb = json_number_value(json_object_get(row, "non_embedding"));
        if (p.total != total || p.non_embedding != non_emb) {
            printf("  %s: total %.0f vs HF %.0f, non-embedding %.0f vs HF %.0f\n", name, p.total,
                   total, p.non_embedding, non_emb);
            bad++;
        }
        n++;
    }
    json_decref(ref);
    CHECK(n >= 3 && bad == 0);
}

static void test_qwen3_decode_ceiling(void) {
    nc_qwen3_shape s;
    nc_error err;
    CHECK_OK(nc_qwen3_shape_like("qwen3-0.6b", &s, &err), &err);
    nc_qwen3_params p = nc_qwen3_count(&s);
    /* matmul weights read per token: all layers + tied head = 0.596 B */
    CHECK(p.matmul_per_token == p.layer_matmul + 151936.0 * 1024);
    /* KV cache per token, fp16 K+V all layers: 112 KiB per cached position */
    CHECK(nc_qwen3_kv_bytes(&s, 1) == 112.0 * 1024);
    nc_bounds_query q = {0};
    q.is_decoder = 1;
    q.decoder = s;
    q.batch = 1;
    q.seq_len = 512;
    q.bandwidth_bytes_per_s = 100e9;
    q.format = "fp16";
    json_t *r;
    CHECK_OK(nc_bounds_report(&q, &r, &err), &err);
    json_t *row = json_array_get(json_object_get(r, "formats"), 0);
    double tps = json_number_value(json_object_get(row, "tokens_per_s_ceiling"));
    CHECK_NEAR(tps, 100e9 / (2.0 * p.matmul_per_token), 1e-9);
    CHECK(json_is_null(json_object_get(row, "compute_floor_s")));
    json_decref(r);
}

/* Every Qwen3 preset against its model card's "Number of Parameters
 * (Non-Embedding)" (0.44B, 1.4B, 3.6B, 6.95B, 13.2B, 31.2B, as printed) and
 * every encoder preset reachable through its family's --like. */
static void test_every_preset_matches_its_model_card(void) {
    static const struct {
        const char *name;
        double non_embedding, digits; /* as printed: 0.44B has 2 decimals */
    } cards[] = {{"qwen3-0.6b", 0.44, 100}, {"qwen3-1.7b", 1.4, 10}, {"qwen3-4b", 3.6, 10},
                 {"qwen3-8b", 6.95, 100},   {"qwen3-14b", 13.2, 10}, {"qwen3-32b", 31.2, 10}};
    nc_error err;
    int n_qwen3 = 0;
    for (int i = 0; model_preset_at(i); i++) {
        const model_preset *p = model_preset_at(i);
        if (p->family == MODEL_FAMILY_QWEN35) continue; /* test_qwen35_presets_match_hf_counts */
        if (p->family == MODEL_FAMILY_MODERNBERT) {
            nc_encoder_shape e;
            CHECK_OK(nc_encoder_shape_like(p->name, &e, &err), &err);
            CHECK(e.d_model == p->hidden && e.n_layers == p->layers);
            continue;
        }
        nc_qwen3_shape s;
        CHECK_OK(nc_qwen3_shape_like(p->name, &s, &err), &err);
        for (size_t k = 0; k < sizeof cards / sizeof cards[0]; k++)
            if (!strcmp(cards[k].name, p->name)) {
                double b = nc_qwen3_count(&s).non_embedding / 1e9;
                CHECKF(round(b * cards[k].digits) ==
                           round(cards[k].non_embedding * cards[k].digits),
                       "%s: %.3fB non-embedding, card %.2fB", p->name, b, cards[k].non_embedding);
                n_qwen3++;
            }
    }
    CHECK(n_qwen3 == (int)(sizeof cards / sizeof cards[0]));
}

static void test_amdahl(void) {
    CHECK_NEAR(nc_amdahl(0.9, INFINITY), 10.0, 1e-12);
    CHECK_NEAR(nc_amdahl(0.5, 2.0), 1.0 / 0.75, 1e-12);
    CHECK_NEAR(nc_amdahl(0.0, 100.0), 1.0, 0);
    CHECK_NEAR(nc_amdahl(1.0, 4.0), 4.0, 1e-12);
}

static void test_bad_configs_are_rejected_with_the_field(void) {
    nc_qwen3_shape s;
    nc_error err;
    CHECK(nc_qwen3_shape_load("tests/fixtures/bench/bad-config-heads.json", &s, &err) != NC_OK);
    CHECKF(strstr(err.msg, "num_key_value_heads") != NULL, "%s", err.msg);
    CHECK(nc_qwen3_shape_load("tests/fixtures/bench/bad-config-type.json", &s, &err) != NC_OK);
    CHECKF(strstr(err.msg, "hidden_size") != NULL, "%s", err.msg);
    CHECK(nc_qwen3_shape_load("tests/fixtures/bench/no-such-file.json", &s, &err) == NC_ERR_IO);
    CHECKF(strstr(err.msg, "no-such-file.json") != NULL, "%s", err.msg);
    CHECK(nc_qwen3_shape_like("qwen9-1b", &s, &err) == NC_ERR_NOT_FOUND);
    CHECK(nc_qwen3_shape_like("mmbert-base", &s, &err) == NC_ERR_INVALID);
    nc_encoder_shape e = {0, 768, 1152, 2, 0};
    CHECK(nc_encoder_validate(&e, &err) == NC_ERR_INVALID);
}

int main(void) {
    RUN(test_encoder_fp16_floor_at_400_gbps_matches_study);
    RUN(test_encoder_params_and_flops_by_hand);
    RUN(test_qwen3_06b_counts_match_published);
    RUN(test_qwen35_presets_match_hf_counts);
    RUN(test_qwen35_config_count_matches_safetensors);
    RUN(test_qwen3_counts_match_transformers);
    RUN(test_qwen3_decode_ceiling);
    RUN(test_every_preset_matches_its_model_card);
    RUN(test_amdahl);
    RUN(test_bad_configs_are_rejected_with_the_field);
    return nc_test_exit_code();
}
