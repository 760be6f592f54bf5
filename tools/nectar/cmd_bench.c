/* `nectar bench -m DIR`: the speed of an engine (the cpu one by default;
 * --backend mil|ane on a bundle), llama-bench style, through the engine
 * seam. pp<P>: one batched forward of a P-token prompt from an empty cache;
 * tg<N>: N single-token forwards from an empty cache, each producing logits.
 * Each is repeated --runs times (after one untimed warm-up token that pages
 * the weights in, and one untimed pp run, as llama-bench warms up) and
 * printed as mean +/- sd tokens/s, with the load time, peak RSS, the share
 * of the threads' time the process got, and the two rooflines: tg against
 * memory bandwidth / weight bytes per token, pp's GFLOP/s against the
 * measured peak FMA rate. `--bandwidth` measures only the machine (read
 * bandwidth, peak FMA per kernel table, AMX tile rate). `--compare` hands
 * over to cmd_bench_compare. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "bench/bounds.h"
#include "bench_tune.h"
#include "cli_env.h"
#include "cli_opts.h"
#include "commands.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_membw.h"
#include "cpu/cpu_peak.h"
#include "cpu/cpu_wisdom.h"
#include "engine/engine.h"
#include "gen/generate.h"
#include "gen/model.h"
#include "gen/sampler.h"
#include "gen/speculative.h"
#include "gen_cli.h"

#define MAX_RUNS 100

typedef struct {
    double tok_per_s[MAX_RUNS];
    int runs;
    double mean, sd;
    double wall_s, cpu_s; /* totals over the runs: CPU share = cpu_s / (wall_s * threads) */
} bench_series;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void summarize(bench_series *b) {
    double s = 0, ss = 0;
    for (int i = 0; i < b->runs; i++)
        s += b->tok_per_s[i];
    b->mean = s / b->runs;
    for (int i = 0; i < b->runs; i++)
        ss += (b->tok_per_s[i] - b->mean) * (b->tok_per_s[i] - b->mean);
    b->sd = b->runs > 1 ? sqrt(ss / (b->runs - 1)) : 0.0;
}

static void stats_of(const double *v, int n, double *mean, double *sd) {
    double s = 0, ss = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    *mean = s / n;
    for (int i = 0; i < n; i++)
        ss += (v[i] - *mean) * (v[i] - *mean);
    *sd = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
}

/* The machine alone: read bandwidth (every run) and each table's peak. */
static int bench_machine(int threads, int runs, size_t bw_bytes, int as_json) {
    nc_error err;
    nc_pool *pool;
    if (nc_pool_new(threads, &pool, &err) != NC_OK) return cli_fail(&err);
    double mean, sd;
    cpu_membw bw;
    double best = cpu_read_bandwidth(pool, bw_bytes, runs, &bw);
    double bw_cpu = bw.per_cpu_s, *each = bw.runs;
    if (best <= 0) {
        nc_pool_free(pool);
        return cli_failf("bench: cannot allocate %zu MiB for the bandwidth probe", bw_bytes >> 20);
    }
    stats_of(each, runs, &mean, &sd);
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    double peak[8], core[8];
    for (int i = 0; i < nt; i++)
        peak[i] = cpu_peak_fma_flops(pool, tabs[i], 0.3, 3, &core[i]);
    double amx_core = 0, amx = cpu_peak_amx_flops(pool, 0.3, 3, &amx_core);
    int n_threads = nc_pool_threads(pool);
    nc_pool_free(pool);
    if (as_json) {
        printf("{\n  \"threads\": %d,\n  \"buffer_bytes\": %zu,\n"
               "  \"read_bandwidth_bytes_per_s\": {\"best\": %.0f, \"mean\": %.0f, \"sd\": %.0f, "
               "\"runs\": [",
               n_threads, bw_bytes, best, mean, sd);
        for (int i = 0; i < runs; i++)
            printf("%s%.0f", i ? ", " : "", each[i]);
        printf("], \"pattern\": \"%s\", \"patterns\": {", bw.pattern);
        for (int i = 0; i < bw.n_patterns; i++)
            printf("%s\"%s\": %.0f", i ? ", " : "", bw.name[i], bw.best_of[i]);
        printf("}},\n  \"peak_fma_flops_per_s\": {");
        for (int i = 0; i < nt; i++)
            printf("%s\"%s\": %.0f", i ? ", " : "", tabs[i]->name, peak[i]);
        printf("},\n  \"peak_fma_flops_per_cpu_s\": {");
        for (int i = 0; i < nt; i++)
            printf("%s\"%s\": %.0f", i ? ", " : "", tabs[i]->name, core[i]);
        printf("},\n  \"peak_amx_bf16_flops_per_s\": %.0f,\n  \"peak_amx_bf16_flops_per_cpu_s\": "
               "%.0f,\n  \"read_bytes_per_cpu_s\": %.0f,\n  \"kernels\": \"%s\"\n}\n",
               amx, amx_core, bw_cpu, cpu_kernels_get()->name);
    } else {
        printf("%d threads; read bandwidth over %zu MiB: best %.2f GB/s, mean %.2f +/- %.2f GB/s "
               "(%d runs)\n",
               n_threads, bw_bytes >> 20, best / 1e9, mean / 1e9, sd / 1e9, runs);
        printf("the ceiling is the fastest of %d patterns: %s\n", bw.n_patterns, bw.pattern);
        for (int i = 0; i < bw.n_patterns; i++)
            printf("  %-48s best %.2f GB/s\n", bw.name[i], bw.best_of[i] / 1e9);
        printf("per CPU-second of a reading thread: %.2f GB (%s)\n", bw_cpu / 1e9,
               bw.pattern_per_cpu_s);
        for (int i = 0; i < nt; i++)
            printf("peak fp32 FMA rate, %-12s %.1f GFLOP/s (%.1f per CPU-second of one core)%s\n",
                   tabs[i]->name, peak[i] / 1e9, core[i] / 1e9,
                   tabs[i] == cpu_kernels_get() ? "   (used by the engine)" : "");
        if (amx > 0)
            printf("peak bf16 AMX tile rate  %.1f GFLOP/s (%.1f per CPU-second of one core)%s\n",
                   amx / 1e9, amx_core / 1e9,
                   cpu_kernels_get()->amx ? "   (prompts on the amx table)" : "");
    }
    return 0;
}

/* The kernels chosen by measurement (cli_env_tune_kernels) and why. */
static void print_tuning(const cpu_tuning *t) {
    printf("kernel choices (wisdom %s; CPU %s):\n", t->file, t->cpu);
    for (int s = 0; s < CPU_SLOT_N; s++) {
        const cpu_slot_report *r = &t->slot[s];
        printf("  %-22s %-12s %s", r->slot, r->kernel, r->why);
        if (r->rate > 0) printf(", %.1f %s", r->rate, r->unit);
        if (r->n_candidates > 1) {
            printf(" (");
            for (int i = 0; i < r->n_candidates; i++)
                printf("%s%s %.1f", i ? ", " : "", r->cand_name[i], r->cand_rate[i]);
            printf(")");
        }
        printf("\n");
    }
    if (t->note[0]) printf("  %s\n", t->note);
}

static void print_tuning_json(const cpu_tuning *t) {
    printf("  \"kernel_choices\": {");
    for (int s = 0; s < CPU_SLOT_N; s++) {
        const cpu_slot_report *r = &t->slot[s];
        printf("%s\"%s\": {\"kernel\": \"%s\", \"why\": \"%s\", \"rate\": %.3f, "
               "\"candidates\": {",
               s ? ", " : "", r->slot, r->kernel, r->why, r->rate);
        for (int i = 0; i < r->n_candidates; i++)
            printf("%s\"%s\": %.3f", i ? ", " : "", r->cand_name[i], r->cand_rate[i]);
        printf("}}");
    }
    printf("}\n");
}

/* Floating-point work of one pp forward of P tokens from an empty cache:
 * every layer matrix for every token (for Qwen3.5 its linear layers' own
 * projections and the full layers' output-gate half, as src/bench/bounds.c
 * counts them against HF), the LM head once (logits of the last token
 * only), causal attention in the full-attention layers (q.k and p.v over
 * i + 1 keys at row i). The delta rule's own work is not counted. */
static double pp_flops(const nc_qwen3_shape *s, int P) {
    double qd = (double)s->num_attention_heads * (double)s->head_dim;
    double attn = 4.0 * qd * ((double)P * (P + 1) / 2);
    double full = (double)(s->num_hidden_layers - s->n_linear);
    return 2.0 * P * nc_qwen3_count(s).layer_matmul + full * attn +
           2.0 * (double)s->vocab_size * (double)s->hidden_size;
}

static double cpu_share(const bench_series *b, int threads) {
    return b->wall_s > 0 ? b->cpu_s / (b->wall_s * threads) : 0.0;
}

static void print_series_json(const char *name, int n_tokens, const bench_series *b, int threads) {
    printf("  \"%s\": {\"n_tokens\": %d, \"mean_tok_per_s\": %.3f, \"sd_tok_per_s\": %.3f, "
           "\"cpu_share\": %.3f, \"runs_tok_per_s\": [",
           name, n_tokens, b->mean, b->sd, cpu_share(b, threads));
    for (int i = 0; i < b->runs; i++)
        printf("%s%.3f", i ? ", " : "", b->tok_per_s[i]);
    printf("]},\n");
}

/* ---- --draft: speculative decoding against plain decoding -------------- */

#define DRAFT_PROMPT 16 /* prompt tokens before the generated ones */

typedef struct {
    bench_series plain, spec;
    int drafted, accepted, steps, generated; /* the speculative runs' sums */
    int same_output; /* every run's greedy tokens equal to the first plain run's */
} draft_bench;

typedef struct {
    int32_t *ids;
    int n, cap;
} token_log;

static int log_token(void *user, int32_t tok, const float *logits) {
    (void)logits;
    token_log *l = user;
    if (l->n < l->cap) l->ids[l->n++] = tok;
    return 0;
}

/* One greedy request of n_tok tokens after prompt on s from an empty cache:
 * tokens/s of the generation (after the first token) into b's run r. */
static nc_status draft_run(gen_seq *s, const int32_t *prompt, int n_tok, token_log *l,
                           bench_series *b, int r, gen_result *res, nc_error *err) {
    gen_seq_reset(s);
    gen_request req = {0};
    req.sampling = gen_sampler_defaults_greedy();
    req.max_new_tokens = n_tok;
    gen_callbacks cb = {log_token, NULL, l};
    l->n = 0;
    double c0 = nc_process_cpu_s();
    NC_TRY(gen_generate(s, prompt, DRAFT_PROMPT, &req, &cb, res, err));
    b->cpu_s += nc_process_cpu_s() - c0;
    b->wall_s += res->prompt_s + res->gen_s;
    b->tok_per_s[r] = res->gen_s > 0 ? (res->n_generated - 1) / res->gen_s : 0;
    return NC_OK;
}

/* Greedy generation of n_tok tokens on target, without and with the
 * draft, in alternating runs (plain, draft, draft, plain, ...) so load
 * affects both; end-of-sequence tokens do not stop it (random weights). */
static nc_status bench_draft(const char *target, const char *draft, const engine_options *eo,
                             int draft_max, int n_tok, int runs, draft_bench *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    out->plain.runs = out->spec.runs = runs;
    gen_model *m = NULL;
    gen_seq *plain = NULL, *spec = NULL;
    int ctx = DRAFT_PROMPT + n_tok + draft_max + 2;
    int32_t prompt[DRAFT_PROMPT];
    token_log first = {malloc((size_t)n_tok * sizeof(int32_t)), 0, n_tok},
              l = {malloc((size_t)n_tok * sizeof(int32_t)), 0, n_tok};
    nc_status st = first.ids && l.ids ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "bench: out of memory");
    if (st == NC_OK) st = gen_model_open("cpu", target, eo, &m, err);
    if (st == NC_OK) {
        m->n_eos = 0;                          /* run to n_tok tokens */
        st = gen_seq_new(m, ctx, &plain, err); /* made before the draft: plain decoding */
    }
    gen_spec_options so = {draft_max, 0, 0.0f};
    if (st == NC_OK) st = gen_spec_attach(m, "cpu", draft, eo, &so, err);
    if (st == NC_OK) st = gen_seq_new(m, ctx, &spec, err);
    uint32_t rng = 4242;
    for (int i = 0; st == NC_OK && i < DRAFT_PROMPT; i++) {
        rng = rng * 1664525u + 1013904223u;
        prompt[i] = (int32_t)((rng >> 8) % (uint32_t)m->e->n_vocab);
    }
    out->same_output = 1;
    for (int r = 0; st == NC_OK && r < runs; r++)
        for (int half = 0; half < 2 && st == NC_OK; half++) {
            int use_draft = (r + half) % 2; /* plain, draft | draft, plain | ... */
            gen_result res;
            st = draft_run(use_draft ? spec : plain, prompt, n_tok,
                           r == 0 && half == 0 ? &first : &l, use_draft ? &out->spec : &out->plain,
                           r, &res, err);
            if (st != NC_OK) break;
            if (r || half)
                out->same_output &= l.n == first.n && !memcmp(l.ids, first.ids, (size_t)l.n * 4);
            if (use_draft) {
                out->drafted += res.n_drafted;
                out->accepted += res.n_accepted;
                out->steps += res.n_draft_steps;
                out->generated += res.n_generated;
            }
        }
    gen_seq_free(plain);
    gen_seq_free(spec);
    gen_model_close(m);
    free(first.ids);
    free(l.ids);
    if (st == NC_OK) {
        summarize(&out->plain);
        summarize(&out->spec);
    }
    return st;
}

static void print_draft(const draft_bench *d, const char *draft, int draft_max, int n_tok,
                        int threads, int as_json) {
    double acc = d->drafted ? (double)d->accepted / d->drafted : 0.0;
    double speedup = d->plain.mean > 0 ? d->spec.mean / d->plain.mean : 0.0;
    /* per verification step: the accepted proposals plus the target's own */
    double per_step = d->steps ? (double)(d->accepted + d->steps) / d->steps : 0.0;
    if (as_json) {
        printf("  \"draft\": {\"model\": \"%s\", \"draft_max\": %d, \"n_tokens\": %d, "
               "\"plain_tok_per_s\": %.3f, \"plain_sd\": %.3f, \"plain_cpu_share\": %.3f, "
               "\"draft_tok_per_s\": %.3f, \"draft_sd\": %.3f, \"draft_cpu_share\": %.3f, "
               "\"speedup\": %.4f, \"drafted\": %d, \"accepted\": %d, \"acceptance\": %.4f, "
               "\"verification_steps\": %d, \"generated\": %d, \"tokens_per_step\": %.3f, "
               "\"same_output\": %s},\n",
               draft, draft_max, n_tok, d->plain.mean, d->plain.sd, cpu_share(&d->plain, threads),
               d->spec.mean, d->spec.sd, cpu_share(&d->spec, threads), speedup, d->drafted,
               d->accepted, acc, d->steps, d->generated, per_step,
               d->same_output ? "true" : "false");
        return;
    }
    printf("speculative decoding, draft %s (--draft-max %d), greedy, %d tokens after a %d-token "
           "prompt, %d runs each, alternating:\n",
           draft, draft_max, n_tok, DRAFT_PROMPT, d->plain.runs);
    printf("| decoding | tokens/s (mean +/- sd) | CPU share of %d threads |\n|---|---|---|\n",
           threads);
    printf("| plain | %.2f +/- %.2f | %.0f%% |\n", d->plain.mean, d->plain.sd,
           100 * cpu_share(&d->plain, threads));
    printf("| with the draft | %.2f +/- %.2f | %.0f%% |\n", d->spec.mean, d->spec.sd,
           100 * cpu_share(&d->spec, threads));
    printf("speedup %.2fx; acceptance %.1f%% (%d of %d drafted tokens), %.2f tokens per "
           "verification step; greedy output %s\n",
           speedup, 100 * acc, d->accepted, d->drafted, per_step,
           d->same_output ? "identical in every run" : "DIFFERS between runs");
}

int cmd_bench(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--compare")) return cmd_bench_compare(argc, argv);
    const char *dir = NULL;
    int threads = 0, n_pp = 512, n_tg = 128, runs = 5, as_json = 0, machine = 0, bw_mib = 2048;
    int tune = 0;
    int pp_given = 0, tg_given = 0, bw_given = 0, draft_max = GEN_SPEC_DRAFT_MAX;
    const char *draft = NULL;
    gen_cli_backend be = {0};
    const cli_opt opts[] = {
        CLI_OPT("-m", "--model", CLI_STRING, "DIR",
                "model folder (or an ANE bundle with --backend mil|ane)", &dir),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "threads (default: all cores)", &threads, .min = 1,
                .max = 1024),
        CLI_OPT("-p", NULL, CLI_INT, "N", "prompt tokens of the pp test, 0 = none (default 512)",
                &n_pp, .min = 0, .max = 1 << 20, .seen = &pp_given),
        CLI_OPT("-n", NULL, CLI_INT, "N", "tokens of the tg test, 0 = none (default 128)", &n_tg,
                .min = 0, .max = 1 << 20, .seen = &tg_given),
        CLI_OPT(NULL, "--runs", CLI_INT, "N", "repetitions of each test (default 5)", &runs,
                .min = 1, .max = MAX_RUNS),
        CLI_OPT(NULL, "--bw-mib", CLI_INT, "MIB",
                "bandwidth probe buffer (default 2048; with a model, at most an eighth of the "
                "memory available once it is open, at least 256)",
                &bw_mib, .min = 1, .max = 1 << 20, .seen = &bw_given),
        GEN_CLI_BACKEND_OPTS(&be),
        GEN_CLI_KV_OPT(&be),
        CLI_OPT(NULL, "--draft", CLI_STRING, "DIR",
                "then speculative decoding: -n greedy tokens without and with draft DIR, "
                "alternating (acceptance, tokens/s)",
                &draft),
        CLI_OPT(NULL, "--draft-max", CLI_INT, "N", "tokens the draft proposes per step (default 6)",
                &draft_max, .min = 1, .max = GEN_SPEC_DRAFT_CAP),
        CLI_OPT(NULL, "--tune", CLI_FLAG, NULL,
                "first choose the decode kernel by timing this model's decoding with the "
                "probe's shortlist, and keep it in the wisdom file (bf16, q8)",
                &tune),
        CLI_OPT(NULL, "--json", CLI_FLAG, NULL, "one JSON object on stdout", &as_json),
        CLI_OPT(NULL, "--bandwidth", CLI_FLAG, NULL,
                "measure only the machine: read bandwidth, peak FMA per kernel table, AMX",
                &machine),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "bench",
        .usage = "-m DIR [options]   |   --bandwidth [options]   |   --compare ... (A/B harness)",
        .about = "Prompt processing (pp, one batched forward) and generation (tg, one token at a\n"
                 "time) speed in tokens/s, mean +/- sd over the runs; load time; peak RSS; tg\n"
                 "against the bandwidth roofline, pp against the peak FMA rate. --bandwidth:\n"
                 "memory read bandwidth (threaded streaming read of --bw-mib MiB) and peak fp32\n"
                 "FMA rate of each kernel table (and the bf16 AMX tile rate where there is AMX),\n"
                 "without a model.\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    if (machine) return bench_machine(threads, runs, (size_t)bw_mib << 20, as_json);
    if (!dir) return cli_usage_error(&cmd, "--model DIR is required (or --bandwidth)");
    if (n_pp + n_tg == 0) return cli_usage_error(&cmd, "-p and -n are both 0: nothing to measure");
    const char *backend = gen_cli_backend_name(&be);
    if (tune && strcmp(backend, "cpu"))
        return cli_usage_error(&cmd, "--tune: the decode kernels are the cpu backend's");
    if (draft && strcmp(backend, "cpu"))
        return cli_usage_error(&cmd, "--draft: speculative decoding is benchmarked on the cpu "
                                     "backend only");

    nc_error err = {0};
    const cpu_tuning *tuning;
    if (cli_env_tune_kernels(threads, &tuning, &err) != NC_OK) return cli_fail(&err);
    if (tune && !strcmp(tuning->file, "off"))
        return cli_usage_error(&cmd, "--tune: no wisdom file to keep the choice in "
                                     "(NECTAR_WISDOM is off)");
    engine_options eo;
    if (gen_cli_engine(&be, threads, 0, &eo, &err) != NC_OK)
        return cli_usage_error(&cmd, "%s", err.msg);
    const char *kind = NULL;
    engine *m = NULL;
    double t0 = nc_now_s();
    nc_status ost = engine_kind_for_decoder(backend, dir, &kind, &err);
    if (ost == NC_OK) ost = engine_open(kind, dir, &eo, &m, &err);
    if (ost == NC_OK && !m->dims.layers) {
        ost = nc_fail(&err, NC_ERR_UNSUPPORTED, "bench: %s (%s) does not report its shape", dir,
                      m->kind);
        engine_close(m);
    }
    if (ost != NC_OK) return cli_fail(&err);
    const decoder_dims *c = &m->dims;
    /* the defaults shrink to a short model's context; numbers given do not */
    if (!pp_given && n_pp >= m->ctx_max) n_pp = m->ctx_max - 1;
    if (!tg_given && n_tg >= m->ctx_max) n_tg = m->ctx_max - 1;
    int ctx = (n_pp > n_tg ? n_pp : n_tg) + 1;
    if (tune && ctx < BENCH_TUNE_TOKENS + 1) ctx = BENCH_TUNE_TOKENS + 1;
    if (ctx > m->ctx_max) {
        int ctx_max = m->ctx_max;
        engine_close(m);
        return cli_failf("bench: %s %d exceeds the context of %d tokens",
                         ctx - 1 > n_pp && ctx - 1 > n_tg ? "--tune's decode of" : "-p/-n", ctx - 1,
                         ctx_max);
    }
    engine_seq *s = NULL;
    float *logits = malloc((size_t)c->vocab * sizeof(float));
    int32_t *tokens = malloc((size_t)ctx * sizeof(int32_t));
    if (!logits || !tokens || engine_seq_new(m, ctx, &s, &err) != NC_OK) {
        if (!logits || !tokens) nc_fail(&err, NC_ERR_NOMEM, "bench: out of memory");
        free(logits);
        free(tokens);
        engine_close(m);
        return cli_fail(&err);
    }
    double load_s = nc_now_s() - t0; /* a bundle's device programs open with the sequence */
    uint32_t rng = 12345;
    for (int i = 0; i < ctx; i++) {
        rng = rng * 1664525u + 1013904223u;
        tokens[i] = (int32_t)((rng >> 8) % (uint32_t)c->vocab);
    }
    double tw = nc_now_s(); /* warm-up: the first forward pages the mmapped weights in */
    nc_status st = engine_forward(m, s, tokens, 1, logits, &err);
    double first_s = nc_now_s() - tw;
    if (st == NC_OK && tune)
        st = bench_tune(m, s, tokens, logits, threads, as_json ? stderr : stdout, &tuning, &err);
    if (st == NC_OK && n_pp > 1) { /* and the prompt once, untimed, as llama-bench warms up */
        engine_seq_truncate(m, s, 0);
        st = engine_forward(m, s, tokens, n_pp, logits, &err);
    }
    bench_series pp = {.runs = runs}, tg = {.runs = runs};
    for (int r = 0; r < runs && st == NC_OK && n_pp > 0; r++) {
        engine_seq_truncate(m, s, 0);
        double t = nc_now_s(), c0 = nc_process_cpu_s();
        st = engine_forward(m, s, tokens, n_pp, logits, &err);
        pp.tok_per_s[r] = n_pp / (nc_now_s() - t);
        pp.wall_s += nc_now_s() - t;
        pp.cpu_s += nc_process_cpu_s() - c0;
    }
    /* The bandwidth probe on its own pool (the model's sleeps between
     * forwards): a round right after each tg run, so that each run is set
     * against the bandwidth of its own minute (a shared VM's moves between
     * levels minutes apart: docs/performance.md), then rounds up to three. */
    size_t wbytes = m->weight_bytes_per_token; /* 0: not known (bundles) */
    int n_threads = m->n_threads > 0 ? m->n_threads : 1;
    /* The engine's peak RSS, not the probe's buffers: the peak so far, plus
     * what the engine's resident memory grows by during tg (its KV cache's
     * pages are touched as tokens are written), where the system says. */
    size_t rss = nc_peak_rss_bytes();
    nc_pool *pool = NULL;
    cpu_membw probe = {0};
    cpu_membw_probe *pr = NULL;
    double tg_frac[MAX_RUNS];
    int n_frac = 0;
    if (!bw_given) { /* its two buffers, held through tg: a quarter of what is left at most */
        size_t cap = nc_available_memory_bytes() / 8 >> 20;
        if (cap < 256) cap = 256;
        if ((size_t)bw_mib > cap) bw_mib = (int)cap;
    }
    if (nc_pool_new(n_threads, &pool, &err) == NC_OK)
        pr = cpu_membw_open((size_t)bw_mib << 20, &probe);
    size_t rss_before_tg = nc_current_rss_bytes();
    for (int r = 0; r < runs && st == NC_OK && n_tg > 0; r++) {
        engine_seq_truncate(m, s, 0);
        double t = nc_now_s(), c0 = nc_process_cpu_s();
        for (int i = 0; i < n_tg && st == NC_OK; i++)
            st = engine_forward(m, s, tokens + i, 1, logits, &err);
        tg.tok_per_s[r] = n_tg / (nc_now_s() - t);
        tg.wall_s += nc_now_s() - t;
        tg.cpu_s += nc_process_cpu_s() - c0;
        double round_bw = pr && wbytes ? cpu_membw_round(pr, pool, &probe) : 0.0;
        if (round_bw > 0) tg_frac[n_frac++] = tg.tok_per_s[r] * (double)wbytes / round_bw;
    }
    if (st != NC_OK) {
        cpu_membw_close(pr);
        nc_pool_free(pool);
        engine_seq_free(m, s);
        engine_close(m);
        free(logits);
        free(tokens);
        return cli_fail(&err);
    }
    if (n_pp > 0) summarize(&pp);
    if (n_tg > 0) summarize(&tg);
    size_t rss_after_tg = nc_current_rss_bytes();
    if (rss_before_tg && rss_after_tg > rss_before_tg) rss += rss_after_tg - rss_before_tg;
    engine_seq_free(m, s);
    free(logits);
    free(tokens);
    double bw = 0.0, peak = 0.0, core = 0.0, bw_cpu = 0.0, amx = 0.0;
    if (pool) {
        while (pr && probe.runs_n < 3)
            cpu_membw_round(pr, pool, &probe);
        bw = probe.best;
        bw_cpu = probe.per_cpu_s;
        peak = cpu_peak_fma_flops(pool, cpu_kernels_get(), 0.3, 3, &core);
        if (cpu_kernels_get()->amx) amx = cpu_peak_amx_flops(pool, 0.3, 3, NULL);
    }
    cpu_membw_close(pr);
    nc_pool_free(pool);
    /* tg against the probe round after each run: the median */
    double tg_frac_paired = 0.0;
    if (n_frac > 0) {
        qsort(tg_frac, (size_t)n_frac, sizeof tg_frac[0], cmp_double);
        tg_frac_paired =
            n_frac % 2 ? tg_frac[n_frac / 2] : (tg_frac[n_frac / 2 - 1] + tg_frac[n_frac / 2]) / 2;
    }
    draft_bench db;
    if (draft &&
        bench_draft(dir, draft, &eo, draft_max, n_tg > 0 ? n_tg : 128, runs, &db, &err) != NC_OK) {
        engine_close(m);
        return cli_fail(&err);
    }
    double roof = bw > 0 && wbytes ? bw / (double)wbytes : 0.0;
    nc_qwen3_shape shape = nc_decoder_shape_of(c);
    double pp_work = n_pp > 0 ? pp_flops(&shape, n_pp) : 0.0;
    double pp_gflops = n_pp > 0 ? pp_work / ((double)n_pp / pp.mean) / 1e9 : 0.0;
    /* per CPU-second: what the engine did while it had a core (shared machines) */
    double pp_gflop_cpu = n_pp > 0 && pp.cpu_s > 0 ? pp_work * runs / pp.cpu_s / 1e9 : 0;
    /* tg's weight bytes per CPU-second against the probe's: the bandwidth
     * roofline's fraction while the threads ran (shared machines) */
    double tg_bytes_cpu = n_tg > 0 && tg.cpu_s > 0 ? (double)wbytes * n_tg * runs / tg.cpu_s : 0;
    double tg_frac_cpu = bw_cpu > 0 ? tg_bytes_cpu / bw_cpu : 0.0;
    const char *dtype = m->weight_dtype ? m->weight_dtype : "?", *kern = cpu_kernels_get()->name;

    if (as_json) {
        printf("{\n  \"model\": \"%s\",\n  \"dtype\": \"%s\",\n  \"threads\": %d,\n"
               "  \"kernels\": \"%s\",\n  \"load_s\": %.4f,\n  \"first_token_s\": %.4f,\n"
               "  \"weights\": \"%s\",\n",
               dir, dtype, n_threads, kern, load_s, first_s,
               m->weights_residency ? m->weights_residency : "mmapped");
        if (n_pp > 0) print_series_json("pp", n_pp, &pp, n_threads);
        if (n_tg > 0) print_series_json("tg", n_tg, &tg, n_threads);
        printf("  \"pp_flops\": %.0f,\n", pp_work);
        if (n_frac > 0) printf("  \"tg_fraction_of_roofline_paired\": %.4f,\n", tg_frac_paired);
        printf("  \"peak_rss_bytes\": %zu,\n  \"weight_bytes_per_token\": %zu,\n"
               "  \"read_bandwidth_bytes_per_s\": %.0f,\n  \"tg_roofline_tok_per_s\": %.2f,\n"
               "  \"tg_fraction_of_roofline\": %.4f,\n  \"peak_fma_flops_per_s\": %.0f,\n"
               "  \"pp_flops_per_s\": %.0f,\n  \"pp_fraction_of_peak_fma\": %.4f,\n"
               "  \"peak_fma_flops_per_cpu_s\": %.0f,\n  \"pp_flops_per_cpu_s\": %.0f,\n"
               "  \"pp_fraction_of_peak_fma_per_cpu_s\": %.4f,\n  \"read_bytes_per_cpu_s\": %.0f,\n"
               "  \"tg_bytes_per_cpu_s\": %.0f,\n  \"tg_fraction_of_roofline_per_cpu_s\": %.4f,\n"
               "  \"peak_amx_bf16_flops_per_s\": %.0f,\n  \"read_bandwidth_pattern\": \"%s\",\n",
               rss, wbytes, bw, roof, n_tg > 0 && roof > 0 ? tg.mean / roof : 0.0, peak,
               pp_gflops * 1e9, peak > 0 ? pp_gflops * 1e9 / peak : 0.0, core, pp_gflop_cpu * 1e9,
               core > 0 ? pp_gflop_cpu * 1e9 / core : 0.0, bw_cpu, tg_bytes_cpu, tg_frac_cpu, amx,
               probe.pattern);
        if (draft) print_draft(&db, draft, draft_max, n_tg > 0 ? n_tg : 128, n_threads, 1);
        print_tuning_json(tuning);
        printf("}\n");
    } else {
        printf("model %s: %s, %d layers, hidden %d, vocab %d; %d threads, %s kernels, %s KV "
               "cache; %s engine\n",
               dir, dtype, c->layers, c->hidden, c->vocab, n_threads, kern,
               m->is_kv_f16 ? "fp16" : "fp32", m->kind);
        print_tuning(tuning);
        printf("| test   | tokens/s (mean +/- sd over %d runs) | CPU share of %d threads |\n"
               "|--------|------|------|\n",
               runs, n_threads);
        if (n_pp > 0)
            printf("| pp%-4d | %.2f +/- %.2f | %.0f%% |\n", n_pp, pp.mean, pp.sd,
                   100 * cpu_share(&pp, n_threads));
        if (n_tg > 0)
            printf("| tg%-4d | %.2f +/- %.2f | %.0f%% |\n", n_tg, tg.mean, tg.sd,
                   100 * cpu_share(&tg, n_threads));
        printf("load %.3f s (validation, weights %s), first token %.3f s, peak RSS %.1f MiB\n",
               load_s, m->weights_residency ? m->weights_residency : "mmapped", first_s,
               (double)rss / (1 << 20));
        if (wbytes) {
            printf("weights read per token %.3f GB; read bandwidth %.1f GB/s (the fastest of %d "
                   "patterns: %s) -> tg roofline %.1f tok/s",
                   (double)wbytes / 1e9, bw / 1e9, probe.n_patterns,
                   probe.pattern[0] ? probe.pattern : "?", roof);
            if (n_tg > 0 && roof > 0) printf(", tg reached %.0f%% of it", 100 * tg.mean / roof);
            if (n_frac > 0)
                printf(" (each run against the probe round right after it: median %.0f%%)",
                       100 * tg_frac_paired);
            printf("\n");
        }
        printf("peak fp32 FMA rate (%s, %d threads) %.1f GFLOP/s", kern, n_threads, peak / 1e9);
        if (n_pp > 0 && peak > 0)
            printf("; pp %.1f GFLOP/s = %.0f%% of it", pp_gflops, 100 * pp_gflops * 1e9 / peak);
        printf("\n");
        if (n_pp > 0 && amx > 0) /* the unit the prompt's products actually ran on */
            printf("prompt products on AMX tiles: peak bf16 tile rate %.1f GFLOP/s; pp = %.0f%% of "
                   "it (each product is 3-6 bf16 tile products for fp32 accuracy)\n",
                   amx / 1e9, 100 * pp_gflops * 1e9 / amx);
        if (n_pp > 0 && core > 0)
            printf("per CPU-second (what a core did while it ran): peak %.1f GFLOP, pp %.1f GFLOP "
                   "= %.0f%%\n",
                   core / 1e9, pp_gflop_cpu, 100 * pp_gflop_cpu * 1e9 / core);
        if (n_tg > 0 && bw_cpu > 0 && wbytes)
            printf("per CPU-second of a thread: read probe %.2f GB, tg weights %.2f GB = %.0f%%\n",
                   bw_cpu / 1e9, tg_bytes_cpu / 1e9, 100 * tg_frac_cpu);
        if (draft) print_draft(&db, draft, draft_max, n_tg > 0 ? n_tg : 128, n_threads, 0);
    }
    engine_close(m);
    return 0;
}
