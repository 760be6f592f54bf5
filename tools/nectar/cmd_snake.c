/* `nectar snake`: a decision model plays Snake at a fixed tick rate
 * (docs/decision.md). Three games run in lockstep, one per row of the
 * study's B=3, L=64, K=4 input; each tick the rows are encoded, run in one
 * forward pass and each game takes the most likely action. A tick whose
 * decision (encode + tokenize + forward) takes longer than the period is a
 * deadline miss. --teacher plays the heuristic instead (the score to beat);
 * --dump writes every tick's text with the teacher's move (training data for
 * tools/train_snake.py). Ends with `games N, mean score S, deadline misses M`;
 * the energy of the run goes to stderr where a power source is found. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/timer.h"
#include "bench/power.h"
#include "cli_opts.h"
#include "commands.h"
#include "decide/decision_batch.h"
#include "decide/decision_bundle.h"
#include "snake/snake_lanes.h"

#define LANES SNAKE_LANES /* B */
#define SEQ 64            /* L */

typedef struct snake_run {
    decision_model *m;
    tok_tokenizer *tok;
    snake_lanes lanes;
    long long decisions, agree;
    double *lat;
    size_t n_lat, cap_lat;
} snake_run;

static void sleep_until(double t) {
    double dt = t - nc_now_s();
    if (dt <= 0) return;
    struct timespec ts = {(time_t)dt, (long)((dt - floor(dt)) * 1e9)};
    while (nanosleep(&ts, &ts))
        ;
}

/* The model's moves for the active lanes (idle lanes repeat an active row so
 * the shape stays B x L; their outputs are dropped). */
static int model_moves(snake_run *r, int *moves) {
    char texts[LANES][SNAKE_TEXT_CAP];
    const char *rows[LANES];
    snake_lanes_texts(&r->lanes, texts);
    for (int l = 0; l < LANES; l++)
        rows[l] = texts[l];
    const decision_config *c = decision_model_config(r->m);
    float probs[LANES * 16];
    if (c->num_actions != SNAKE_MOVES || c->num_markers != SNAKE_MOVES)
        return cli_failf("snake: the model has %d markers and %d actions; Snake needs %d and %d",
                         c->num_markers, c->num_actions, SNAKE_MOVES, SNAKE_MOVES);
    decision_batch b;
    nc_error err = {0};
    nc_status st = decision_batch_texts(r->tok, modernbert_model_config(decision_model_encoder(r->m)),
                                        rows, LANES, SEQ, &b, &err);
    decision_io io = {.ids = b.ids, .mask = b.mask, .batch = LANES, .seq = SEQ,
                      .action_probs = probs};
    if (st == NC_OK) st = decision_forward(r->m, &io, &err);
    decision_batch_free(&b);
    if (st != NC_OK) return cli_failf("snake: %s", err.msg);
    for (int l = 0; l < LANES; l++) {
        moves[l] = 0;
        for (int a = 1; a < SNAKE_MOVES; a++)
            if (probs[l * SNAKE_MOVES + a] > probs[l * SNAKE_MOVES + moves[l]]) moves[l] = a;
    }
    return 0;
}

static int record_latency(snake_run *r, double s) {
    if (r->n_lat == r->cap_lat) {
        size_t cap = r->cap_lat ? 2 * r->cap_lat : 1024;
        double *more = realloc(r->lat, cap * sizeof *more);
        if (!more) return cli_failf("snake: out of memory");
        r->lat = more;
        r->cap_lat = cap;
    }
    r->lat[r->n_lat++] = s;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(double *v, size_t n, double p) {
    if (!n) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t i = (size_t)ceil(p * (double)n) - 1;
    return v[i < n ? i : n - 1];
}

static void draw(const snake_run *r, int move, double lat, long long misses, long long ticks) {
    const snake_lanes *s = &r->lanes;
    int l = 0;
    while (l < LANES - 1 && s->game_of[l] < 0)
        l++;
    char board[SNAKE_CELLS + SNAKE_H + 1];
    snake_draw(&s->games[l], board, sizeof board);
    static const char *const names[SNAKE_MOVES] = {"up", "right", "down", "left"};
    printf("\033[H\033[2J%sgame %d  score %d  move %s  latency %.2f ms  ticks %lld  misses %lld\n",
           board, s->game_of[l] + 1, s->games[l].score, names[move], lat * 1e3, ticks, misses);
    fflush(stdout);
}

int cmd_snake(int argc, char **argv) {
    const char *model = NULL, *dump = NULL, *power_spec = "auto", *backend = "cpu", *device = "real";
    double rate = 10, explore = 0;
    int games = 1, teacher = 0, no_board = 0, threads = 0;
    int64_t seed = 1;
    const cli_opt opts[] = {
        CLI_OPT("-m", "--model", CLI_STRING, "DIR", "decision-model folder (K = 4, 4 actions)",
                &model),
        CLI_OPT(NULL, "--rate", CLI_DOUBLE, "HZ",
                "ticks per second (default 10); 0: as fast as possible, no board", &rate, .lo = 0,
                .hi = 1e6),
        CLI_OPT(NULL, "--games", CLI_INT, "N", "seeded games to play (default 1)", &games,
                .min = 1, .max = 1000000),
        CLI_OPT(NULL, "--seed", CLI_INT64, "S", "game i uses seed S + i (default 1)", &seed,
                .min = 0, .max = INT64_MAX),
        CLI_OPT(NULL, "--teacher", CLI_FLAG, NULL, "play the heuristic teacher instead of -m",
                &teacher),
        CLI_OPT(NULL, "--no-board", CLI_FLAG, NULL, "do not draw the board at a fixed rate",
                &no_board),
        CLI_OPT(NULL, "--dump", CLI_STRING, "FILE",
                "write each tick as a line TEACHER_MOVE<TAB>TEXT (training data)", &dump),
        CLI_OPT(NULL, "--explore", CLI_DOUBLE, "P",
                "with probability P play a random move instead (seeded; default 0)", &explore,
                .lo = 0, .hi = 1),
        CLI_OPT(NULL, "--power", CLI_STRING, "SPEC",
                "energy of the run: auto (default: RAPL when readable) | none | rapl |\n"
                "rapl:ZONE,... | powermetrics | powermetrics-cmd:SHELL (as bench --compare)",
                &power_spec),
        CLI_OPT(NULL, "--backend", CLI_STRING, "NAME",
                "cpu (default); mil or ane: -m is a bundle from nectar compile,\n"
                "its NE region in the MIL interpreter or on the --ane-device",
                &backend),
        CLI_OPT(NULL, "--ane-device", CLI_STRING, "NAME", "real (default) or fake[:SETTINGS]",
                &device),
        CLI_OPT("-t", "--threads", CLI_INT, "N", "threads (default: all cores)", &threads,
                .min = 1, .max = 1024),
        CLI_ENDROW};
    const cli_command cmd = {
        .name = "snake",
        .usage = "(-m DIR | --teacher) [--rate HZ] [--games N] [options]",
        .about = "Plays Snake with a decision model at a fixed tick rate, three seeded games\n"
                 "at a time (B=3, L=64, K=4), and ends with one line\n"
                 "`games N, mean score S, deadline misses M`; latency and agreement with the\n"
                 "teacher go to stderr.\n",
        .opts = {opts}};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc != CLI_GO) return rc;
    if (!model == !teacher) return cli_usage_error(&cmd, "give one of -m DIR or --teacher");
    snake_run r = {0};
    nc_error err = {0};
    if (model && (decision_open_backend(model, backend, device, NULL, threads, &r.m, &err) != NC_OK ||
                  tok_load(model, &r.tok, &err) != NC_OK)) {
        decision_free(r.m);
        return cli_fail(&err);
    }
    nc_power_sampler *power = NULL;
    if (nc_power_open(power_spec, NULL, 0.05, &power, &err) != NC_OK ||
        nc_power_start(power, &err) != NC_OK) {
        nc_power_close(power);
        tok_free(r.tok);
        decision_free(r.m);
        return cli_fail(&err);
    }
    char tmp[4096];
    FILE *df = NULL;
    rc = 0;
    if (dump) {
        if (snprintf(tmp, sizeof tmp, "%s.tmp", dump) >= (int)sizeof tmp)
            rc = cli_failf("snake: --dump path is too long");
        else if (!(df = fopen(tmp, "w")))
            rc = cli_failf("snake: %s: cannot write the file", dump);
    }
    snake_lanes_start(&r.lanes, games, (uint64_t)seed);
    uint64_t explore_rng = (uint64_t)seed ^ 0x5EEDull;
    nc_power_mark(power);
    double period = rate > 0 ? 1.0 / rate : 0, next = nc_now_s(), t_start = next;
    long long misses = 0, ticks = 0;
    int board = rate > 0 && !no_board;
    while (!rc && !snake_lanes_done(&r.lanes)) {
        snake_lanes *sl = &r.lanes;
        int moves[LANES] = {0};
        double t0 = nc_now_s();
        if (r.m) rc = model_moves(&r, moves);
        for (int l = 0; l < LANES && !r.m; l++)
            if (sl->game_of[l] >= 0) moves[l] = snake_teacher(&sl->games[l]);
        double lat = nc_now_s() - t0;
        if (rc || (rc = record_latency(&r, lat))) break;
        ticks++;
        if (period > 0 && lat > period) misses++;
        for (int l = 0; l < LANES; l++) {
            if (sl->game_of[l] < 0) continue;
            const snake_game *g = &sl->games[l];
            int best = snake_teacher(g);
            r.decisions++;
            r.agree += best == moves[l];
            if (df) {
                char text[SNAKE_TEXT_CAP];
                snake_encode(g, text, sizeof text);
                fprintf(df, "%d\t%s\n", best, text);
            }
            if (explore > 0 && (double)(snake_rand(&explore_rng) >> 11) * 0x1p-53 < explore)
                moves[l] = (int)(snake_rand(&explore_rng) % SNAKE_MOVES);
        }
        snake_lanes_step(sl, moves);
        if (board && !snake_lanes_done(&r.lanes)) draw(&r, moves[0], lat, misses, ticks);
        if (period > 0) {
            next += period;
            if (next < nc_now_s()) next = nc_now_s(); /* behind: the next tick starts now */
            sleep_until(next);
        }
    }
    double t_end = nc_now_s(), joules = 0;
    nc_power_mark(power);
    int has_energy = nc_power_is_active(power) && nc_power_stop(power, t_end, &err) == NC_OK &&
                     nc_power_energy(power, t_start, t_end, &joules, &err) == NC_OK;
    if (df && (fclose(df) || rc || rename(tmp, dump))) {
        remove(tmp);
        if (!rc) rc = cli_failf("snake: %s: cannot write the file", dump);
    }
    if (!rc) {
        double p50 = percentile(r.lat, r.n_lat, 0.50), p95 = percentile(r.lat, r.n_lat, 0.95);
        double mx = r.n_lat ? r.lat[r.n_lat - 1] : 0;
        fprintf(stderr,
                "snake: %lld ticks, %lld decisions, latency per tick p50 %.3f ms p95 %.3f ms max "
                "%.3f ms, agreement with the teacher %.1f%%\n",
                ticks, r.decisions, p50 * 1e3, p95 * 1e3, mx * 1e3,
                r.decisions ? 100.0 * (double)r.agree / (double)r.decisions : 0.0);
        if (r.m) decision_crossings_print(stderr, "snake", r.m);
        if (has_energy)
            fprintf(stderr,
                    "snake: energy %.3f J in %.3f s (mean power %.3f W, %.4f J per decision; %s)\n",
                    joules, t_end - t_start, joules / (t_end - t_start),
                    r.decisions ? joules / (double)r.decisions : 0.0, power->domain);
        printf("games %d, mean score %.2f, deadline misses %lld\n", games,
               (double)r.lanes.score_sum / games, misses);
        fflush(stdout);
    }
    free(r.lat);
    nc_power_close(power);
    tok_free(r.tok);
    decision_free(r.m);
    return rc;
}
