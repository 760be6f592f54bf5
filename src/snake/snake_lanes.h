/* Several seeded games in lockstep, one per row of the decision model's
 * batch (docs/decision.md: `nectar snake` plays B = 3 lanes). Game i of a
 * run uses seed + i; a lane whose game ends starts the next one; once no
 * game is left to start the lane idles, and its text repeats a live lane's
 * so the batch keeps its shape. */
#ifndef NC_SNAKE_SNAKE_LANES_H
#define NC_SNAKE_SNAKE_LANES_H

#include "snake/snake.h"

#define SNAKE_LANES 3
#define SNAKE_TEXT_CAP 256

typedef struct snake_lanes {
    snake_game games[SNAKE_LANES];
    int game_of[SNAKE_LANES]; /* -1: the lane is idle */
    int next_game, n_games, games_done;
    uint64_t seed;
    long long score_sum; /* of the games that ended */
} snake_lanes;

void snake_lanes_start(snake_lanes *s, int n_games, uint64_t seed);
/* Every lane's text (an idle lane: the first live lane's). */
void snake_lanes_texts(const snake_lanes *s, char texts[SNAKE_LANES][SNAKE_TEXT_CAP]);
/* One move per live lane; an ended game is scored and its lane starts the
 * next game. */
void snake_lanes_step(snake_lanes *s, const int *moves);
int snake_lanes_done(const snake_lanes *s);

#endif
