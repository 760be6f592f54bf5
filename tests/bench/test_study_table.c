/* The study's table (bench/study_table.h) on synthetic numbers: candidates
 * on a virtual clock take a fixed service time per decision and draw a
 * fixed power while they work, over an idle floor, metered by a synthetic
 * counter read at the block ends (as RAPL is). Every figure of the table
 * (completed, misses, t, P, interval energy, E, S, R, S x R) is computed
 * here again, independently, from those constants; no assertion depends
 * on how fast this machine runs. And the Snake workload: the teacher's
 * ticks, three texts each, the same bytes (and hash) every time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "bench/study_table.h"
#include "snake/snake_lanes.h"

#define IDLE_W 2.0

/* The virtual machine: a clock and an energy counter that runs at IDLE_W
 * when nothing works. */
typedef struct vmachine {
    double t, joules;
} vmachine;

static double v_now(void *ctx) {
    return ((vmachine *)ctx)->t;
}

static void v_sleep_until(void *ctx, double t_abs) {
    vmachine *m = ctx;
    if (t_abs > m->t) {
        m->joules += (t_abs - m->t) * IDLE_W;
        m->t = t_abs;
    }
}

typedef struct vcand {
    vmachine *m;
    double secs, watts; /* per decision: service time; power while serving */
} vcand;

static nc_status v_load(nc_candidate *c, nc_error *err) {
    (void)c, (void)err;
    return NC_OK;
}

static nc_status v_run(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    (void)item, (void)err;
    vcand *v = c->impl;
    v->m->t += v->secs;
    v->m->joules += v->secs * v->watts;
    return NC_OK;
}

static void v_unload(nc_candidate *c) {
    (void)c;
}

static const nc_candidate_ops v_ops = {v_load, NULL, v_run, v_unload};

static void v_init(nc_candidate *c, vcand *v, vmachine *m, double secs, double watts,
                   const char *name) {
    memset(c, 0, sizeof *c);
    v->m = m;
    v->secs = secs;
    v->watts = watts;
    c->ops = &v_ops;
    c->impl = v;
    snprintf(c->kind, sizeof c->kind, "virtual");
    snprintf(c->spec, sizeof c->spec, "%s", name);
}

/* A counter read on demand, like RAPL: a point (now, joules) per mark. */
static vmachine *meter_machine;

static nc_status meter_start(nc_power_sampler *s, nc_error *err) {
    (void)s, (void)err;
    return NC_OK;
}

static void meter_mark(nc_power_sampler *s) {
    nc_error ignored;
    pthread_mutex_lock(&s->lock);
    nc_energy_trace_add(&s->trace, meter_machine->t, meter_machine->joules, &ignored);
    pthread_mutex_unlock(&s->lock);
}

static nc_status meter_stop(nc_power_sampler *s, double t_end, nc_error *err) {
    (void)s, (void)t_end, (void)err;
    return NC_OK;
}

static const nc_power_ops meter_ops = {meter_start, meter_mark, meter_stop, NULL};

static nc_power_sampler *meter_new(vmachine *m) {
    nc_power_sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    meter_machine = m;
    s->ops = &meter_ops;
    snprintf(s->kind, sizeof s->kind, "synthetic");
    snprintf(s->domain, sizeof s->domain, "a synthetic counter");
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

/* A against X at `rate` with deadline d; n_blocks x per_block decisions. */
static void run_pair(double rate, double deadline, double a_s, double a_w, double x_s, double x_w,
                     int per_block, nc_compare_result *r, nc_compare_opts *o) {
    vmachine m = {1000.0, 0.0};
    nc_compare_clock clock = {v_now, v_sleep_until, &m};
    nc_compare_opts_default(o);
    o->n_blocks = 5;
    o->per_block = per_block;
    o->n_warmup = 1;
    o->idle_s = 0;
    o->rate_hz = rate;
    o->deadline_s = deadline;
    o->clock = &clock;
    nc_candidate a, x;
    vcand va, vx;
    v_init(&a, &va, &m, a_s, a_w, "A");
    v_init(&x, &vx, &m, x_s, x_w, "X");
    nc_power_sampler *p = meter_new(&m);
    nc_bench_workload w;
    nc_error err;
    CHECK_OK(nc_workload_load("none", NULL, &w, &err), &err);
    CHECK_OK(nc_compare_run(&a, &x, &w, p, o, r, &err), &err);
    nc_workload_free(&w);
    nc_power_close(p);
    o->clock = NULL;
}

/* The printed table of two columns (malloc'ed). */
static char *table_text(const nc_study_column *col, const nc_compare_result *r,
                        const nc_compare_opts *o) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    nc_study_table_print(f, col, 2, r, o);
    fclose(f);
    return text;
}

#define CLOSE(a, b) (fabs((a) - (b)) <= 1e-9 * fmax(1.0, fabs(b)))

/* Both within the deadline: every figure by hand. */
static void test_equal_load_figures_by_hand(void) {
    const double rate = 20, T = 1 / rate, a = 0.030, pa = 12.0, b = 0.010, pb = 5.0;
    const int n = 4;
    nc_compare_result r;
    nc_compare_opts o;
    run_pair(rate, T, a, pa, b, pb, n, &r, &o);
    nc_study_column col[2];
    nc_study_column_of(&r, 0, "A", &col[0]);
    nc_study_column_of(&r, 1, "X", &col[1]);
    /* per decision: its service at the candidate's power, the rest of the
     * period idle; a block spans n periods */
    double ea = a * pa + (T - a) * IDLE_W, eb = b * pb + (T - b) * IDLE_W;
    double Pa = ea / T, Pb = eb / T;
    printf("  A: t %.4f P %.4f E %.4f; X: t %.4f P %.4f E %.4f; S %.4f R %.4f SxR %.4f\n",
           col[0].t_s, col[0].power_w, col[0].energy_per_decision_j.estimate, col[1].t_s,
           col[1].power_w, col[1].energy_per_decision_j.estimate, col[1].S.estimate,
           col[1].R.estimate, col[1].SxR.estimate);
    CHECK(col[0].completed == 5 * n && col[1].completed == 5 * n);
    CHECK(col[0].missed == 0 && col[1].missed == 0);
    CHECK(CLOSE(col[0].t_s, a) && CLOSE(col[1].t_s, b));
    CHECK(CLOSE(col[0].p50_s, a) && CLOSE(col[1].p95_s, b));
    CHECK(CLOSE(col[0].elapsed_per_decision_s, T) && CLOSE(col[1].elapsed_per_decision_s, T));
    CHECK(CLOSE(col[0].power_w, Pa) && CLOSE(col[1].power_w, Pb));
    CHECK(CLOSE(col[0].interval_energy_j, 5 * n * ea) && CLOSE(col[1].interval_energy_j, 5 * n * eb));
    CHECK(CLOSE(col[0].energy_per_decision_j.estimate, ea));
    CHECK(CLOSE(col[1].energy_per_decision_j.lower, eb) && CLOSE(col[1].energy_per_decision_j.upper, eb));
    CHECK(col[0].is_baseline && isnan(col[0].S.estimate));
    CHECK(CLOSE(col[1].S.estimate, a / b) && CLOSE(col[1].S.lower, a / b));
    CHECK(CLOSE(col[1].R.estimate, Pa / Pb) && CLOSE(col[1].R.upper, Pa / Pb));
    CHECK(CLOSE(col[1].SxR.estimate, ea / eb));
    /* every period elapses for both: E_A / E_X = R (the study's S is 1) */
    CHECK(CLOSE(col[1].SxR.estimate, col[1].R.estimate));
    /* the printed table carries the same numbers */
    char *text = table_text(col, &r, &o);
    CHECK(text != NULL);
    char want[128];
    snprintf(want, sizeof want, "| S = t_A / t_X | (baseline) | %.4g [%.4g, %.4g] |", a / b, a / b,
             a / b);
    CHECKF(strstr(text, want) != NULL, "%s", text);
    snprintf(want, sizeof want, "| mean power P (W) | %.4g | %.4g |", Pa, Pb);
    CHECKF(strstr(text, want) != NULL, "%s", text);
    CHECK(strstr(text, "| deadline misses | 0 | 0 |") != NULL);
    free(text);
    nc_compare_result_free(&r);
}

/* X slower than the period: requests queue, every one misses, X never
 * idles. */
static void test_a_late_candidate_misses_and_queues(void) {
    const double rate = 10, T = 1 / rate, a = 0.02, pa = 10.0, x = 1.5 * T, px = 8.0;
    const int n = 4;
    nc_compare_result r;
    nc_compare_opts o;
    run_pair(rate, T, a, pa, x, px, n, &r, &o);
    nc_study_column col;
    nc_study_column_of(&r, 1, "X", &col);
    /* decision i of a block arrives at i T and ends at (i + 1) x */
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += (i + 1) * x - i * T;
    double ea = a * pa + (T - a) * IDLE_W, ex = x * px;
    printf("  late X: misses %d, t %.4f (want %.4f), P %.4f, E %.4f\n", col.missed, col.t_s,
           sum / n, col.power_w, col.energy_per_decision_j.estimate);
    CHECK(col.missed == 5 * n && col.completed == 5 * n);
    CHECK(CLOSE(col.t_s, sum / n));
    CHECK(CLOSE(col.elapsed_per_decision_s, x));
    CHECK(CLOSE(col.power_w, px));
    CHECK(CLOSE(col.energy_per_decision_j.estimate, ex));
    CHECK(CLOSE(col.S.estimate, a / (sum / n)));
    CHECK(CLOSE(col.R.estimate, (ea / T) / px));
    CHECK(CLOSE(col.SxR.estimate, ea / ex));
    nc_compare_result_free(&r);
}

/* No sampler: the power rows say n/a, never 0. */
static void test_no_power_is_na(void) {
    nc_compare_result r;
    memset(&r, 0, sizeof r);
    r.is_rate_mode = 1;
    snprintf(r.power_kind, sizeof r.power_kind, "none");
    snprintf(r.power_domain, sizeof r.power_domain, "not measured");
    r.cand[0].n_completed = r.cand[1].n_completed = 3;
    r.cand[0].busy_s = r.cand[1].busy_s = 0.3;
    r.S.estimate = r.S.lower = r.S.upper = 2;
    nc_study_column col[2];
    nc_study_column_of(&r, 0, "A", &col[0]);
    nc_study_column_of(&r, 1, "X", &col[1]);
    nc_compare_opts o;
    nc_compare_opts_default(&o);
    o.rate_hz = 10;
    o.deadline_s = 0.1;
    char *text = table_text(col, &r, &o);
    CHECK(text != NULL);
    CHECKF(strstr(text, "| mean power P (W) | n/a | n/a |") &&
               strstr(text, "| S x R = E_A / E_X | (baseline) | n/a |") &&
               strstr(text, "| S = t_A / t_X | (baseline) | 2 [2, 2] |") &&
               strstr(text, "| elapsed per completed decision (ms) | 100.000 | 100.000 |"),
           "%s", text);
    free(text);
}

/* The Snake workload: every tick of the teacher's games, three texts. */
static void test_snake_workload_is_the_teachers_ticks(void) {
    nc_bench_workload w, w2;
    nc_error err;
    CHECK_OK(nc_workload_snake(4, 1, &w, &err), &err);
    CHECK_OK(nc_workload_snake(4, 1, &w2, &err), &err);
    /* the same games again, by hand */
    snake_lanes s;
    snake_lanes_start(&s, 4, 1);
    size_t ticks = 0, same = 1;
    while (!snake_lanes_done(&s)) {
        char texts[SNAKE_LANES][SNAKE_TEXT_CAP], want[3 * SNAKE_TEXT_CAP];
        int moves[SNAKE_LANES] = {0};
        snake_lanes_texts(&s, texts);
        snprintf(want, sizeof want, "%s\n%s\n%s", texts[0], texts[1], texts[2]);
        same &= ticks < w.n_items && !strcmp(w.items[ticks].data, want) &&
                w.items[ticks].len == strlen(want);
        for (int l = 0; l < SNAKE_LANES; l++)
            if (s.game_of[l] >= 0) moves[l] = snake_teacher(&s.games[l]);
        snake_lanes_step(&s, moves);
        ticks++;
    }
    printf("  4 games: %zu ticks, mean score %.2f, sha256 %.16s...\n", w.n_items,
           (double)s.score_sum / 4, w.sha256);
    CHECK(same && ticks == w.n_items && w.n_items > 10);
    CHECK(!strcmp(w.sha256, w2.sha256) && !strcmp(w.kind, "snake"));
    CHECK(strstr(w.items[0].data, "[UP] ") == w.items[0].data);
    nc_workload_free(&w);
    nc_workload_free(&w2);
    CHECK(nc_workload_snake(0, 1, &w, &err) == NC_ERR_INVALID);
}

static void test_decide_candidate_specs(void) {
    nc_candidate *c = NULL;
    nc_error err;
    CHECK(nc_candidate_open("decide:gpu:x", 10, &c, &err) == NC_ERR_INVALID);
    CHECKF(strstr(err.msg, "BACKEND cpu, mil, ane or ane-fake") != NULL, "%s", err.msg);
    CHECK(nc_candidate_open("decide:cpu:", 10, &c, &err) == NC_ERR_INVALID);
    CHECK_OK(nc_candidate_open("decide:ane-fake:some.ane", 10, &c, &err), &err);
    nc_candidate_close(c);
    /* a real decision: the fixture's texts as one item */
    CHECK_OK(nc_candidate_open("decide:cpu:tests/fixtures/decision/dm_k3", 10, &c, &err), &err);
    CHECK_OK(c->ops->load(c, &err), &err);
    const char *t = "Paris is the capital of [A] France [B] Germany [C] Italy\n"
                    "[C] first [B] second [A] third, out of order";
    nc_bench_item item = {t, strlen(t)};
    CHECK_OK(c->ops->run(c, &item, &err), &err);
    const char *bad = "no markers here";
    nc_bench_item missing = {bad, strlen(bad)};
    CHECK(c->ops->run(c, &missing, &err) == NC_ERR_INVALID);
    CHECKF(strstr(err.msg, "marker") != NULL, "%s", err.msg);
    nc_bench_item none = {"", 0};
    CHECK(c->ops->run(c, &none, &err) == NC_ERR_INVALID);
    nc_candidate_close(c);
}

int main(void) {
    RUN(test_equal_load_figures_by_hand);
    RUN(test_a_late_candidate_misses_and_queues);
    RUN(test_no_power_is_na);
    RUN(test_snake_workload_is_the_teachers_ticks);
    RUN(test_decide_candidate_specs);
    return nc_test_exit_code();
}
