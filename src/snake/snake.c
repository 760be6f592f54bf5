/* The Snake environment, its teacher and its text encoding (snake.h). */
#include "snake/snake.h"

#include <stdio.h>
#include <string.h>

static const int DX[SNAKE_MOVES] = {0, 1, 0, -1}, DY[SNAKE_MOVES] = {-1, 0, 1, 0};
static const char *const MARKERS[SNAKE_MOVES] = {"[UP]", "[RIGHT]", "[DOWN]", "[LEFT]"};

const char *snake_move_marker(int move) { return MARKERS[move]; }

/* splitmix64: one 64-bit state, good enough for food placement. */
uint64_t snake_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Which cells the body covers; the tail counts unless skip_tail. */
static void occupancy(const snake_game *g, unsigned char *occ, int skip_tail) {
    memset(occ, 0, SNAKE_CELLS);
    for (int i = 0; i < g->len - (skip_tail ? 1 : 0); i++)
        occ[g->y[i] * SNAKE_W + g->x[i]] = 1;
}

static void place_food(snake_game *g) {
    unsigned char occ[SNAKE_CELLS];
    occupancy(g, occ, 0);
    int free_cells = SNAKE_CELLS - g->len;
    g->food_x = g->food_y = -1;
    if (free_cells <= 0) return;
    int pick = (int)(snake_rand(&g->rng) % (uint64_t)free_cells);
    for (int c = 0; c < SNAKE_CELLS; c++)
        if (!occ[c] && pick-- == 0) {
            g->food_x = c % SNAKE_W;
            g->food_y = c / SNAKE_W;
            return;
        }
}

void snake_reset(snake_game *g, uint64_t seed) {
    memset(g, 0, sizeof *g);
    g->rng = seed;
    g->len = 3;
    for (int i = 0; i < g->len; i++) {
        g->x[i] = SNAKE_W / 2;
        g->y[i] = SNAKE_H / 2 + i;
    }
    place_food(g);
}

static int eats(const snake_game *g, int x, int y) { return x == g->food_x && y == g->food_y; }

/* The move hits a wall or the body (the tail moves away unless it eats). */
static int hits(const snake_game *g, int move, const unsigned char *occ_no_tail,
                const unsigned char *occ) {
    int x = g->x[0] + DX[move], y = g->y[0] + DY[move];
    if (x < 0 || y < 0 || x >= SNAKE_W || y >= SNAKE_H) return 1;
    return (eats(g, x, y) ? occ : occ_no_tail)[y * SNAKE_W + x];
}

int snake_step(snake_game *g, int move) {
    if (g->over) return 0;
    unsigned char occ[SNAKE_CELLS], occ_nt[SNAKE_CELLS];
    occupancy(g, occ, 0);
    occupancy(g, occ_nt, 1);
    g->steps++;
    if (move < 0 || move >= SNAKE_MOVES || hits(g, move, occ_nt, occ)) {
        g->over = 1;
        return 0;
    }
    int x = g->x[0] + DX[move], y = g->y[0] + DY[move], ate = eats(g, x, y);
    if (ate && g->len < SNAKE_CELLS) g->len++;
    memmove(g->x + 1, g->x, (size_t)(g->len - 1) * sizeof g->x[0]);
    memmove(g->y + 1, g->y, (size_t)(g->len - 1) * sizeof g->y[0]);
    g->x[0] = x;
    g->y[0] = y;
    if (ate) {
        g->score++;
        g->since_food = 0;
        place_food(g);
        if (g->food_x < 0) g->over = 1; /* the board is full: won */
    } else if (++g->since_food >= SNAKE_STARVE) {
        g->over = 1;
    }
    return ate;
}

/* Free cells reachable from (x, y) (itself included) with occ blocked. */
static int reachable(const unsigned char *occ, int x, int y) {
    unsigned char seen[SNAKE_CELLS];
    int stack[SNAKE_CELLS], n = 0, count = 0;
    memcpy(seen, occ, SNAKE_CELLS);
    seen[y * SNAKE_W + x] = 1;
    stack[n++] = y * SNAKE_W + x;
    while (n) {
        int c = stack[--n], cx = c % SNAKE_W, cy = c / SNAKE_W;
        count++;
        for (int m = 0; m < SNAKE_MOVES; m++) {
            int nx = cx + DX[m], ny = cy + DY[m];
            if (nx < 0 || ny < 0 || nx >= SNAKE_W || ny >= SNAKE_H || seen[ny * SNAKE_W + nx])
                continue;
            seen[ny * SNAKE_W + nx] = 1;
            stack[n++] = ny * SNAKE_W + nx;
        }
    }
    return count;
}

static int manhattan(int x0, int y0, int x1, int y1) {
    return (x0 > x1 ? x0 - x1 : x1 - x0) + (y0 > y1 ? y0 - y1 : y1 - y0);
}

void snake_view_of(const snake_game *g, int move, snake_view *v) {
    unsigned char occ[SNAKE_CELLS], occ_nt[SNAKE_CELLS];
    occupancy(g, occ, 0);
    occupancy(g, occ_nt, 1);
    memset(v, 0, sizeof *v);
    v->dead = hits(g, move, occ_nt, occ);
    if (v->dead) return;
    int x = g->x[0] + DX[move], y = g->y[0] + DY[move];
    /* after the move the head is at (x, y), the rest of the body moved up
     * one place: block it (the old tail stays only when eating) */
    unsigned char *after = eats(g, x, y) ? occ : occ_nt;
    int grown = g->len + eats(g, x, y);
    v->open = reachable(after, x, y) >= grown;
    v->closer = g->food_x >= 0 && manhattan(x, y, g->food_x, g->food_y) <
                                      manhattan(g->x[0], g->y[0], g->food_x, g->food_y);
}

int snake_teacher(const snake_game *g) {
    int best = 0, best_score = -1;
    for (int m = 0; m < SNAKE_MOVES; m++) {
        snake_view v;
        snake_view_of(g, m, &v);
        int s = v.dead ? 0 : 1 + 4 * v.open + 2 * v.closer;
        if (s > best_score) {
            best = m;
            best_score = s;
        }
    }
    return best;
}

int snake_encode(const snake_game *g, char *buf, size_t cap) {
    size_t o = 0;
    for (int m = 0; m < SNAKE_MOVES; m++) {
        snake_view v;
        snake_view_of(g, m, &v);
        char *at = o < cap ? buf + o : NULL; /* past cap: only count */
        size_t room = o < cap ? cap - o : 0;
        int n = v.dead ? snprintf(at, room, "%s%s dead", m ? " " : "", MARKERS[m])
                       : snprintf(at, room, "%s%s ok %s %s", m ? " " : "",
                                  MARKERS[m], v.open ? "open" : "trap",
                                  v.closer ? "closer" : "farther");
        o += (size_t)n;
    }
    return (int)o;
}

int snake_draw(const snake_game *g, char *buf, size_t cap) {
    char b[SNAKE_H][SNAKE_W];
    memset(b, '.', sizeof b);
    if (g->food_x >= 0) b[g->food_y][g->food_x] = '*';
    for (int i = g->len - 1; i >= 0; i--)
        b[g->y[i]][g->x[i]] = i ? 'o' : 'H';
    size_t o = 0;
    for (int y = 0; y < SNAKE_H; y++) {
        int n = snprintf(o < cap ? buf + o : NULL, o < cap ? cap - o : 0, "%.*s\n", SNAKE_W, b[y]);
        o += (size_t)n;
    }
    return (int)o;
}
