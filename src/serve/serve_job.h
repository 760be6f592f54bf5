/* One request's life between an HTTP connection thread and the scheduler
 * thread. The scheduler appends output (reasoning, content, logprobs) under
 * the job's mutex and signals; the connection reads what is new since its
 * last look, so streaming and non-streaming share one mechanism. Reference
 * counted: the connection and the scheduler each hold one reference. */
#ifndef NC_SERVE_JOB_H
#define NC_SERVE_JOB_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "gen/out_constraint.h"
#include "serve/serve_request.h"

typedef struct serve_text {
    char *p;
    size_t len, cap;
} serve_text;

/* Appends; returns 0, or -1 when out of memory. */
int serve_text_append(serve_text *t, const char *s, size_t n);

typedef enum { SERVE_JOB_QUEUED, SERVE_JOB_RUNNING, SERVE_JOB_DONE } serve_job_state;

typedef struct serve_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;

    /* Inputs, fixed before the job is submitted. */
    serve_request req;
    int32_t *prompt;
    int n_prompt;
    int max_tokens;               /* resolved: never past the slot's context */
    int split_reasoning;          /* chat: route <think>...</think> to reasoning */
    int starts_in_reasoning;      /* the prompt already opened <think> */
    gen_out_constraint *constraint; /* owned: constrained output, or NULL */
    int n_shifted;                  /* chat: oldest messages dropped to fit (context shift) */

    /* Progress, under mu. */
    serve_job_state state;
    int is_cancelled; /* set by the connection (client gone, timeout) */
    unsigned version; /* bumped on every change, for waiters */
    serve_text reasoning, content;
    json_t *logprobs; /* array of {token, logprob, bytes, top_logprobs} */
    int n_generated, n_cached;
    const char *finish_reason; /* "stop", "length"; NULL until done */
    nc_status status;          /* != NC_OK: the engine failed mid-way */
    char error[512];
    double t_submit, t_start, t_first_token, t_done;
} serve_job;

/* A job with one reference, taking ownership of *req (zeroed). */
serve_job *serve_job_new(serve_request *req);
void serve_job_retain(serve_job *j);
void serve_job_release(serve_job *j);

/* Marks the job cancelled and wakes its waiters (the scheduler notices at
 * its next step). */
void serve_job_cancel(serve_job *j);

#endif
