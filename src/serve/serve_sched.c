/* The scheduler thread. Each loop: admit queued jobs into free slots, drop
 * cancelled ones, run one engine step over every busy slot (a prompt chunk
 * for a slot still reading its prompt, the last sampled token otherwise),
 * then sample, detokenize, split reasoning, match stop strings and publish
 * the new text to each job. Slot state is touched only by this thread; the
 * queue and the busy count are shared under s->mu. */
#include "serve/serve_sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/timer.h"
#include "gen/sampler.h"
#include "gen/stop.h"
#include "text/detok.h"
#include "text/utf8.h"

/* Prompt tokens one slot feeds per step, so a long prompt does not stall
 * the other slots' decoding for its whole prefill. */
#define SERVE_PREFILL_CHUNK 512

typedef enum { THINK_START, THINK_REASONING, THINK_AFTER, THINK_CONTENT } think_state;

typedef struct serve_slot {
    void *seq;
    int32_t *cache; /* tokens now in seq's KV cache, mirrored for prefix reuse */
    int n_cache;
    double last_used_s;

    serve_job *job; /* NULL: free */
    int n_fed;      /* prompt tokens in the cache */
    int32_t next;   /* sampled, not yet fed */
    int n_gen;
    think_state think;
    serve_text held_ws; /* trailing blanks of the reasoning, see publish_reasoning */
    gen_sampler *sampler;
    tok_stream detok;
    gen_stop stop;
    int is_stop_matched;
    float *logits;
    char *piece; /* detokenizer output */
    size_t piece_cap;
} serve_slot;

struct serve_sched {
    serve_engine *e;
    serve_metrics *metrics;
    int n_slots, ctx, queue_max;
    serve_slot *slots;
    serve_step_item *items;
    int *item_slot;
    int32_t think_open, think_close;
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

static void publish_content(serve_slot *sl, const char *p, size_t n) {
    if (sl->is_stop_matched) return;
    const char *out;
    size_t out_len;
    nc_error err;
    int r = gen_stop_push(&sl->stop, p, n, &out, &out_len, &err);
    if (r < 0) return;
    job_append(sl->job, &sl->job->content, out, out_len);
    if (r == 1) sl->is_stop_matched = 1;
}

static int is_space(char c) {
    return c == '\n' || c == ' ' || c == '\r' || c == '\t';
}

/* Reasoning without the whitespace that frames it ("<think>\n...\n</think>"):
 * leading blanks are dropped, trailing ones held until more text follows
 * (then released) or </think> comes (then dropped), so streamed and whole
 * answers agree. */
static void publish_reasoning(serve_slot *sl, const char *p, size_t n) {
    serve_job *j = sl->job;
    if (j->reasoning.len == 0 && sl->held_ws.len == 0)
        while (n && is_space(*p))
            p++, n--;
    size_t body = n;
    while (body && is_space(p[body - 1]))
        body--;
    if (body) {
        job_append(j, &j->reasoning, sl->held_ws.p, sl->held_ws.len);
        sl->held_ws.len = 0;
        job_append(j, &j->reasoning, p, body);
    } else if (j->reasoning.len == 0) {
        return; /* still only leading blanks */
    }
    if (serve_text_append(&sl->held_ws, p + body, n - body) != 0) sl->held_ws.len = 0;
}

/* Routes a piece of detokenized text by the reasoning state. */
static void publish_text(serve_slot *sl, const char *p, size_t n) {
    if (sl->think == THINK_REASONING) {
        publish_reasoning(sl, p, n);
        return;
    }
    if (sl->think == THINK_AFTER) {
        /* The template's "</think>\n\n": drop the blank lines after it. */
        while (n && is_space(*p))
            p++, n--;
        if (!n) return;
        sl->think = THINK_CONTENT;
    }
    publish_content(sl, p, n);
}

static void flush_text(serve_slot *sl) {
    size_t n = tok_stream_flush(&sl->detok, sl->piece, sl->piece_cap);
    publish_text(sl, sl->piece, n);
    if (!sl->is_stop_matched) {
        const char *out;
        size_t out_len;
        gen_stop_flush(&sl->stop, &out, &out_len);
        job_append(sl->job, &sl->job->content, out, out_len);
    }
}

static void finish_job(serve_sched *s, serve_slot *sl, const char *reason, nc_status st,
                       const char *msg) {
    serve_job *j = sl->job;
    if (st == NC_OK && strcmp(reason, "cancelled") != 0) flush_text(sl);
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
    gen_stop_free(&sl->stop);
    serve_job_release(j);
    sl->job = NULL;
    sl->last_used_s = nc_now_s();
    pthread_mutex_lock(&s->mu);
    s->n_busy--;
    pthread_mutex_unlock(&s->mu);
}

/* ---- logprobs ------------------------------------------------------------ */

static json_t *token_json(serve_sched *s, int32_t id, double logprob) {
    size_t n = 0;
    const char *b = tok_token_bytes(s->e->tok, id, &n);
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

/* The model's log-probabilities (softmax of the raw logits, before any
 * sampling filter) of the chosen token and the top alternatives. */
static void add_logprobs(serve_sched *s, serve_slot *sl, int32_t chosen) {
    const float *l = sl->logits;
    int nv = s->e->n_vocab, k = sl->job->req.top_logprobs;
    double mx = l[0];
    for (int v = 1; v < nv; v++)
        mx = l[v] > mx ? l[v] : mx;
    double sum = 0;
    for (int v = 0; v < nv; v++)
        sum += exp((double)l[v] - mx);
    double lse = mx + log(sum > 0 ? sum : 1.0); /* sum >= 1: the max term is exp(0) */
    int top[SERVE_MAX_TOP_LOGPROBS];
    int n_top = 0;
    for (int v = 0; v < nv && k > 0; v++) {
        if (n_top == k && l[v] <= l[top[n_top - 1]]) continue;
        int at = n_top < k ? n_top++ : k - 1;
        while (at > 0 && l[top[at - 1]] < l[v]) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = v;
    }
    json_t *entry = token_json(s, chosen, (double)l[chosen] - lse);
    json_t *alts = json_array();
    for (int i = 0; i < n_top; i++)
        json_array_append_new(alts, token_json(s, top[i], (double)l[top[i]] - lse));
    json_object_set_new(entry, "top_logprobs", alts);
    serve_job *j = sl->job;
    pthread_mutex_lock(&j->mu);
    json_array_append_new(j->logprobs, entry);
    pthread_mutex_unlock(&j->mu);
}

/* ---- one generated token ------------------------------------------------- */

/* Returns 1 when the job finished. */
static int take_token(serve_sched *s, serve_slot *sl, int32_t tok) {
    serve_job *j = sl->job;
    sl->n_gen++;
    if (sl->n_gen == 1) {
        double now = nc_now_s();
        pthread_mutex_lock(&j->mu);
        j->t_first_token = now;
        pthread_mutex_unlock(&j->mu);
        serve_metrics_ttft(s->metrics, now - j->t_submit);
    }
    if (serve_engine_is_eog(s->e, tok)) {
        sl->n_gen--; /* OpenAI does not count the end marker as output */
        finish_job(s, sl, "stop", NC_OK, NULL);
        return 1;
    }
    if (j->req.logprobs) add_logprobs(s, sl, tok);
    gen_sampler_accept(sl->sampler, tok);
    if (j->split_reasoning && tok == s->think_open && sl->think == THINK_START) {
        sl->think = THINK_REASONING;
    } else if (j->split_reasoning && tok == s->think_close && sl->think == THINK_REASONING) {
        size_t n = tok_stream_flush(&sl->detok, sl->piece, sl->piece_cap);
        publish_text(sl, sl->piece, n);
        sl->think = THINK_AFTER;
    } else {
        size_t n = tok_stream_push(&sl->detok, tok, sl->piece, sl->piece_cap);
        if (sl->think == THINK_START && n) sl->think = THINK_CONTENT;
        publish_text(sl, sl->piece, n);
    }
    if (sl->is_stop_matched) {
        finish_job(s, sl, "stop", NC_OK, NULL);
        return 1;
    }
    if (sl->n_gen >= j->max_tokens) {
        finish_job(s, sl, "length", NC_OK, NULL);
        return 1;
    }
    pthread_mutex_lock(&j->mu);
    j->n_generated = sl->n_gen;
    pthread_mutex_unlock(&j->mu);
    sl->next = tok;
    return 0;
}

/* ---- admission ----------------------------------------------------------- */

static int common_prefix(const int32_t *a, int na, const int32_t *b, int nb) {
    int n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

static void start_job(serve_sched *s, serve_slot *sl, serve_job *j) {
    sl->job = j;
    sl->n_gen = 0;
    sl->is_stop_matched = 0;
    int keep = common_prefix(sl->cache, sl->n_cache, j->prompt, j->n_prompt);
    if (keep >= j->n_prompt) keep = j->n_prompt - 1; /* feed one token to get logits */
    s->e->seq_truncate(s->e, sl->seq, keep);
    sl->n_cache = keep;
    sl->n_fed = keep;
    sl->think = j->starts_in_reasoning ? THINK_REASONING : THINK_START;
    sl->held_ws.len = 0;
    tok_stream_init(&sl->detok, s->e->tok);
    const serve_request *r = &j->req;
    gen_sampler_params p = gen_sampler_defaults_greedy();
    p.temperature = (float)r->temperature;
    p.top_k = r->top_k;
    p.top_p = (float)r->top_p;
    p.min_p = (float)r->min_p;
    p.repeat_penalty = (float)r->repeat_penalty;
    p.presence_penalty = (float)r->presence_penalty;
    p.frequency_penalty = (float)r->frequency_penalty;
    p.seed = r->has_seed
                 ? r->seed
                 : (uint64_t)(nc_now_s() * 1e9) ^ (++s->seed_counter * 0x9e3779b97f4a7c15ull);
    nc_error err;
    nc_status st = sl->sampler ? gen_sampler_reset(sl->sampler, &p, &err)
                               : gen_sampler_new(s->e->n_vocab, &p, &sl->sampler, &err);
    /* Penalties look at the prompt too, as in `nectar run` (src/gen) and HF's
     * repetition penalty, so a seeded request samples exactly what the
     * command line would. */
    for (int i = 0; st == NC_OK && i < j->n_prompt; i++)
        gen_sampler_accept(sl->sampler, j->prompt[i]);
    if (st == NC_OK)
        st = gen_stop_init(&sl->stop, (const char *const *)r->stop, r->n_stop, &err);
    else
        memset(&sl->stop, 0, sizeof sl->stop);
    pthread_mutex_lock(&j->mu);
    j->state = SERVE_JOB_RUNNING;
    j->n_cached = keep;
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
        int keep = common_prefix(sl->cache, sl->n_cache, j->prompt, j->n_prompt);
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
            finish_job(s, sl, "cancelled", NC_OK, NULL);
            continue;
        }
        serve_step_item *it = &s->items[n_items];
        serve_job *j = sl->job;
        if (sl->n_fed < j->n_prompt) {
            it->tokens = j->prompt + sl->n_fed;
            it->n = j->n_prompt - sl->n_fed;
            if (it->n > SERVE_PREFILL_CHUNK) it->n = SERVE_PREFILL_CHUNK;
        } else {
            it->tokens = &sl->next;
            it->n = 1;
        }
        it->seq = sl->seq;
        it->logits = sl->logits;
        it->status = NC_OK;
        s->item_slot[n_items++] = i;
    }
    if (n_items == 0) return;
    nc_error err = {0};
    nc_status st = s->e->step(s->e, s->items, n_items, &err);
    serve_metrics_step(s->metrics, n_items);
    for (int k = 0; k < n_items; k++) {
        serve_step_item *it = &s->items[k];
        serve_slot *sl = &s->slots[s->item_slot[k]];
        if (st != NC_OK || it->status != NC_OK) {
            const char *msg = st != NC_OK ? err.msg : it->err.msg;
            nc_log(NC_LOG_WARN, "serve: step failed: %s", msg);
            sl->n_cache = s->e->seq_pos(s->e, sl->seq);
            finish_job(s, sl, "stop", st != NC_OK ? st : it->status, msg);
            continue;
        }
        memcpy(sl->cache + sl->n_cache, it->tokens, (size_t)it->n * sizeof *it->tokens);
        sl->n_cache += it->n;
        int was_prefill = sl->n_fed < sl->job->n_prompt;
        if (was_prefill) {
            sl->n_fed += it->n;
            if (sl->n_fed < sl->job->n_prompt) continue; /* more prompt to read */
        }
        take_token(s, sl, gen_sampler_sample(sl->sampler, sl->logits));
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

nc_status serve_sched_new(serve_engine *e, const serve_sched_options *opt, serve_metrics *metrics,
                          serve_sched **out, nc_error *err) {
    *out = NULL;
    if (opt->n_slots < 1 || opt->n_slots > 256)
        return nc_fail(err, NC_ERR_INVALID, "--parallel %d: must be between 1 and 256",
                       opt->n_slots);
    if (opt->queue_max < 0) return nc_fail(err, NC_ERR_INVALID, "--queue must be >= 0");
    serve_sched *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
    s->e = e;
    s->metrics = metrics;
    s->n_slots = opt->n_slots;
    s->ctx = opt->ctx > 0 && opt->ctx < e->ctx_max ? opt->ctx : e->ctx_max;
    s->queue_max = opt->queue_max;
    s->q_cap = opt->queue_max + opt->n_slots;
    s->think_open = tok_find(e->tok, "<think>");
    s->think_close = tok_find(e->tok, "</think>");
    s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
    s->items = calloc((size_t)s->n_slots, sizeof *s->items);
    s->item_slot = calloc((size_t)s->n_slots, sizeof *s->item_slot);
    s->queue = calloc((size_t)s->q_cap, sizeof *s->queue);
    nc_status st = (s->slots && s->items && s->item_slot && s->queue)
                       ? NC_OK
                       : nc_fail(err, NC_ERR_NOMEM, "serve: out of memory");
    size_t piece_cap = tok_stream_cap(e->tok);
    for (int i = 0; st == NC_OK && i < s->n_slots; i++) {
        serve_slot *sl = &s->slots[i];
        st = e->seq_new(e, s->ctx, &sl->seq, err);
        if (st != NC_OK) break;
        sl->cache = malloc((size_t)s->ctx * sizeof *sl->cache);
        sl->logits = malloc((size_t)e->n_vocab * sizeof *sl->logits);
        sl->piece = malloc(piece_cap);
        sl->piece_cap = piece_cap;
        if (!sl->cache || !sl->logits || !sl->piece)
            st = nc_fail(err, NC_ERR_NOMEM, "serve: out of memory for slot %d", i);
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
        serve_slot *sl = &s->slots[i];
        if (sl->seq) s->e->seq_free(s->e, sl->seq);
        gen_sampler_free(sl->sampler);
        free(sl->cache);
        free(sl->logits);
        free(sl->piece);
        free(sl->held_ws.p);
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
