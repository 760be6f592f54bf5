/* A small deterministic Snake (docs/decision.md): a 10 x 10 board, a seeded
 * generator for the food, four absolute moves; a heuristic teacher; and the
 * text a decision model reads for one tick (K = 4 markers, one per move).
 * Nothing here reads a clock or the environment: a seed fixes a game given
 * its moves. */
#ifndef NC_SNAKE_SNAKE_H
#define NC_SNAKE_SNAKE_H

#include <stddef.h>
#include <stdint.h>

#define SNAKE_W 10
#define SNAKE_H 10
#define SNAKE_CELLS (SNAKE_W * SNAKE_H)
#define SNAKE_MOVES 4 /* 0 up, 1 right, 2 down, 3 left: the marker and action order */
/* A game also ends after this many moves without food (no endless loops). */
#define SNAKE_STARVE (2 * SNAKE_CELLS)

typedef struct snake_game {
    int x[SNAKE_CELLS], y[SNAKE_CELLS]; /* body, head first */
    int len;
    int food_x, food_y; /* -1 when the board is full */
    uint64_t rng;
    int score; /* food eaten */
    int steps, since_food;
    int over;
} snake_game;

/* What the model is told about one move (and what the teacher decides on). */
typedef struct snake_view {
    int dead;   /* the move hits a wall or the body */
    int open;   /* the free cells reachable after it are at least the length */
    int closer; /* it brings the head nearer the food (Manhattan) */
} snake_view;

/* A new game: length 3 in the middle heading up, food from the seed. */
void snake_reset(snake_game *g, uint64_t seed);
/* One move (0..3). Returns 1 when food was eaten. No-op once over. */
int snake_step(snake_game *g, int move);
void snake_view_of(const snake_game *g, int move, snake_view *v);
/* The teacher: among the moves that do not die, an open one first, then
 * one that gets closer to the food, then the lowest move number. */
int snake_teacher(const snake_game *g);
/* The tick's text, e.g. "[UP] ok open closer [RIGHT] dead [DOWN] ok trap
 * farther [LEFT] ok open farther" (docs/decision.md). Returns its length
 * (truncated to cap - 1 like snprintf). */
int snake_encode(const snake_game *g, char *buf, size_t cap);
/* The board as SNAKE_H lines of SNAKE_W: '.' free, 'H' head, 'o' body, '*' food. */
int snake_draw(const snake_game *g, char *buf, size_t cap);
/* The marker text of a move: "[UP]", ... */
const char *snake_move_marker(int move);
/* The seeded generator the game uses (also for exploration moves). */
uint64_t snake_rand(uint64_t *state);

#endif
