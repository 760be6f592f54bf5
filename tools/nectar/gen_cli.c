/* Shared options of `nectar run` and `nectar chat`: one table of the
 * model, context, sampling and backend options (cli_opts.h checks every
 * value), and the model loading both commands do. */
#include "gen_cli.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api_model.h"
#include "base/timer.h"
#include "cli_env.h"
#include "commands.h"
#include "engine/engine_ane_device.h"
#include "gen/layer_dump.h"
#include "gen/sampling_params.h"

void gen_cli_defaults(gen_cli_opts *o, int max_new) {
    memset(o, 0, sizeof *o);
    o->max_new_tokens = max_new;
    o->ctx = 4096;
    o->sampling = gen_sampler_defaults_greedy();
    o->sampling.temperature = 0.7f;
    o->sampling.top_p = 0.8f;
    o->sampling.top_k = 20;
    o->sampling.seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
    gen_cli_draft_defaults(&o->draft);
}

void gen_cli_draft_defaults(gen_cli_draft *d) {
    memset(d, 0, sizeof *d);
    d->max = GEN_SPEC_DRAFT_MAX;
}

nc_status gen_cli_draft_attach(const gen_cli_draft *d, gen_model *m, const engine_options *eo,
                               nc_error *err) {
    if (!d->dir) return NC_OK;
    gen_spec_options so = {d->max, d->min, d->p_min};
    return gen_spec_attach(m, engine_backend_at(d->backend_index), d->dir, eo, &so, err);
}

void gen_cli_table(gen_cli_opts *o, cli_opt *rows) {
    const cli_opt t[] = {
        CLI_OPT("-m", "--model", CLI_STRING, "DIR",
                "Hugging Face model folder (config.json, tokenizer.json, weights), or\n"
                "an ANE bundle with --backend mil|ane",
                &o->model_dir, .required = 1),
        CLI_OPT("-n", "--n-predict", CLI_INT, "N",
                "most tokens to generate (-1: until the context is full)", &o->max_new_tokens,
                .min = -1, .max = INT_MAX),
        CLI_OPT("-c", "--ctx", CLI_INT, "N",
                "context (KV cache) in tokens, default 4096, capped by the model's\n"
                "max_position_embeddings (a bundle's is fixed: --ctx, if given, must match)",
                &o->ctx, .min = 1, .max = INT_MAX, .seen = &o->is_set_ctx),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "threads (default: all cores)", &o->n_threads,
                .min = 1, .max = 1024),
        CLI_ENDROW};
    const cli_opt tail[] = {
        CLI_OPT("-s", "--seed", CLI_INT64, "S",
                "random seed: the same seed gives the same output (default: from the clock)",
                &o->seed, .min = 0, .max = INT64_MAX, .seen = &o->has_seed),
        CLI_OPT(NULL, "--stop", CLI_STRINGS, "STR",
                "end generation at STR (not printed); repeatable", o->stops, .count = &o->n_stops,
                .cap = GEN_CLI_MAX_STOPS),
        CLI_OPT(NULL, "--truncate", CLI_FLAG, NULL,
                "drop the oldest prompt tokens when the prompt does not fit (default: an error)",
                &o->truncate),
        GEN_CLI_BACKEND_OPTS(&o->be),
        GEN_CLI_KV_OPT(&o->be),
        GEN_CLI_DRAFT_OPTS(&o->draft),
        CLI_OPT(NULL, "--dump-layers", CLI_STRING, "DIR",
                "write the hidden state after each layer for every token as DIR/layer_NN.npy\n"
                "(float32 [tokens, hidden])",
                &o->dump_dir),
        CLI_ENDROW};
    /* the head, one row per sampling parameter (its flag, range and help
     * from gen/sampling_params.h), then the tail */
    _Static_assert(sizeof t / sizeof *t - 1 + GEN_N_PARAMS + sizeof tail / sizeof *tail <=
                       GEN_CLI_N_ROWS,
                   "raise GEN_CLI_N_ROWS");
    int n = (int)(sizeof t / sizeof *t) - 1;
    memcpy(rows, t, (size_t)n * sizeof *t);
    for (int i = 0; gen_param_at(i); i++, n++) {
        const gen_param *r = gen_param_at(i);
        void *dst = gen_param_field(&o->sampling, r);
        rows[n] = r->is_int ? (cli_opt)CLI_OPT(NULL, r->flag, CLI_INT, r->meta, r->help, dst,
                                               .min = (long long)r->lo, .max = (long long)r->hi,
                                               .seen = &o->seen[i])
                            : (cli_opt)CLI_OPT(NULL, r->flag, CLI_FLOAT, r->meta, r->help, dst,
                                               .lo = r->lo, .hi = r->hi, .open_lo = r->open_lo,
                                               .seen = &o->seen[i]);
    }
    memcpy(rows + n, tail, sizeof tail);
}

int gen_cli_finish(const cli_command *c, gen_cli_opts *o) {
    for (int i = 0; i < o->n_stops; i++)
        if (!*o->stops[i]) return cli_usage_error(c, "--stop: the stop string is empty");
    o->backend = gen_cli_backend_name(&o->be);
    if (o->has_seed) o->sampling.seed = (uint64_t)o->seed;
    o->set = 0;
    for (int i = 0; gen_param_at(i); i++)
        if (o->seen[i]) o->set |= gen_param_at(i)->set;
    return CLI_GO;
}

nc_status gen_cli_apply_generation_config(gen_cli_opts *o, nc_error *err) {
    if (!o->model_dir) return NC_OK;
    return gen_sampling_from_folder(o->model_dir, o->set, &o->sampling, err);
}

const char *gen_cli_backend_name(const gen_cli_backend *b) {
    return engine_backend_at(b->backend_index);
}

nc_status gen_cli_engine(const gen_cli_backend *b, int n_threads, int ctx, engine_options *eo,
                         nc_error *err) {
    memset(eo, 0, sizeof *eo);
    eo->n_threads = n_threads;
    eo->ctx = ctx;
    const struct {
        const char *key, *given;
    } flags[] = {{"kv", b->kv},
                 {"ane_device", b->is_set_device ? b->device : NULL},
                 {"ane_cpu", b->ane_cpu}};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
        const engine_option_row *r = engine_option_named(flags[i].key);
        const char *v = flags[i].given ? flags[i].given : cli_env_engine(r->key);
        if (!v) continue;
        if (!strcmp(r->key, "ane_device") && !strcmp(v, "help"))
            exit((engine_ane_device_help(stdout), 0));
        NC_TRY(engine_option_set(eo, r->key, v, flags[i].given ? r->flag : r->env, err));
    }
    if (!strcmp(gen_cli_backend_name(b), "ane") && eo->ane_device == ENGINE_ANE_REAL)
        return engine_ane_real_available(err);
    return NC_OK;
}

nc_status gen_cli_tune_decoder_kernels(const gen_cli_backend *b, int n_threads, nc_error *err) {
    const cpu_tuning *tuned; /* the CPU's kernels, measured once per machine */
    return strcmp(gen_cli_backend_name(b), "cpu") ? NC_OK
                                                   : cli_env_tune_kernels(n_threads, &tuned, err);
}

nc_status gen_cli_engine_options(const gen_cli_opts *o, engine_options *eo, nc_error *err) {
    NC_TRY(gen_cli_engine(&o->be, o->n_threads, o->is_set_ctx ? o->ctx : 0, eo, err));
    return gen_cli_tune_decoder_kernels(&o->be, o->n_threads, err);
}

nc_status gen_cli_load(const gen_cli_opts *o, gen_cli_loaded *l, nc_error *err) {
    memset(l, 0, sizeof *l);
    if (!o->model_dir) return nc_fail(err, NC_ERR_INVALID, "no model: give -m DIR");
    engine_options eo;
    NC_TRY(gen_cli_engine_options(o, &eo, err));
    double t0 = nc_now_s();
    nc_status st =
        gen_model_open(o->backend ? o->backend : "cpu", o->model_dir, &eo, &l->model, err);
    if (st == NC_OK) st = gen_cli_draft_attach(&o->draft, l->model, &eo, err);
    if (st == NC_OK) l->tok = l->model->tok;
    if (st == NC_OK && o->dump_dir) {
        const engine *e = l->model->e;
        st = gen_layer_dump_new(o->dump_dir, e->n_layers, e->hidden, &l->dump, err);
        if (st == NC_OK) st = engine_set_layer_hook(l->model->e, gen_layer_dump_hook, l->dump, err);
    }
    if (st == NC_OK) st = gen_seq_new(l->model, o->ctx, &l->seq, err);
    if (st != NC_OK) {
        gen_cli_unload(l);
        return st;
    }
    l->load_s = nc_now_s() - t0;
    return NC_OK;
}

/* --dump-layers: the files written when the model got as far as a
 * sequence (a failure is reported, the command's exit status stays). */
static void dump_close(struct gen_layer_dump *d, int has_seq) {
    nc_error err = {0};
    if (d && has_seq && gen_layer_dump_write(d, &err) != NC_OK) cli_fail(&err);
    gen_layer_dump_free(d);
}

void gen_cli_unload(gen_cli_loaded *l) {
    if (l->dump) dump_close(l->dump, l->seq != NULL);
    gen_seq_free(l->seq);
    gen_model_close(l->model);
    memset(l, 0, sizeof *l);
}

int gen_cli_ctx(const gen_cli_loaded *l) {
    return gen_seq_ctx(l->seq);
}

nc_status gen_cli_api_options(const gen_cli_opts *o, gen_cli_api *a, nc_error *err) {
    memset(a, 0, sizeof *a);
    return gen_cli_engine_options(o, &a->eo, err);
}

/* The sampling of the command line: its defaults (gen_cli_defaults, or
 * chat's), then the folder's generation_config.json for what the command
 * line did not set, then what it did set. */
static nc_status api_sampling(const gen_cli_opts *o, const nc_model *m, nc_sampling *s,
                              nc_error *err) {
    const gen_sampler_params *p = &o->sampling;
    for (int i = 0; gen_param_at(i); i++)
        NC_TRY(nc_sampling_set(s, gen_param_at(i)->name, gen_param_get(p, gen_param_at(i)), err));
    NC_TRY(nc_sampling_set(s, "truncate", o->truncate, err));
    NC_TRY(nc_sampling_from_model(s, m, err));
    for (int i = 0; gen_param_at(i); i++) /* the command line over the folder */
        if (o->seen[i])
            NC_TRY(
                nc_sampling_set(s, gen_param_at(i)->name, gen_param_get(p, gen_param_at(i)), err));
    nc_sampling_set_seed(s, p->seed);
    for (int i = 0; i < o->n_stops; i++)
        NC_TRY(nc_sampling_add_stop(s, o->stops[i], err));
    return NC_OK;
}

nc_status gen_cli_api_load(const gen_cli_opts *o, gen_cli_api *a, nc_error *err) {
    if (!o->model_dir) return nc_fail(err, NC_ERR_INVALID, "no model: give -m DIR");
    double t0 = nc_now_s();
    nc_status st = api_model_open(o->model_dir, o->backend, &a->eo, &a->model, err);
    if (st == NC_OK && o->draft.dir)
        st = api_model_set_draft(a->model, o->draft.dir, engine_backend_at(o->draft.backend_index),
                                 &a->eo,
                                 &(gen_spec_options){o->draft.max, o->draft.min, o->draft.p_min},
                                 err);
    if (st == NC_OK && nc_model_get_kind(a->model) != NC_MODEL_DECODER)
        st = nc_fail(err, NC_ERR_INVALID,
                     "%s is an encoder: generation needs a decoder (for encoders: nectar embed, "
                     "fill-mask or classify)",
                     o->model_dir);
    if (st == NC_OK && o->dump_dir) {
        st = gen_layer_dump_new(o->dump_dir, nc_model_num_layers(a->model),
                                nc_model_embedding_size(a->model), &a->dump, err);
        if (st == NC_OK)
            st = nc_model_set_layer_callback(a->model, gen_layer_dump_hook, a->dump, err);
    }
    if (st == NC_OK) st = nc_sequence_new(a->model, 0, &a->seq, err);
    if (st == NC_OK && !(a->sampling = nc_sampling_new()))
        st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    if (st == NC_OK) st = api_sampling(o, a->model, a->sampling, err);
    if (st != NC_OK) {
        gen_cli_api_unload(a);
        return st;
    }
    a->load_s = nc_now_s() - t0;
    return NC_OK;
}

void gen_cli_api_unload(gen_cli_api *a) {
    dump_close(a->dump, a->seq != NULL);
    nc_sampling_free(a->sampling);
    nc_sequence_free(a->seq);
    nc_model_free(a->model);
    a->sampling = NULL;
    a->seq = NULL;
    a->model = NULL;
    a->dump = NULL;
}

gen_cli_timings gen_cli_timings_of_result(const gen_result *r) {
    return (gen_cli_timings){r->n_prompt,   r->n_prompt_cached,        r->n_truncated,
                             r->n_generated, r->prompt_s,              r->gen_s,
                             gen_finish_name(r->finish), r->n_drafted, r->n_accepted,
                             r->n_draft_steps};
}

gen_cli_timings gen_cli_timings_of_sequence(const nc_sequence *s, nc_finish f) {
    return (gen_cli_timings){(int)nc_sequence_stat(s, NC_STAT_PROMPT_TOKENS),
                             (int)nc_sequence_stat(s, NC_STAT_PROMPT_CACHED),
                             (int)nc_sequence_stat(s, NC_STAT_PROMPT_DROPPED),
                             (int)nc_sequence_stat(s, NC_STAT_GENERATED),
                             nc_sequence_stat(s, NC_STAT_PROMPT_SECONDS),
                             nc_sequence_stat(s, NC_STAT_GENERATE_SECONDS),
                             nc_finish_name(f),
                             (int)nc_sequence_stat(s, NC_STAT_DRAFTED),
                             (int)nc_sequence_stat(s, NC_STAT_DRAFT_ACCEPTED),
                             (int)nc_sequence_stat(s, NC_STAT_DRAFT_STEPS)};
}

void gen_cli_print_timings(FILE *f, const gen_cli_timings *t) {
    int n_run = t->n_prompt - t->n_prompt_cached;
    fprintf(f, "prompt %d tokens", t->n_prompt);
    if (t->n_prompt_cached) fprintf(f, " (%d cached)", t->n_prompt_cached);
    if (t->n_truncated) fprintf(f, " (%d oldest dropped)", t->n_truncated);
    fprintf(f, ", %.1f tok/s | generated %d tokens, %.1f tok/s | stop: %s",
            t->prompt_s > 0 ? n_run / t->prompt_s : 0.0, t->n_generated,
            t->gen_s > 0 ? t->n_generated / t->gen_s : 0.0, t->finish);
    if (t->n_draft_steps)
        fprintf(f, " | draft %d proposed, %d accepted (%.0f%%), %.2f tokens/step", t->n_drafted,
                t->n_accepted, t->n_drafted ? 100.0 * t->n_accepted / t->n_drafted : 0.0,
                (double)(t->n_accepted + t->n_draft_steps) / t->n_draft_steps);
}
