/* `nectar serve`: the OpenAI-compatible HTTP server (src/serve). Parses the
 * options, opens the engine, starts the server and runs until SIGINT or
 * SIGTERM, then shuts down cleanly (every request ended, memory freed). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli_env.h"
#include "commands.h"
#include "gen_cli.h"
#include "serve/serve_http.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: nectar serve -m DIR [options]\n\n"
        "OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions,\n"
        "/v1/models, /health, /metrics and a chat page at /.\n\n"
        "  -m, --model DIR       Hugging Face model folder (Qwen3)\n"
        "  --host ADDR           numeric address (or localhost) to listen on (default 127.0.0.1)\n"
        "  --port N              port (default 8080; 0 picks a free one)\n"
        "  --api-key KEY         require 'Authorization: Bearer KEY' on /v1/* and /metrics\n"
        "                        (default: $NECTAR_API_KEY when set)\n"
        "  --parallel N          slots decoded together (default 4)\n"
        "  --ctx N               tokens per slot: prompt + output (default 4096)\n"
        "  --queue N             requests waiting beyond the slots before 429 (default 64)\n"
        "  --max-body BYTES      largest request body (default 8388608)\n"
        "  --timeout S           idle connection, body upload and queue wait limit (default 600)\n"
        "  --alias NAME          another model name to list and accept (repeatable)\n"
        "  --max-connections N   open connections; beyond them a 503 (default 512)\n"
        "  --max-conn-per-ip N   open connections per client address (default: half the above)\n"
        "  --header-timeout S    time for a request's head to arrive (default 10)\n"
        "  --backend cpu|mil|ane cpu (default); mil or ane: -m names an ANE bundle (nectar\n"
        "                        compile) run by the MIL interpreter or the Neural Engine,\n"
        "                        slot after slot\n"
        "  --ane-device fake|real  with --backend ane: real (default; macOS) or fake (the\n"
        "                        ANE request path on the MIL interpreter; any OS); default\n"
        "                        from $NECTAR_ANE_DEVICE\n"
        "  -t, --threads N       CPU threads for the engine (default: all cores)\n"
        "  -v, --verbose         log each request\n");
}

/* Strict integer option value in [lo, hi]. */
static int parse_int(const char *opt, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi) {
        cli_failf("serve: %s '%s': expected an integer between %ld and %ld", opt, v, lo, hi);
        return -1;
    }
    *out = n;
    return 0;
}

int cmd_serve(int argc, char **argv) {
    const char *model = NULL, *backend = "cpu", *ane_device = NULL;
    serve_options o = {0};
    o.host = "127.0.0.1";
    o.port = 8080;
    o.n_parallel = 4;
    o.ctx = 4096;
    o.queue_max = 64;
    o.max_body_bytes = 8u << 20;
    o.timeout_s = 600;
    int is_fake = 0;
    long fake_step_ms = 0, threads = 0;
    /* Names and connection limits (issue 17). */
    const char *aliases[16];
    int n_aliases = 0;
    o.aliases = aliases;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            nc_log_set_level(NC_LOG_DEBUG);
            continue;
        }
        /* Hidden, for tests: a deterministic fake model (src/engine/engine_script.c). */
        if (!strcmp(a, "--fake-engine")) {
            is_fake = 1;
            continue;
        }
        if (i + 1 >= argc) return cli_failf("serve: unknown option or missing value: '%s'", a), 2;
        const char *v = argv[++i];
        long n = 0;
        int bad = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--host"))
            o.host = v;
        else if (!strcmp(a, "--api-key"))
            o.api_key = v;
        else if (!strcmp(a, "--backend"))
            backend = v;
        else if (!strcmp(a, "--ane-device"))
            ane_device = v;
        else if (!strcmp(a, "--port"))
            bad = parse_int(a, v, 0, 65535, &n) || ((o.port = (int)n), 0);
        else if (!strcmp(a, "--parallel") || !strcmp(a, "-np"))
            bad = parse_int(a, v, 1, 256, &n) || ((o.n_parallel = (int)n), 0);
        else if (!strcmp(a, "--ctx") || !strcmp(a, "-c"))
            bad = parse_int(a, v, 2, 1 << 20, &n) || ((o.ctx = (int)n), 0);
        else if (!strcmp(a, "--queue"))
            bad = parse_int(a, v, 0, 100000, &n) || ((o.queue_max = (int)n), 0);
        else if (!strcmp(a, "--max-body"))
            bad = parse_int(a, v, 64, 1L << 30, &n) || ((o.max_body_bytes = (size_t)n), 0);
        else if (!strcmp(a, "--timeout"))
            bad = parse_int(a, v, 1, 86400, &n) || ((o.timeout_s = (int)n), 0);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads"))
            bad = parse_int(a, v, 0, 1024, &threads);
        else if (!strcmp(a, "--fake-step-ms"))
            bad = parse_int(a, v, 0, 10000, &fake_step_ms);
        /* -- names and connection limits -- */
        else if (!strcmp(a, "--alias") && n_aliases < 16 && *v)
            aliases[n_aliases++] = v;
        else if (!strcmp(a, "--alias"))
            return cli_failf("serve: --alias '%s': empty, or more than 16 aliases", v), 2;
        else if (!strcmp(a, "--max-connections"))
            bad = parse_int(a, v, 1, 65536, &n) || ((o.max_connections = (int)n), 0);
        else if (!strcmp(a, "--max-conn-per-ip"))
            bad = parse_int(a, v, 1, 65536, &n) || ((o.max_per_ip = (int)n), 0);
        else if (!strcmp(a, "--header-timeout"))
            bad = parse_int(a, v, 1, 3600, &n) || ((o.header_timeout_s = (double)n), 0);
        else
            return cli_failf("serve: unknown option '%s' (try nectar serve --help)", a), 2;
        if (bad) return 2;
    }
    if (!model) return cli_failf("serve: no model given (-m DIR)"), 2;
    if (!strcmp(o.host, "localhost")) o.host = "127.0.0.1";
    const char *env_key = getenv("NECTAR_API_KEY"); /* keeps the key out of `ps` */
    if (!o.api_key && env_key && *env_key) o.api_key = env_key;
    if (!o.api_key && strcmp(o.host, "127.0.0.1") != 0 && strcmp(o.host, "::1") != 0)
        fprintf(stderr,
                "nectar serve: warning: listening on %s without --api-key: anyone who can "
                "reach it can use the model\n",
                o.host);
    nc_error err = {0};
    engine_options eo = {0};
    eo.n_threads = (int)threads;
    eo.fake_step_ms = (int)fake_step_ms;
    eo.kv = cli_env_get()->kv_f16 ? ENGINE_KV_F16 : ENGINE_KV_DEFAULT; /* NECTAR_KV */
    if (gen_cli_ane_device(ane_device, backend, &eo.ane_device, &err) != NC_OK)
        return cli_fail(&err), 2;
    o.model_path = model;
    o.n_aliases = n_aliases;

    /* SIGINT/SIGTERM are blocked in every thread (the engine's pool, the
     * scheduler and the HTTP threads inherit the mask) and taken by sigwait
     * in this one, so shutdown always starts here. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN); /* a vanished client must not kill the server */

    gen_model *m = NULL;
    nc_status st = gen_model_open(is_fake ? "script" : backend, model, &eo, &m, &err);
    if (st != NC_OK) return cli_fail(&err);
    if (o.ctx > m->e->ctx_max) o.ctx = m->e->ctx_max;

    serve_server *srv;
    st = serve_server_start(m, &o, &srv, &err);
    if (st != NC_OK) {
        gen_model_close(m);
        return cli_fail(&err);
    }
    /* One line on stdout with the real port, so scripts using --port 0 can
     * find the server. */
    int is_v6 = strchr(o.host, ':') != NULL;
    printf("nectar serve: %s (%s) on http://%s%s%s:%d  slots %d, ctx %d", m->model_id, m->e->kind,
           is_v6 ? "[" : "", o.host, is_v6 ? "]" : "", serve_server_port(srv), o.n_parallel, o.ctx);
    if (m->e->kv_bytes_per_token)
        printf(", KV cache %.0f MiB",
               (double)m->e->kv_bytes_per_token * o.ctx * o.n_parallel / (1024.0 * 1024.0));
    printf("\n");
    fflush(stdout);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    fprintf(stderr, "nectar serve: shutting down\n");
    serve_server_stop(srv);
    gen_model_close(m);
    return 0;
}
