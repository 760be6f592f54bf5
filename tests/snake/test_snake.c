/* The Snake environment (src/snake) on hand-built boards whose answers are
 * worked out here: moves, walls, the body, the tail that moves away, food
 * and growth, starvation, the views (dead / open / closer), the teacher's
 * order of preference, the text encoding, and that a seed fixes a game. */
#include "../test.h"
#include "snake/snake.h"

/* A snake of n cells at (xs[i], ys[i]), head first, food at (fx, fy). */
static void board(snake_game *g, const int *xs, const int *ys, int n, int fx, int fy) {
    snake_reset(g, 7);
    g->len = n;
    for (int i = 0; i < n; i++) {
        g->x[i] = xs[i];
        g->y[i] = ys[i];
    }
    g->food_x = fx;
    g->food_y = fy;
}

static void test_reset_and_seed(void) {
    snake_game a, b, c;
    snake_reset(&a, 42);
    snake_reset(&b, 42);
    snake_reset(&c, 43);
    CHECK(a.len == 3 && a.x[0] == 5 && a.y[0] == 5 && a.x[2] == 5 && a.y[2] == 7);
    CHECK(a.food_x >= 0 && !(a.food_x == 5 && a.food_y >= 5 && a.food_y <= 7));
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    /* the same moves from the same seed give the same game, food included */
    int moves[] = {3, 3, 0, 0, 1, 1, 1, 2, 2, 3};
    for (int i = 0; i < 10; i++) {
        snake_step(&a, moves[i]);
        snake_step(&b, moves[i]);
    }
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    int differ = c.food_x != b.food_x || c.food_y != b.food_y;
    snake_game d;
    for (uint64_t s = 44; !differ && s < 60; s++) {
        snake_reset(&d, s);
        differ = d.food_x != c.food_x || d.food_y != c.food_y;
    }
    CHECK(differ); /* the seed moves the food */
}

static void test_walls_body_and_tail(void) {
    snake_game g;
    /* head at the top edge heading up */
    board(&g, (int[]){4, 4, 4}, (int[]){0, 1, 2}, 3, 9, 9);
    snake_step(&g, 0);
    CHECK(g.over && g.score == 0);
    /* reversing into the neck is a body hit */
    board(&g, (int[]){4, 4, 4}, (int[]){3, 4, 5}, 3, 9, 9);
    snake_step(&g, 2);
    CHECK(g.over);
    /* a 2x2 loop: the head may enter the cell the tail leaves */
    board(&g, (int[]){4, 5, 5, 4}, (int[]){4, 4, 5, 5}, 4, 9, 9);
    snake_step(&g, 2);
    CHECK(!g.over && g.x[0] == 4 && g.y[0] == 5 && g.len == 4);
    /* ...but not when it eats there (the tail stays) */
    board(&g, (int[]){4, 5, 5, 4}, (int[]){4, 4, 5, 5}, 4, 4, 5);
    snake_view v;
    snake_view_of(&g, 2, &v);
    CHECK(v.dead);
}

static void test_food_growth_and_starvation(void) {
    snake_game g;
    board(&g, (int[]){4, 4, 4}, (int[]){4, 5, 6}, 3, 4, 3);
    CHECK(snake_step(&g, 0) == 1);
    CHECK(g.score == 1 && g.len == 4 && g.x[3] == 4 && g.y[3] == 6 && g.since_food == 0);
    CHECK(g.food_x >= 0 && !(g.food_x == 4 && g.food_y >= 3 && g.food_y <= 6));
    /* circle without food until starvation */
    board(&g, (int[]){4, 5, 5, 4}, (int[]){4, 4, 5, 5}, 4, 9, 9);
    int loop[] = {2, 1, 0, 3}, n = 0;
    while (!g.over && n < 10 * SNAKE_STARVE)
        snake_step(&g, loop[n++ % 4]);
    CHECK(g.over && n == SNAKE_STARVE);
}

static void test_views_and_teacher(void) {
    snake_game g;
    /* head (0, 5) at the left wall heading up, food up-right at (3, 2) */
    board(&g, (int[]){0, 0, 0}, (int[]){5, 6, 7}, 3, 3, 2);
    snake_view v[4];
    for (int m = 0; m < 4; m++)
        snake_view_of(&g, m, &v[m]);
    CHECK(!v[0].dead && v[0].open && v[0].closer);  /* up */
    CHECK(!v[1].dead && v[1].open && v[1].closer);  /* right */
    CHECK(v[2].dead);                               /* down: the neck */
    CHECK(v[3].dead);                               /* left: the wall */
    CHECK(snake_teacher(&g) == 0);                  /* ties go to the lowest move */
    char text[256];
    int n = snake_encode(&g, text, sizeof text);
    const char *want = "[UP] ok open closer [RIGHT] ok open closer [DOWN] dead [LEFT] dead";
    CHECKF(!strcmp(text, want) && n == (int)strlen(want), "got \"%s\"", text);
    /* a trap: the head (0, 2) under a 1 x 2 pocket closed by the body at x = 1
     * (tail at (2, 0)); up leaves 2 free cells for a length of 5, down is open */
    board(&g, (int[]){0, 1, 1, 1, 2}, (int[]){2, 2, 1, 0, 0}, 5, 9, 9);
    snake_view_of(&g, 0, &v[0]);
    snake_view_of(&g, 2, &v[2]);
    CHECK(!v[0].dead && !v[0].open);
    CHECK(!v[2].dead && v[2].open && v[2].closer);
    CHECK(snake_teacher(&g) == 2);
    n = snake_encode(&g, text, sizeof text);
    want = "[UP] ok trap farther [RIGHT] dead [DOWN] ok open closer [LEFT] dead";
    CHECKF(!strcmp(text, want), "got \"%s\"", text);
    /* a short buffer truncates like snprintf and still says the full length */
    char small[8];
    CHECK(snake_encode(&g, small, sizeof small) == n && !strcmp(small, "[UP] ok"));
}

static void test_draw(void) {
    snake_game g;
    board(&g, (int[]){0, 1}, (int[]){0, 0}, 2, 9, 9);
    char b[SNAKE_CELLS + SNAKE_H + 1];
    CHECK(snake_draw(&g, b, sizeof b) == SNAKE_CELLS + SNAKE_H);
    CHECK(!strncmp(b, "Ho........\n", 11));
    CHECK(b[(SNAKE_W + 1) * 9 + 9] == '*');
}

int main(void) {
    RUN(test_reset_and_seed);
    RUN(test_walls_body_and_tail);
    RUN(test_food_growth_and_starvation);
    RUN(test_views_and_teacher);
    RUN(test_draw);
    return nc_test_exit_code();
}
