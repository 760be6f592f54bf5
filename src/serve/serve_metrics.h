/* Server counters for GET /metrics in the Prometheus text format: requests
 * by endpoint and status, tokens, latency histograms (request duration,
 * time to first token), queue depth and busy slots. Thread-safe. */
#ifndef NC_SERVE_METRICS_H
#define NC_SERVE_METRICS_H

#include <pthread.h>
#include <stdint.h>

#define SERVE_HIST_BUCKETS 12
#define SERVE_METRICS_MAX_MODELS 8

typedef struct serve_hist {
    uint64_t counts[SERVE_HIST_BUCKETS + 1]; /* last: +Inf */
    double sum;
    uint64_t n;
} serve_hist;

typedef enum {
    SERVE_ROUTE_CHAT,
    SERVE_ROUTE_COMPLETIONS,
    SERVE_ROUTE_MODELS,
    SERVE_ROUTE_HEALTH,
    SERVE_ROUTE_METRICS,
    SERVE_ROUTE_PAGE,
    SERVE_ROUTE_OTHER,
    SERVE_ROUTE_CONNECTION, /* answered by the gate before any route (limits, bad heads) */
    SERVE_ROUTE_EMBEDDINGS,
    SERVE_ROUTE_RERANK,
    SERVE_ROUTE_COUNT
} serve_route;

#define SERVE_STATUS_KINDS 20 /* distinct status codes tracked */

typedef struct serve_metrics {
    pthread_mutex_t mu;
    uint64_t requests[SERVE_ROUTE_COUNT][SERVE_STATUS_KINDS];
    uint64_t prompt_tokens, cached_tokens, generated_tokens;
    uint64_t decode_steps, step_sequences; /* sum of batch sizes */
    uint64_t cancelled;
    uint64_t drafted, draft_accepted; /* speculative decoding (--draft) */
    serve_hist request_s, ttft_s;
    int queue_depth, slots_busy, slots_total;
    /* Where each served model's kernels run (engine_placement), set once at start. */
    int n_placements;
    char placement_model[SERVE_METRICS_MAX_MODELS][256];
    char placement[SERVE_METRICS_MAX_MODELS][1280];
} serve_metrics;

int serve_metrics_init(serve_metrics *m, int slots_total);
void serve_metrics_destroy(serve_metrics *m);

void serve_metrics_request(serve_metrics *m, serve_route route, int http_status, double seconds);
void serve_metrics_tokens(serve_metrics *m, int prompt, int cached, int generated);
void serve_metrics_ttft(serve_metrics *m, double seconds);
void serve_metrics_step(serve_metrics *m, int n_sequences);
void serve_metrics_gauges(serve_metrics *m, int queue_depth, int slots_busy);
void serve_metrics_cancelled(serve_metrics *m);
/* Model `model`'s placement line, exposed as nectar_model_placement{model,
 * placement} 1 (beyond SERVE_METRICS_MAX_MODELS: left out). */
void serve_metrics_placement(serve_metrics *m, const char *model, const char *placement);

void serve_metrics_draft(serve_metrics *m, int drafted, int accepted);

/* The exposition text (malloc'ed), or NULL when out of memory. */
char *serve_metrics_render(serve_metrics *m);

#endif
