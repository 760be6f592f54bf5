/* The Snake workload of `bench --compare --snake N` (docs/decision.md):
 * the heuristic teacher plays N seeded games three lanes at a time, as
 * `nectar snake --teacher` does, and every tick becomes one item: the three
 * lanes' texts, one a line. The teacher's trajectories fix the work, so
 * every candidate decides exactly the same ticks in the same order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/candidate.h"
#include "bench/sha256.h"
#include "snake/snake_lanes.h"

nc_status nc_workload_snake(int games, uint64_t seed, nc_bench_workload *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    if (games < 1) return nc_fail(err, NC_ERR_INVALID, "--snake %d: at least one game", games);
    char *buf = NULL;
    size_t len = 0, n = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return nc_fail(err, NC_ERR_NOMEM, "workload: out of memory");
    snake_lanes s;
    snake_lanes_start(&s, games, seed);
    while (!snake_lanes_done(&s)) {
        char texts[SNAKE_LANES][SNAKE_TEXT_CAP];
        int moves[SNAKE_LANES] = {0};
        snake_lanes_texts(&s, texts);
        for (int l = 0; l < SNAKE_LANES; l++) {
            fprintf(f, "%s%c", texts[l], l + 1 < SNAKE_LANES ? '\n' : '\0');
            if (s.game_of[l] >= 0) moves[l] = snake_teacher(&s.games[l]);
        }
        snake_lanes_step(&s, moves);
        n++;
    }
    if (fclose(f) || !buf) {
        free(buf);
        return nc_fail(err, NC_ERR_NOMEM, "workload: out of memory");
    }
    out->storage = buf;
    out->items = calloc(n, sizeof *out->items);
    if (!out->items) {
        nc_workload_free(out);
        return nc_fail(err, NC_ERR_NOMEM, "workload: out of memory");
    }
    /* the items are NUL-terminated in the buffer; its bytes are the hash's */
    for (char *p = buf; out->n_items < n; p += out->items[out->n_items++].len + 1) {
        out->items[out->n_items].data = p;
        out->items[out->n_items].len = strlen(p);
    }
    nc_sha256_hex(buf, len, out->sha256);
    snprintf(out->kind, sizeof out->kind, "snake");
    snprintf(out->path, sizeof out->path,
             "teacher's games, seeds %llu..%llu, %d lanes (%zu ticks)", (unsigned long long)seed,
             (unsigned long long)seed + (unsigned long long)games - 1, SNAKE_LANES, n);
    return NC_OK;
}
