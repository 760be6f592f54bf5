/* Shared options of `nectar run` and `nectar chat`: one table-free parser
 * for the model, context and sampling flags, and the model loading both
 * commands do. Values are checked here so bad input is a one-line error. */
#include "gen_cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/timer.h"
#include "cli_env.h"
#include "commands.h"
#include "gen/layer_dump.h"

void gen_cli_defaults(gen_cli_opts *o, int max_new) {
    memset(o, 0, sizeof *o);
    o->max_new_tokens = max_new;
    o->ctx = 4096;
    o->sampling = gen_sampler_defaults_greedy();
    o->sampling.temperature = 0.7f;
    o->sampling.top_p = 0.8f;
    o->sampling.top_k = 20;
    o->sampling.seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        cli_failf("%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 1;
}

static int parse_float(const char *opt, const char *s, double lo, double hi, float *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        cli_failf("%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
        return -1;
    }
    *out = (float)v;
    return 1;
}

static int parse_seed(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s == '-') return cli_failf("--seed: '%s' must be a non-negative integer", s), -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end) {
        cli_failf("--seed: '%s' must be a non-negative integer", s);
        return -1;
    }
    *out = (uint64_t)v;
    return 1;
}

int gen_cli_parse(int argc, char **argv, int *i, gen_cli_opts *o) {
    const char *a = argv[*i];
    static const char *const with_value[] = {"-m",
                                             "--model",
                                             "-n",
                                             "--n-predict",
                                             "--ctx",
                                             "-c",
                                             "-t",
                                             "--threads",
                                             "--temp",
                                             "--top-k",
                                             "--top-p",
                                             "--min-p",
                                             "--repeat-penalty",
                                             "--presence-penalty",
                                             "--frequency-penalty",
                                             "--seed",
                                             "-s",
                                             "--stop",
                                             "--backend",
                                             "--ane-device",
                                             "--dump-layers"};
    int takes_value = 0;
    for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
        takes_value |= !strcmp(a, with_value[k]);
    if (!takes_value) {
        if (!strcmp(a, "--truncate")) {
            o->truncate = 1;
            return 1;
        }
        return 0;
    }
    if (*i + 1 >= argc) {
        cli_failf("%s needs a value", a);
        return -1;
    }
    const char *v = argv[++*i];
    long n;
    int r = 1;
    if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
        o->model_dir = v;
    } else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
        if ((r = parse_long(a, v, -1, INT_MAX, &n)) > 0) o->max_new_tokens = (int)n;
    } else if (!strcmp(a, "--ctx") || !strcmp(a, "-c")) {
        if ((r = parse_long(a, v, 1, INT_MAX, &n)) > 0) o->ctx = (int)n;
        o->is_set_ctx = 1;
    } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        if ((r = parse_long(a, v, 1, 1024, &n)) > 0) o->n_threads = (int)n;
    } else if (!strcmp(a, "--temp")) {
        r = parse_float(a, v, 0, 100, &o->sampling.temperature);
        o->set |= GEN_SET_TEMPERATURE;
    } else if (!strcmp(a, "--top-k")) {
        if ((r = parse_long(a, v, 0, INT_MAX, &n)) > 0) o->sampling.top_k = (int)n;
        o->set |= GEN_SET_TOP_K;
    } else if (!strcmp(a, "--top-p")) {
        r = parse_float(a, v, 0, 1, &o->sampling.top_p);
        o->set |= GEN_SET_TOP_P;
    } else if (!strcmp(a, "--min-p")) {
        r = parse_float(a, v, 0, 1, &o->sampling.min_p);
        o->set |= GEN_SET_MIN_P;
    } else if (!strcmp(a, "--repeat-penalty")) {
        r = parse_float(a, v, 1e-3, 100, &o->sampling.repeat_penalty);
        o->set |= GEN_SET_REPEAT_PENALTY;
    } else if (!strcmp(a, "--presence-penalty")) {
        r = parse_float(a, v, -100, 100, &o->sampling.presence_penalty);
    } else if (!strcmp(a, "--frequency-penalty")) {
        r = parse_float(a, v, -100, 100, &o->sampling.frequency_penalty);
    } else if (!strcmp(a, "--seed") || !strcmp(a, "-s")) {
        r = parse_seed(v, &o->sampling.seed);
        o->has_seed = 1;
    } else if (!strcmp(a, "--backend")) {
        if (strcmp(v, "cpu") && strcmp(v, "mil") && strcmp(v, "ane")) {
            cli_failf("--backend: '%s' is not a backend (cpu, mil or ane)", v);
            return -1;
        }
        o->backend = v;
    } else if (!strcmp(a, "--ane-device")) {
        if (strcmp(v, "fake") && strcmp(v, "real")) {
            cli_failf("--ane-device: '%s' is not an ANE device (fake or real)", v);
            return -1;
        }
        o->ane_device = v;
    } else if (!strcmp(a, "--dump-layers")) {
        o->dump_dir = v;
    } else if (!strcmp(a, "--stop")) {
        if (o->n_stops >= GEN_CLI_MAX_STOPS) {
            cli_failf("--stop: at most %d stop strings", GEN_CLI_MAX_STOPS);
            return -1;
        }
        if (!*v) {
            cli_failf("--stop: the stop string is empty");
            return -1;
        }
        o->stops[o->n_stops++] = v;
    }
    return r;
}

void gen_cli_print_options(FILE *f) {
    fprintf(
        f, "  -m, --model DIR           Hugging Face model folder (config.json, tokenizer.json,\n"
           "                            *.safetensors)\n"
           "  -n, --n-predict N         most tokens to generate (-1: until the context is full)\n"
           "  -c, --ctx N               context (KV cache) in tokens, default 4096, capped by the\n"
           "                            model's max_position_embeddings\n"
           "  -t, --threads N           threads (default: all cores)\n"
           "      --temp T              temperature, 0 = greedy (default 0.7)\n"
           "      --top-k K             keep the K most likely tokens, 0 = off (default 20)\n"
           "      --top-p P             nucleus: smallest set with mass >= P, 1 = off "
           "(default 0.8)\n"
           "      --min-p P             drop tokens below P x the top probability, 0 = off "
           "(default 0)\n"
           "      --repeat-penalty R    divide positive / multiply negative logits of seen "
           "tokens (1 = off)\n"
           "      --presence-penalty P  subtract P from the logit of every seen token (0 = off)\n"
           "      --frequency-penalty F subtract F x count from the logit of seen tokens "
           "(0 = off)\n"
           "  -s, --seed S              random seed: the same seed gives the same output\n"
           "                            (default: from the clock)\n"
           "      --stop STR            end generation at STR (not printed); repeatable\n"
           "      --truncate            drop the oldest prompt tokens when the prompt does not\n"
           "                            fit (default: an error)\n"
           "      --backend cpu|mil|ane cpu (default); mil or ane: -m names an ANE bundle\n"
           "                            (nectar compile), run by the MIL interpreter in fp16\n"
           "                            (mil) or on the Neural Engine (ane); its context is the\n"
           "                            bundle's (--ctx, if given, must match)\n"
           "      --ane-device fake|real  with --backend ane: real (the default; macOS), or\n"
           "                            fake: the whole ANE request path against a device\n"
           "                            backed by the MIL interpreter (any OS); default from\n"
           "                            $NECTAR_ANE_DEVICE\n"
           "      --dump-layers DIR     write the hidden state after each layer for every\n"
           "                            token as DIR/layer_NN.npy (float32 [tokens, hidden])\n");
}

nc_status gen_cli_apply_generation_config(gen_cli_opts *o, nc_error *err) {
    if (!o->model_dir) return NC_OK;
    return gen_sampling_from_folder(o->model_dir, o->set, &o->sampling, err);
}

nc_status gen_cli_ane_device(const char *flag, const char *backend, engine_ane_device *out,
                             nc_error *err) {
    const char *v = flag ? flag : getenv("NECTAR_ANE_DEVICE");
    *out = ENGINE_ANE_REAL;
    if (v && *v && !strcmp(v, "fake")) {
        *out = ENGINE_ANE_FAKE;
        return NC_OK;
    }
    if (v && *v && strcmp(v, "real") != 0)
        return nc_fail(err, NC_ERR_INVALID, "%s: '%s' is not an ANE device (fake or real)",
                       flag ? "--ane-device" : "NECTAR_ANE_DEVICE", v);
    return backend && !strcmp(backend, "ane") ? engine_ane_real_available(err) : NC_OK;
}

nc_status gen_cli_engine_options(const gen_cli_opts *o, engine_options *eo, nc_error *err) {
    memset(eo, 0, sizeof *eo);
    eo->n_threads = o->n_threads;
    eo->ctx = o->is_set_ctx ? o->ctx : 0;
    eo->kv = cli_env_get()->kv_f16 ? ENGINE_KV_F16 : ENGINE_KV_DEFAULT; /* NECTAR_KV */
    return gen_cli_ane_device(o->ane_device, o->backend, &eo->ane_device, err);
}

nc_status gen_cli_load(const gen_cli_opts *o, gen_cli_loaded *l, nc_error *err) {
    memset(l, 0, sizeof *l);
    if (!o->model_dir) return nc_fail(err, NC_ERR_INVALID, "no model: give -m DIR");
    engine_options eo;
    NC_TRY(gen_cli_engine_options(o, &eo, err));
    double t0 = nc_now_s();
    nc_status st =
        gen_model_open(o->backend ? o->backend : "cpu", o->model_dir, &eo, &l->model, err);
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

void gen_cli_unload(gen_cli_loaded *l) {
    if (l->dump && l->seq) {
        nc_error err = {0};
        if (gen_layer_dump_write(l->dump, &err) != NC_OK) cli_fail(&err);
    }
    gen_seq_free(l->seq);
    gen_model_close(l->model);
    gen_layer_dump_free(l->dump);
    memset(l, 0, sizeof *l);
}

int gen_cli_ctx(const gen_cli_loaded *l) {
    return gen_seq_ctx(l->seq);
}

void gen_cli_print_timings(FILE *f, const gen_result *r) {
    int n_run = r->n_prompt - r->n_prompt_cached;
    fprintf(f, "prompt %d tokens", r->n_prompt);
    if (r->n_prompt_cached) fprintf(f, " (%d cached)", r->n_prompt_cached);
    if (r->n_truncated) fprintf(f, " (%d oldest dropped)", r->n_truncated);
    fprintf(f, ", %.1f tok/s | generated %d tokens, %.1f tok/s | stop: %s",
            r->prompt_s > 0 ? n_run / r->prompt_s : 0.0, r->n_generated,
            r->gen_s > 0 ? r->n_generated / r->gen_s : 0.0, gen_finish_name(r->finish));
}
