/* The scheduler thread. Each loop: admit queued jobs into free slots, drop
 * cancelled ones, ask each busy slot's gen_seq (src/gen's per-sequence
 * pipeline) for its item -- a prompt chunk, or its last sampled token --,
 * run one engine step over all of them, and hand each item back; the
 * pipeline samples, detokenizes, splits reasoning and matches stop strings,
 * and its callbacks publish text and logprobs to the job. Slot state is
 * touched only by this thread; the queue and the busy count are shared
 * under s->mu. */
#include "serve/serve_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timer.h"
#include "gen/logprobs.h"
#include "gen/sampling_params.h"
#include "text/utf8.h"

/* Prompt tokens one slot feeds per step, so a long prompt does not stall
 * the other slots' decoding for its whole prefill. */
#define SERVE_PREFILL_CHUNK 512

typedef struct serve_slot {
    struct serve_sched *s;
    gen_seq *gs; /* its engine sequence, cache mirror and per-token pipeline */
    double last_used_s;
    serve_job *job; /* NULL: free */
    int n_gen;      /* tokens published (end-of-sequence not counted) */
} serve_slot;

struct serve_sched {
    gen_model *m;
    serve_metrics *metrics;
    gen_sampler_params defaults;
    int n_slots, ctx, queue_max;
    serve_slot *slots;
    engine_step_item *items;
    int *item_slot;
    uint64_t seed_counter;

    pthread_t thread;
    int has_thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int is_stopping;
    serve_job **queue; /* ring buffer */
    int q_head, q_len, q_cap;
    int n_busy;
};

int serve_sched_ctx(const serve_sched *s) {
    return s->ctx;
}

/* ---- publishing to the job ---------------------------------------------- */

static void job_append(serve_job *j, serve_text *which, const char *p, size_t n) {
    if (n == 0) return;
    pthread_mutex_lock(&j->mu);
    if (serve_text_append(which, p, n) != 0 && j->status == NC_OK) {
        j->status = NC_ERR_NOMEM;
        snprintf(j->error, sizeof j->error, "server: out of memory for the output");
    }
    j->version++;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* The pipeline's text, to the job's reasoning or content. */
static int on_text(void *user, gen_text_kind kind, const char *text, size_t len) {
    serve_slot *sl = user;
    serve_job *j = sl->job;
    job_append(j, kind == GEN_TEXT_REASONING ? &j->reasoning : &j->content, text, len);
    return 0;
}

static const char *finish_reason(gen_finish f) {
    switch (f) {
    case GEN_FINISH_LENGTH:
    case GEN_FINISH_CONTEXT:
        return "length";
    case GEN_FINISH_CANCEL:
        return "cancelled";
    default:
        return "stop";
    }
}

static void finish_job(serve_sched *s, serve_slot *sl, const char *reason, nc_status st,
                       const char *msg) {
    serve_job *j = sl->job;
    pthread_mutex_lock(&j->mu);
    j->finish_reason = reason;
    if (st != NC_OK && j->status == NC_OK) {
        j->status = st;
        snprintf(j->error, sizeof j->error, "%s", msg ? msg : "engine failure");
    }
    j->n_generated = sl->n_gen;
    j->state = SERVE_JOB_DONE;
    j->t_done = nc_now_s();
    j->version++;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (!strcmp(reason, "cancelled")) serve_metrics_cancelled(s->metrics);
    serve_metrics_tokens(s->metrics, j->n_prompt, j->n_cached, sl->n_gen);
    serve_job_release(j);
    sl->job = NULL;
    sl->last_used_s = nc_now_s();
    pthread_mutex_lock(&s->mu);
    s->n_busy--;
    pthread_mutex_unlock(&s->mu);
}

/* The draft's proposals of a request the pipeline ran (--draft). */
static void count_drafts(serve_sched *s, serve_slot *sl) {
    const gen_result *r = gen_seq_result(sl->gs);
    if (r->n_drafted) serve_metrics_draft(s->metrics, r->n_drafted, r->n_accepted);
}

/* The pipeline has finished the slot's request. */
static void finish_from_pipeline(serve_sched *s, serve_slot *sl) {
    count_drafts(s, sl);
    gen_finish f = gen_seq_finish(sl->gs);
    if (f == GEN_FINISH_ERROR) {
        const nc_error *e = gen_seq_error(sl->gs);
        nc_log(NC_LOG_WARN, "serve: step failed: %s", e->msg);
        finish_job(s, sl, "stop", e->code ? e->code : NC_ERR_INTERNAL, e->msg);
        return;
    }
    finish_job(s, sl, finish_reason(f), NC_OK, NULL);
}

/* ---- logprobs ------------------------------------------------------------ */

static json_t *token_json(serve_sched *s, int32_t id, double logprob) {
    size_t n = 0;
    const char *b = tok_token_bytes(s->m->tok, id, &n);
    if (!b) n = 0;
    unsigned char text[3 * 256 + 1];
    if (n > 256) n = 256;
    size_t tl = tok_utf8_lossy((const unsigned char *)b, n, text);
    json_t *bytes = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(bytes, json_integer((unsigned char)b[i]));
    return json_pack("{s:s%,s:f,s:o}", "token", (const char *)text, tl, "logprob", logprob, "bytes",
                     bytes);
}

/* The chosen token's and the top alternatives' entries (gen/logprobs.h). */
static void add_logprobs(serve_sched *s, serve_slot *sl, int32_t chosen, const float *l) {
    int32_t top[GEN_MAX_TOP_LOGPROBS];
    double top_lp[GEN_MAX_TOP_LOGPROBS], lp;
    int n_top =
        gen_logprobs(l, s->m->e->n_vocab, chosen, sl->job->req.top_logprobs, &lp, top, top_lp);
    json_t *entry = token_json(s, chosen, lp);
    json_t *alts = json_array();
    for (int i = 0; i < n_top; i++)
        json_array_append_new(alts, token_json(s, top[i], top_lp[i]));
    json_object_set_new(entry, "top_logprobs", alts);
    serve_job *j = sl->job;
    pthread_mutex_lock(&j->mu);
    json_array_append_new(j->logprobs, entry);
    pthread_mutex_unlock(&j->mu);
}

/* ---- one generated token ------------------------------------------------- */

/* Before its text: count it, the time to the first token, logprobs. */
static int on_token(void *user, int32_t tok, const float *logits) {
    serve_slot *sl = user;
    serve_sched *s = sl->s;
    serve_job *j = sl->job;
    sl->n_gen++;
    if (sl->n_gen == 1) {
        double now = nc_now_s();
        pthread_mutex_lock(&j->mu);
        j->t_first_token = now;
        pthread_mutex_unlock(&j->mu);
        serve_metrics_ttft(s->metrics, now - j->t_submit);
    }
    if (j->req.logprobs) add_logprobs(s, sl, tok, logits);
    pthread_mutex_lock(&j->mu);
    j->n_generated = sl->n_gen;
    pthread_mutex_unlock(&j->mu);
    return 0;
}

/* ---- admission ----------------------------------------------------------- */

/* The model folder's defaults, overridden by what the request sent. */
static gen_sampler_params request_sampling(serve_sched *s, const serve_request *r) {
    gen_sampler_params p = s->defaults;
    for (int i = 0; gen_param_at(i); i++)
        if (r->sampling_set & gen_param_at(i)->set)
            gen_param_put(&p, gen_param_at(i), r->sampling[i]);
    p.seed = r->has_seed
                 ? r->seed
                 : (uint64_t)(nc_now_s() * 1e9) ^ (++s->seed_counter * 0x9e3779b97f4a7c15ull);
    return p;
}

static void start_job(serve_sched *s, serve_slot *sl, serve_job *j) {
    sl->job = j;
    sl->n_gen = 0;
    const serve_request *r = &j->req;
    gen_request req = {0};
    req.sampling = request_sampling(s, r);
    req.max_new_tokens = j->max_tokens;
    req.stops = (const char *const *)r->stop;
    req.n_stops = r->n_stop;
    req.split_reasoning = j->split_reasoning;
    req.starts_in_reasoning = j->starts_in_reasoning;
    gen_callbacks cb = {on_token, on_text, sl};
    nc_error err = {0};
    nc_status st = gen_seq_start(sl->gs, j->prompt, j->n_prompt, &req, &cb, &err);
    if (st == NC_OK && j->constraint) { /* response_format, forced tool calls */
        gen_constraint c = gen_out_constraint_hooks(j->constraint);
        gen_seq_constrain(sl->gs, &c);
    }
    pthread_mutex_lock(&j->mu);
    j->state = SERVE_JOB_RUNNING;
    j->n_cached = st == NC_OK ? gen_seq_result(sl->gs)->n_prompt_cached : 0;
    j->t_start = nc_now_s();
    j->version++;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (st != NC_OK) finish_job(s, sl, "stop", st, err.msg);
}

static serve_slot *pick_slot(serve_sched *s, const serve_job *j) {
    serve_slot *best = NULL;
    int best_keep = -1;
    for (int i = 0; i < s->n_slots; i++) {
        serve_slot *sl = &s->slots[i];
        if (sl->job) continue;
        int keep = gen_seq_cached_prefix(sl->gs, j->prompt, j->n_prompt);
        /* Longest shared prefix; among equals the least recently used, so
         * caches that others may reuse survive longer. */
        if (!best || keep > best_keep ||
            (keep == best_keep && sl->last_used_s < best->last_used_s)) {
            best = sl;
            best_keep = keep;
        }
    }
    return best;
}

/* Moves queued jobs into free slots; called with s->mu held. Returns the
 * jobs to start (started outside the lock). */
static int admit(serve_sched *s, serve_job **jobs, serve_slot **slots) {
    int n = 0;
    while (s->q_len > 0 && s->n_busy < s->n_slots) {
        serve_job *j = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % s->q_cap;
        s->q_len--;
        serve_slot *sl = pick_slot(s, j);
        for (int k = 0; k < n; k++)
            if (slots[k] == sl) sl = NULL;
        if (!sl) { /* the best free slot was already given out this round */
            for (int i = 0; i < s->n_slots && !sl; i++) {
                int taken = s->slots[i].job != NULL;
                for (int k = 0; k < n; k++)
                    taken |= slots[k] == &s->slots[i];
                if (!taken) sl = &s->slots[i];
            }
        }
        s->n_busy++;
        jobs[n] = j;
        slots[n++] = sl;
    }
    return n;
}

/* ---- the loop ------------------------------------------------------------ */

static int job_is_cancelled(serve_job *j) {
    pthread_mutex_lock(&j->mu);
    int c = j->is_cancelled;
    pthread_mutex_unlock(&j->mu);
    return c;
}

static void run_step(serve_sched *s) {
    int n_items = 0;
    for (int i = 0; i < s->n_slots; i++) {
        serve_slot *sl = &s->slots[i];
        if (!sl->job) continue;
        if (job_is_cancelled(sl->job)) {
            gen_seq_cancel(sl->gs);
            count_drafts(s, sl);
            finish_job(s, sl, "cancelled", NC_OK, NULL);
            continue;
        }
        if (!gen_seq_next_item(sl->gs, SERVE_PREFILL_CHUNK, &s->items[n_items])) {
            finish_from_pipeline(s, sl);
            continue;
        }
        s->item_slot[n_items++] = i;
    }
    if (n_items == 0) return;
    nc_error err = {0};
    nc_status st = engine_step(s->m->e, s->items, n_items, &err);
    serve_metrics_step(s->metrics, n_items);
    for (int k = 0; k < n_items; k++) {
        engine_step_item *it = &s->items[k];
        serve_slot *sl = &s->slots[s->item_slot[k]];
        if (st != NC_OK) { /* the step as a whole failed: every item with it */
            it->status = st;
            it->err = err;
        }
        if (gen_seq_after_step(sl->gs, it)) finish_from_pipeline(s, sl);
    }
}

static void *sched_main(void *arg) {
    serve_sched *s = arg;
    serve_job **jobs = malloc((size_t)s->n_slots * sizeof *jobs);
    serve_slot **slots = malloc((size_t)s->n_slots * sizeof *slots);
    if (!jobs || !slots) {
        nc_log(NC_LOG_ERROR, "serve: scheduler out of memory");
        free(jobs);
        free(slots);
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    while (!s->is_stopping) {
        int n = admit(s, jobs, slots);
        int busy = s->n_busy;
        serve_metrics_gauges(s->metrics, s->q_len, busy);
        if (busy == 0) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        for (int k = 0; k < n; k++)
            start_job(s, slots[k], jobs[k]);
        run_step(s);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    free(jobs);
    free(slots);
    return NULL;
}

/* ---- public -------------------------------------------------------------- */

nc_status serve_sched_new(gen_model *m, const serve_sched_options *opt, serve_metrics *metrics,
                          serve_sched **out, nc_error *err) {
    *out = NULL;
    if (opt->n_slots < 1 || opt->n_slots > 256)
        return nc_fail(err, NC_ERR_INVALID, "--parallel %d: must be between 1 and 256",
                       opt->n_slots);
    if (opt->queue_max < 0) return nc_fail(err, NC_ERR_INVALID, "--queue must be >= 0");
    serve_sched *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
    s->m = m;
    s->metrics = metrics;
    s->defaults = opt->defaults;
    s->n_slots = opt->n_slots;
    s->ctx = opt->ctx > 0 && opt->ctx < m->e->ctx_max ? opt->ctx : m->e->ctx_max;
    s->queue_max = opt->queue_max;
    s->q_cap = opt->queue_max + opt->n_slots;
    s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
    s->items = calloc((size_t)s->n_slots, sizeof *s->items);
    s->item_slot = calloc((size_t)s->n_slots, sizeof *s->item_slot);
    s->queue = calloc((size_t)s->q_cap, sizeof *s->queue);
    nc_status st = (s->slots && s->items && s->item_slot && s->queue)
                       ? NC_OK
                       : nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
    for (int i = 0; st == NC_OK && i < s->n_slots; i++) {
        s->slots[i].s = s;
        st = gen_seq_new(m, s->ctx, &s->slots[i].gs, err);
    }
    if (st == NC_OK && (pthread_mutex_init(&s->mu, NULL) || pthread_cond_init(&s->cv, NULL)))
        st = nc_fail(err, NC_ERR_INTERNAL, "serve: cannot create the scheduler lock");
    if (st == NC_OK) {
        if (pthread_create(&s->thread, NULL, sched_main, s) != 0)
            st = nc_fail(err, NC_ERR_INTERNAL, "serve: cannot start the scheduler thread");
        else
            s->has_thread = 1;
    }
    if (st != NC_OK) {
        serve_sched_free(s);
        return st;
    }
    *out = s;
    return NC_OK;
}

void serve_sched_stop(serve_sched *s) {
    if (!s || !s->has_thread) return;
    pthread_mutex_lock(&s->mu);
    int was_stopping = s->is_stopping;
    s->is_stopping = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (was_stopping) return;
    pthread_join(s->thread, NULL);
    pthread_mutex_lock(&s->mu);
    while (s->q_len > 0) {
        serve_job *j = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % s->q_cap;
        s->q_len--;
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_lock(&j->mu);
        j->state = SERVE_JOB_DONE;
        j->finish_reason = "cancelled";
        j->status = NC_ERR_INTERNAL;
        snprintf(j->error, sizeof j->error, "server shutting down");
        j->version++;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        serve_job_release(j);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->n_slots; i++)
        if (s->slots[i].job)
            finish_job(s, &s->slots[i], "cancelled", NC_ERR_INTERNAL, "server shutting down");
}

void serve_sched_free(serve_sched *s) {
    if (!s) return;
    serve_sched_stop(s);
    for (int i = 0; s->slots && i < s->n_slots; i++) {
        gen_seq_free(s->slots[i].gs);
    }
    if (s->has_thread) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
    }
    free(s->slots);
    free(s->items);
    free(s->item_slot);
    free(s->queue);
    free(s);
}

nc_status serve_sched_submit(serve_sched *s, serve_job *j, nc_error *err) {
    pthread_mutex_lock(&s->mu);
    int room = s->queue_max + (s->n_slots - s->n_busy);
    if (s->q_len >= room || s->q_len >= s->q_cap || s->is_stopping) {
        pthread_mutex_unlock(&s->mu);
        return nc_fail(err, NC_ERR_RANGE, "server busy: %d requests already waiting", s->q_len);
    }
    serve_job_retain(j);
    pthread_mutex_lock(&j->mu);
    j->state = SERVE_JOB_QUEUED;
    j->t_submit = j->t_submit > 0 ? j->t_submit : nc_now_s();
    pthread_mutex_unlock(&j->mu);
    s->queue[(s->q_head + s->q_len) % s->q_cap] = j;
    s->q_len++;
    serve_metrics_gauges(s->metrics, s->q_len, s->n_busy);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NC_OK;
}

void serve_sched_cancel(serve_sched *s, serve_job *j) {
    serve_job_cancel(j);
    pthread_mutex_lock(&s->mu);
    int found = -1;
    for (int k = 0; k < s->q_len; k++)
        if (s->queue[(s->q_head + k) % s->q_cap] == j) found = k;
    if (found >= 0) {
        for (int k = found; k + 1 < s->q_len; k++)
            s->queue[(s->q_head + k) % s->q_cap] = s->queue[(s->q_head + k + 1) % s->q_cap];
        s->q_len--;
        serve_metrics_gauges(s->metrics, s->q_len, s->n_busy);
    }
    pthread_mutex_unlock(&s->mu);
    if (found >= 0) {
        pthread_mutex_lock(&j->mu);
        j->state = SERVE_JOB_DONE;
        j->finish_reason = "cancelled";
        j->version++;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        serve_metrics_cancelled(s->metrics);
        serve_job_release(j);
    }
}
