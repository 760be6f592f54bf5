/* Job records: creation, reference counting, cancellation, output text. */
#include "serve/serve_job.h"

#include <stdlib.h>
#include <string.h>

int serve_text_append(serve_text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) return -1;
        t->p = p;
        t->cap = cap;
    }
    if (n) memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
    return 0;
}

serve_job *serve_job_new(serve_request *req) {
    serve_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->logprobs = json_array();
    if (!j->logprobs || pthread_mutex_init(&j->mu, NULL) != 0) {
        json_decref(j->logprobs);
        free(j);
        return NULL;
    }
    if (pthread_cond_init(&j->cv, NULL) != 0) {
        pthread_mutex_destroy(&j->mu);
        json_decref(j->logprobs);
        free(j);
        return NULL;
    }
    j->refs = 1;
    j->req = *req;
    memset(req, 0, sizeof *req);
    return j;
}

void serve_job_retain(serve_job *j) {
    pthread_mutex_lock(&j->mu);
    j->refs++;
    pthread_mutex_unlock(&j->mu);
}

void serve_job_release(serve_job *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last) return;
    serve_request_free(&j->req);
    gen_out_constraint_free(j->constraint);
    free(j->prompt);
    free(j->reasoning.p);
    free(j->content.p);
    json_decref(j->logprobs);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

void serve_job_cancel(serve_job *j) {
    pthread_mutex_lock(&j->mu);
    j->is_cancelled = 1;
    j->version++;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}
