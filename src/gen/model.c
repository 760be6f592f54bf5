/* gen_model: engine + tokenizer + EOS set + folder sampling defaults. */
#include "gen/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mmap.h"
#include "gen/sampling_params.h"

int gen_model_is_eos(const gen_model *m, int32_t id) {
    for (int i = 0; i < m->n_eos; i++)
        if (m->eos[i] == id) return 1;
    return 0;
}

static void add_eos(gen_model *m, int32_t id) {
    if (id < 0 || m->n_eos >= GEN_MAX_EOS || gen_model_is_eos(m, id)) return;
    m->eos[m->n_eos++] = id;
}

static void set_id(gen_model *m, const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    snprintf(m->model_id, sizeof m->model_id, "%.*s", (int)(n - b), dir + b);
}

void gen_model_build_eos(gen_model *m) {
    m->n_eos = 0;
    for (int i = 0; i < m->e->n_eos; i++)
        add_eos(m, m->e->eos_ids[i]);
    /* <|endoftext|> only where the config names no eos: HF's generate()
     * runs on through it when the config does not list it */
    if (m->n_eos == 0) add_eos(m, tok_find(m->tok, "<|endoftext|>"));
    /* the family's end-of-turn tokens (<|im_end|>, <|eot_id|>, ...) */
    for (int i = 0; i < MODEL_FAMILY_END_TOKENS && m->e->family->end_tokens[i]; i++)
        add_eos(m, tok_find(m->tok, m->e->family->end_tokens[i]));
}

nc_status gen_model_open(const char *backend, const char *dir, const engine_options *opt,
                         gen_model **out, nc_error *err) {
    *out = NULL;
    const char *kind = "script";
    if (strcmp(backend, "script") != 0) NC_TRY(engine_kind_for_decoder(backend, dir, &kind, err));
    gen_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    nc_status st = tok_load(dir, &m->tok, err);
    if (st == NC_OK) st = engine_open(kind, dir, opt, &m->e, err);
    if (st != NC_OK) {
        gen_model_close(m);
        return st;
    }
    gen_model_build_eos(m);
    set_id(m, dir);
    *out = m;
    return NC_OK;
}

void gen_model_close(gen_model *m) {
    if (!m) return;
    gen_model_close(m->draft);
    engine_close(m->e);
    tok_free(m->tok);
    free(m);
}

nc_status gen_sampling_from_folder(const char *dir, unsigned set, gen_sampler_params *out,
                                   nc_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    if (!nc_file_exists(path)) return NC_OK;
    json_t *doc = NULL;
    NC_TRY(nc_json_load_file(path, &doc, err));
    int do_sample = 1;
    gen_sampler_params p = *out;
    nc_status st =
        json_is_object(doc) ? NC_OK : nc_fail(err, NC_ERR_FORMAT, "%s: not a JSON object", path);
    if (st == NC_OK) st = nc_json_bool(doc, "do_sample", &do_sample, 0, path, err);
    /* each parameter the table maps to a key of the file, unless the caller
     * set it */
    for (int i = 0; st == NC_OK && gen_param_at(i); i++) {
        const gen_param *r = gen_param_at(i);
        double v = NAN;
        if (!r->hf_key || (set & r->set)) continue;
        st = nc_json_num(doc, r->hf_key, &v, 0, path, err);
        if (st != NC_OK || isnan(v)) continue;
        if (r->is_int && v < 0) v = r->off; /* HF: a negative top_k is off */
        char what[4200];
        snprintf(what, sizeof what, "%s: field '%s'", path, r->hf_key);
        st = gen_param_check(r, v, what, err);
        if (st == NC_OK) gen_param_put(&p, r, v);
    }
    json_decref(doc);
    if (st != NC_OK) return st;
    if (!(set & GEN_SET_TEMPERATURE) && !do_sample) p.temperature = 0.0f; /* greedy */
    if (gen_sampler_check_params(&p, err) != NC_OK) return nc_fail_prefix(err, "%s", path);
    *out = p;
    return NC_OK;
}
