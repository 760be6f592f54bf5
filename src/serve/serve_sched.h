/* The scheduler: N slots decoded together by one thread, one engine step
 * per generated token (continuous batching: a request joins at the next
 * step after a slot frees up and leaves as soon as it finishes). Requests
 * beyond the slots wait in a bounded FIFO queue. Each slot keeps its KV
 * cache after a request ends, and a new request goes to the free slot whose
 * cache shares the longest prefix with its prompt. Sampling, detokenizing,
 * stop strings, the reasoning split and limits are src/gen's pipeline. */
#ifndef NC_SERVE_SCHED_H
#define NC_SERVE_SCHED_H

#include "gen/generate.h"
#include "serve/serve_job.h"
#include "serve/serve_metrics.h"

typedef struct serve_sched serve_sched;

typedef struct serve_sched_options {
    int n_slots;                 /* --parallel */
    int ctx;                     /* tokens per slot */
    int queue_max;               /* waiting requests beyond the slots */
    gen_sampler_params defaults; /* the model folder's (gen_sampling_from_folder) */
} serve_sched_options;

/* Each slot is a gen_seq on m (the per-sequence pipeline of src/gen); a
 * request's sampling fields override opt->defaults. */
nc_status serve_sched_new(gen_model *m, const serve_sched_options *opt, serve_metrics *metrics,
                          serve_sched **out, nc_error *err);
/* Stops the thread; jobs still queued or running finish with an error.
 * Submitting fails afterwards, cancelling is still allowed (idempotent). */
void serve_sched_stop(serve_sched *s);
/* Stops (if needed) and frees. */
void serve_sched_free(serve_sched *s);

/* The context of a slot (prompt + generated tokens must fit). */
int serve_sched_ctx(const serve_sched *s);

/* Queues a prepared job (prompt, max_tokens, sampling in job->req). Takes
 * its own reference. NC_ERR_RANGE when the queue is full. */
nc_status serve_sched_submit(serve_sched *s, serve_job *j, nc_error *err);

/* Cancels a job: a queued one leaves the queue now, a running one at the
 * scheduler's next step. */
void serve_sched_cancel(serve_sched *s, serve_job *j);

#endif
