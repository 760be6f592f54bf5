/* `nectar serve`: the OpenAI-compatible HTTP server (src/serve). Parses the
 * options, opens the engine, starts the server and runs until SIGINT,
 * SIGTERM or SIGHUP, then shuts down cleanly (every request ended, memory
 * freed). SIGHUP is a stop, not a reload: the terminal that started the
 * server closing must not leave requests cut off without their last events,
 * and there is no configuration to reload that a restart would not read. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli_model.h"
#include "commands.h"
#include "gen_cli.h"
#include "serve/serve_http.h"

/* Splits the -m folders into text generators and encoders (config.json's
 * model_type says which), each in the order given. */
static int split_models(const cli_command *cmd, const char **models, int n, int is_fake,
                        const char **gen, int *n_gen, const char **enc, int *n_enc) {
    *n_gen = *n_enc = 0;
    for (int i = 0; i < n; i++) {
        const char *kind = NULL;
        nc_error e = {0};
        int is_enc = !(is_fake && i == 0) && engine_kind_for("cpu", models[i], &kind, &e) == NC_OK &&
                     !strncmp(kind, "modernbert", 10);
        if (is_enc)
            enc[(*n_enc)++] = models[i];
        else if (*n_gen == SERVE_MAX_GENERATORS)
            return cli_usage_error(cmd, "-m %s: at most %d text generators per server", models[i],
                                   SERVE_MAX_GENERATORS);
        else
            gen[(*n_gen)++] = models[i];
    }
    return CLI_GO;
}

/* The startup line on stdout, with the real port, so scripts using --port 0
 * can find the server: every model, then the slots of each generator. */
static void print_start(const serve_options *o, gen_model *const *gm, int n_gen, int n_enc,
                        int port) {
    int is_v6 = strchr(o->host, ':') != NULL;
    printf("nectar serve: ");
    for (int i = 0; i < n_gen + n_enc; i++)
        printf("%s%s (%s)", i ? ", " : "",
               i < n_gen ? gm[i]->model_id : serve_encoders_name(o->encoders, i - n_gen),
               i < n_gen ? gm[i]->e->kind : "encoder");
    printf(" on http://%s%s%s:%d", is_v6 ? "[" : "", o->host, is_v6 ? "]" : "", port);
    if (n_gen) printf("  slots %d, ctx %d", o->n_parallel, o->ctx);
    double kv = 0;
    for (int i = 0; i < n_gen; i++)
        kv += (double)gm[i]->e->kv_bytes_per_token * o->ctx * o->n_parallel;
    if (kv > 0) printf(", KV cache %.0f MiB", kv / (1024.0 * 1024.0));
    printf("\n");
    fflush(stdout);
}

static void close_all(gen_model **gm, int n) {
    for (int i = 0; i < n; i++)
        gen_model_close(gm[i]);
}

int cmd_serve(int argc, char **argv) {
    const char *models[16];
    int n_models = 0;
    gen_cli_backend be = {0};
    gen_cli_draft draft;
    gen_cli_draft_defaults(&draft);
    serve_options o = {0};
    o.host = "127.0.0.1";
    o.port = 8080;
    o.n_parallel = 4;
    o.ctx = 4096;
    o.queue_max = 64;
    o.max_body_bytes = 8u << 20;
    o.timeout_s = 600;
    int is_fake = 0, fake_step_ms = 0, threads = 0, verbose = 0;
    const char *special_mode = "refuse";
    int64_t max_body = (int64_t)o.max_body_bytes;
    const char *aliases[16];
    int n_aliases = 0;
    o.aliases = aliases;
    const cli_opt opts[] = {
        CLI_OPT("-m", "--model", CLI_STRINGS, "DIR",
                "Hugging Face model folder, or an ANE bundle with --backend mil|ane;\n"
                "repeat it to host several: text generators (up to 8, each with its\n"
                "own slots) and encoders (/v1/embeddings, /v1/rerank); 16 in all",
                models, .count = &n_models, .cap = 16, .required = 1),
        CLI_OPT(NULL, "--host", CLI_STRING, "ADDR",
                "numeric address (or localhost) to listen on (default 127.0.0.1)", &o.host),
        CLI_OPT(NULL, "--port", CLI_INT, "N", "port (default 8080; 0 picks a free one)", &o.port,
                .min = 0, .max = 65535),
        CLI_OPT(NULL, "--api-key", CLI_STRING, "KEY",
                "require 'Authorization: Bearer KEY' on /v1/* and /metrics\n"
                "(default: $NECTAR_API_KEY when set)",
                &o.api_key),
        CLI_OPT("-np", "--parallel", CLI_INT, "N", "slots decoded together (default 4)",
                &o.n_parallel, .min = 1, .max = 256),
        CLI_OPT("-c", "--ctx", CLI_INT, "N", "tokens per slot: prompt + output (default 4096)",
                &o.ctx, .min = 2, .max = 1 << 20),
        CLI_OPT(NULL, "--queue", CLI_INT, "N",
                "requests waiting beyond the slots before 429 (default 64)", &o.queue_max, .min = 0,
                .max = 100000),
        CLI_OPT(NULL, "--max-body", CLI_INT64, "BYTES", "largest request body (default 8388608)",
                &max_body, .min = 64, .max = 1LL << 30),
        CLI_OPT(NULL, "--timeout", CLI_INT, "S",
                "idle connection, body upload and queue wait limit (default 600)", &o.timeout_s,
                .min = 1, .max = 86400),
        CLI_OPT(NULL, "--alias", CLI_STRINGS, "NAME",
                "another model name to list and accept (repeatable, up to 16)", aliases,
                .count = &n_aliases, .cap = 16),
        CLI_OPT(NULL, "--max-connections", CLI_INT, "N",
                "open connections; beyond them a 503 (default 512)", &o.max_connections, .min = 1,
                .max = 65536),
        CLI_OPT(NULL, "--max-conn-per-ip", CLI_INT, "N",
                "open connections per client address (default: half the above)", &o.max_per_ip,
                .min = 1, .max = 65536),
        CLI_OPT(NULL, "--header-timeout", CLI_DOUBLE, "S",
                "time for a request's head to arrive (default 10)", &o.header_timeout_s, .lo = 1,
                .hi = 3600),
        CLI_OPT(NULL, "--chat-template", CLI_STRING, "NAME",
                "qwen3 or qwen3.5: the chat template and tool-call format\n"
                "(default: the model family's)",
                &o.chat_template),
        CLI_OPT(NULL, "--special-in-content", CLI_STRING, "MODE",
                "special-token text (<|im_end|>) in a chat message: refuse (default,\n"
                "400: it would forge turns) or parse (the token itself, as HF)",
                &special_mode),
        CLI_OPT(NULL, "--context-shift", CLI_FLAG, NULL,
                "a chat that outgrows the context drops its oldest turns (the system\n"
                "prompt kept; header X-Context-Shift) instead of a 400; a request's\n"
                "\"context_shift\": true/false decides for itself",
                &o.context_shift),
        GEN_CLI_BACKEND_OPTS(&be),
        GEN_CLI_KV_OPT(&be),
        GEN_CLI_DRAFT_OPTS(&draft),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "CPU threads for the engine (default: all cores)",
                &threads, .min = 0, .max = 1024),
        CLI_OPT("-v", "--verbose", CLI_FLAG, NULL, "log each request", &verbose),
        CLI_OPT(NULL, "--fake-engine", CLI_FLAG, NULL,
                "tests: -m names a tokenizer + fake_script.txt folder, recited by a\n"
                "deterministic stand-in model (src/engine/engine_script.c)",
                &is_fake, .hidden = 1),
        CLI_OPT(NULL, "--fake-step-ms", CLI_INT, "MS", "tests: the fake engine's time per step",
                &fake_step_ms, .min = 0, .max = 10000, .hidden = 1),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "serve",
        .usage = "-m DIR [options]",
        .about = "OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions,\n"
                 "/v1/embeddings, /v1/rerank, /v1/models, /health, /metrics and a chat\n"
                 "page at /.\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    const char *backend = gen_cli_backend_name(&be);
    o.max_body_bytes = (size_t)max_body;
    for (int i = 0; i < n_aliases; i++)
        if (!*aliases[i]) return cli_usage_error(&cmd, "--alias: the name is empty");
    if (strcmp(special_mode, "refuse") != 0 && strcmp(special_mode, "parse") != 0)
        return cli_usage_error(&cmd, "--special-in-content %s: must be refuse or parse",
                               special_mode);
    o.parse_special_in_content = !strcmp(special_mode, "parse");
    if (verbose) nc_log_set_level(NC_LOG_DEBUG);
    if (!strcmp(o.host, "localhost")) o.host = "127.0.0.1";
    /* `--api-key "$KEY"` with KEY unset must not open the server: an empty
     * key would match an empty Bearer and turn the Host/Origin guard off. */
    if (o.api_key && !*o.api_key)
        return cli_usage_error(&cmd, "--api-key: the key is empty; give a key, or leave the "
                                     "option out to serve loopback only without one");
    const char *env_key = getenv("NECTAR_API_KEY"); /* keeps the key out of `ps` */
    if (!o.api_key && env_key && *env_key) o.api_key = env_key;
    if (!o.api_key && strcmp(o.host, "127.0.0.1") != 0 && strcmp(o.host, "::1") != 0)
        fprintf(stderr,
                "nectar serve: warning: listening on %s without --api-key: anyone who can "
                "reach it can use the model\n",
                o.host);
    nc_error err = {0};
    engine_options eo;
    if (gen_cli_engine(&be, threads, 0, &eo, &err) != NC_OK)
        return cli_usage_error(&cmd, "%s", err.msg);
    eo.fake_step_ms = fake_step_ms;
    const char *gens[16], *encoders[16];
    int n_gen = 0, n_enc = 0;
    rc = split_models(&cmd, models, n_models, is_fake, gens, &n_gen, encoders, &n_enc);
    if (rc != CLI_GO) return rc;
    if (n_gen && gen_cli_tune_decoder_kernels(&be, threads, &err) != NC_OK) return cli_fail(&err);
    o.model_path = n_gen ? gens[0] : NULL;
    o.n_aliases = n_aliases;

    /* SIGINT/SIGTERM/SIGHUP are blocked in every thread (the engine's pool,
     * the scheduler and the HTTP threads inherit the mask) and taken by
     * sigwait in this one, so shutdown always starts here. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN); /* a vanished client must not kill the server */

    gen_model *gm[SERVE_MAX_GENERATORS] = {0};
    nc_status st = NC_OK;
    for (int i = 0; st == NC_OK && i < n_gen; i++) {
        st = gen_model_open(is_fake && i == 0 ? "script" : backend, gens[i], &eo, &gm[i], &err);
        /* a model given as ORG/NAME goes by that name, not its snapshot's */
        if (st == NC_OK && cli_model_name(gens[i]))
            snprintf(gm[i]->model_id, sizeof gm[i]->model_id, "%s", cli_model_name(gens[i]));
        if (st == NC_OK && o.ctx > gm[i]->e->ctx_max) o.ctx = gm[i]->e->ctx_max;
    }
    /* --draft speculates for the first text generator */
    if (st == NC_OK && n_gen) st = gen_cli_draft_attach(&draft, gm[0], &eo, &err);
    const char *names[16];
    for (int i = 0; i < n_enc; i++)
        names[i] = cli_model_name(encoders[i]);
    if (st == NC_OK && n_enc)
        st = serve_encoders_open(encoders, names, n_enc, threads, &o.encoders, &err);
    o.more_models = gm + 1;
    o.more_paths = gens + 1;
    o.n_more_models = n_gen > 1 ? n_gen - 1 : 0;
    serve_server *srv = NULL;
    if (st == NC_OK) st = serve_server_start(gm[0], &o, &srv, &err);
    if (st != NC_OK) {
        close_all(gm, n_gen);
        serve_encoders_free(o.encoders);
        return cli_fail(&err);
    }
    print_start(&o, gm, n_gen, n_enc, serve_server_port(srv));
    int sig = 0;
    sigwait(&stop_signals, &sig);
    fprintf(stderr, "nectar serve: %s: shutting down\n",
            sig == SIGHUP ? "SIGHUP" : sig == SIGINT ? "SIGINT" : "SIGTERM");
    serve_server_stop(srv);
    close_all(gm, n_gen);
    serve_encoders_free(o.encoders);
    return 0;
}
