/* Prometheus exposition of the server counters (text format 0.0.4). */
#include "serve/serve_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_job.h"

/* Latency bucket bounds in seconds: from a fast first token to a long
 * generation. */
static const double bucket_s[SERVE_HIST_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                    0.5,   1,    2.5,   5,    10,  30};
static const char *const route_names[SERVE_ROUTE_COUNT] = {
    "chat_completions", "completions", "models", "health",
    "metrics",          "page",        "other",  "connection", "embeddings", "rerank"};
/* 499: the client went away before its answer (nginx's code). The last
 * entry also counts any status not listed. */
static const int status_codes[SERVE_STATUS_KINDS] = {200, 204, 400, 401, 403, 404, 405,
                                                     408, 411, 413, 414, 429, 431, 499,
                                                     500, 503, 504, 505, 501, 0};

int serve_metrics_init(serve_metrics *m, int slots_total) {
    memset(m, 0, sizeof *m);
    m->slots_total = slots_total;
    return pthread_mutex_init(&m->mu, NULL) == 0 ? 0 : -1;
}

void serve_metrics_destroy(serve_metrics *m) {
    pthread_mutex_destroy(&m->mu);
}

void serve_metrics_placement(serve_metrics *m, const char *model, const char *placement) {
    pthread_mutex_lock(&m->mu);
    if (m->n_placements < SERVE_METRICS_MAX_MODELS) {
        int i = m->n_placements++;
        snprintf(m->placement_model[i], sizeof m->placement_model[i], "%s", model);
        snprintf(m->placement[i], sizeof m->placement[i], "%s", placement);
    }
    pthread_mutex_unlock(&m->mu);
}

static void hist_add(serve_hist *h, double v) {
    int b = 0;
    while (b < SERVE_HIST_BUCKETS && v > bucket_s[b])
        b++;
    h->counts[b]++;
    h->sum += v;
    h->n++;
}

void serve_metrics_request(serve_metrics *m, serve_route route, int http_status, double seconds) {
    int k = SERVE_STATUS_KINDS - 1;
    for (int i = 0; i < SERVE_STATUS_KINDS - 1; i++)
        if (status_codes[i] == http_status) k = i;
    if (route < 0 || route >= SERVE_ROUTE_COUNT) route = SERVE_ROUTE_OTHER;
    pthread_mutex_lock(&m->mu);
    m->requests[route][k]++;
    if (route == SERVE_ROUTE_CHAT || route == SERVE_ROUTE_COMPLETIONS)
        hist_add(&m->request_s, seconds);
    pthread_mutex_unlock(&m->mu);
}

void serve_metrics_tokens(serve_metrics *m, int prompt, int cached, int generated) {
    pthread_mutex_lock(&m->mu);
    m->prompt_tokens += (uint64_t)prompt;
    m->cached_tokens += (uint64_t)cached;
    m->generated_tokens += (uint64_t)generated;
    pthread_mutex_unlock(&m->mu);
}

void serve_metrics_draft(serve_metrics *m, int drafted, int accepted) {
    pthread_mutex_lock(&m->mu);
    m->drafted += (uint64_t)drafted;
    m->draft_accepted += (uint64_t)accepted;
    pthread_mutex_unlock(&m->mu);
}

void serve_metrics_ttft(serve_metrics *m, double seconds) {
    pthread_mutex_lock(&m->mu);
    hist_add(&m->ttft_s, seconds);
    pthread_mutex_unlock(&m->mu);
}

void serve_metrics_step(serve_metrics *m, int n_sequences) {
    pthread_mutex_lock(&m->mu);
    m->decode_steps++;
    m->step_sequences += (uint64_t)n_sequences;
    pthread_mutex_unlock(&m->mu);
}

void serve_metrics_gauges(serve_metrics *m, int queue_depth, int slots_busy) {
    pthread_mutex_lock(&m->mu);
    m->queue_depth = queue_depth;
    m->slots_busy = slots_busy;
    pthread_mutex_unlock(&m->mu);
}

void serve_metrics_cancelled(serve_metrics *m) {
    pthread_mutex_lock(&m->mu);
    m->cancelled++;
    pthread_mutex_unlock(&m->mu);
}

static void put(serve_text *t, int *oom, const char *fmt, ...) {
    char line[4096]; /* the placement label is long */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    if (serve_text_append(t, line, (size_t)n) != 0) *oom = 1;
}

static void put_hist(serve_text *t, int *oom, const char *name, const char *help,
                     const serve_hist *h) {
    put(t, oom, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int b = 0; b < SERVE_HIST_BUCKETS; b++) {
        cum += h->counts[b];
        put(t, oom, "%s_bucket{le=\"%g\"} %llu\n", name, bucket_s[b], (unsigned long long)cum);
    }
    cum += h->counts[SERVE_HIST_BUCKETS];
    put(t, oom, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    put(t, oom, "%s_sum %.6f\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->n);
}

/* A Prometheus label value: backslash, double quote and newline escaped. */
static void label_escape(const char *s, char *out, size_t cap) {
    size_t n = 0;
    for (; *s && n + 3 < cap; s++) {
        if (*s == '\\' || *s == '"' || *s == '\n') out[n++] = '\\';
        out[n++] = *s == '\n' ? 'n' : *s;
    }
    out[n] = '\0';
}

static void put_counter(serve_text *t, int *oom, const char *name, const char *help,
                        const char *type, unsigned long long v) {
    put(t, oom, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

char *serve_metrics_render(serve_metrics *m) {
    serve_text t = {0};
    int oom = 0;
    pthread_mutex_lock(&m->mu);
    serve_metrics c = *m; /* a consistent snapshot; the mutex copy is not used */
    pthread_mutex_unlock(&m->mu);
    put(&t, &oom,
        "# HELP nectar_requests_total HTTP requests by endpoint and status code.\n"
        "# TYPE nectar_requests_total counter\n");
    for (int r = 0; r < SERVE_ROUTE_COUNT; r++)
        for (int k = 0; k < SERVE_STATUS_KINDS; k++)
            if (c.requests[r][k]) {
                char code[16];
                snprintf(code, sizeof code, status_codes[k] ? "%d" : "other", status_codes[k]);
                put(&t, &oom, "nectar_requests_total{endpoint=\"%s\",code=\"%s\"} %llu\n",
                    route_names[r], code, (unsigned long long)c.requests[r][k]);
            }
    put_counter(&t, &oom, "nectar_prompt_tokens_total", "Prompt tokens received.", "counter",
                c.prompt_tokens);
    put_counter(&t, &oom, "nectar_prompt_tokens_cached_total",
                "Prompt tokens served from a slot's KV cache (prefix reuse).", "counter",
                c.cached_tokens);
    put_counter(&t, &oom, "nectar_generated_tokens_total", "Tokens generated.", "counter",
                c.generated_tokens);
    put_counter(&t, &oom, "nectar_decode_steps_total", "Batched engine steps.", "counter",
                c.decode_steps);
    put_counter(&t, &oom, "nectar_step_sequences_total",
                "Sequences summed over steps (divide by steps for the mean batch).", "counter",
                c.step_sequences);
    put_counter(&t, &oom, "nectar_draft_tokens_total",
                "Tokens the draft proposed (speculative decoding, --draft).", "counter", c.drafted);
    put_counter(&t, &oom, "nectar_draft_tokens_accepted_total",
                "Of those, the ones the model kept.", "counter", c.draft_accepted);
    put_counter(&t, &oom, "nectar_requests_cancelled_total",
                "Generations stopped early (client gone or timed out).", "counter", c.cancelled);
    put_hist(&t, &oom, "nectar_request_duration_seconds",
             "Completion request time from arrival to the last byte.", &c.request_s);
    put_hist(&t, &oom, "nectar_time_to_first_token_seconds",
             "From arrival to the first generated token.", &c.ttft_s);
    put_counter(&t, &oom, "nectar_queue_depth", "Requests waiting for a slot.", "gauge",
                (unsigned long long)c.queue_depth);
    put_counter(&t, &oom, "nectar_slots_busy", "Slots generating now.", "gauge",
                (unsigned long long)c.slots_busy);
    put_counter(&t, &oom, "nectar_slots_total", "Slots (--parallel).", "gauge",
                (unsigned long long)c.slots_total);
    if (c.n_placements)
        put(&t, &oom,
            "# HELP nectar_model_placement Where each model's kernels run (the line run "
            "prints), as a label.\n# TYPE nectar_model_placement gauge\n");
    for (int i = 0; i < c.n_placements; i++) {
        char model[600], where[3000];
        label_escape(c.placement_model[i], model, sizeof model);
        label_escape(c.placement[i], where, sizeof where);
        put(&t, &oom, "nectar_model_placement{model=\"%s\",placement=\"%s\"} 1\n", model, where);
    }
    if (oom) {
        free(t.p);
        return NULL;
    }
    return t.p;
}
