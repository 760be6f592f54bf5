/* Games in lockstep (snake_lanes.h). */
#include "snake/snake_lanes.h"

static void start_next(snake_lanes *s, int lane) {
    s->game_of[lane] = s->next_game < s->n_games ? s->next_game++ : -1;
    if (s->game_of[lane] >= 0) snake_reset(&s->games[lane], s->seed + (uint64_t)s->game_of[lane]);
}

void snake_lanes_start(snake_lanes *s, int n_games, uint64_t seed) {
    s->next_game = s->games_done = 0;
    s->n_games = n_games;
    s->seed = seed;
    s->score_sum = 0;
    for (int l = 0; l < SNAKE_LANES; l++)
        start_next(s, l);
}

void snake_lanes_texts(const snake_lanes *s, char texts[SNAKE_LANES][SNAKE_TEXT_CAP]) {
    int first = -1;
    for (int l = 0; l < SNAKE_LANES; l++)
        if (s->game_of[l] >= 0) {
            snake_encode(&s->games[l], texts[l], SNAKE_TEXT_CAP);
            if (first < 0) first = l;
        }
    for (int l = 0; l < SNAKE_LANES; l++)
        if (s->game_of[l] < 0) {
            if (first >= 0) snake_encode(&s->games[first], texts[l], SNAKE_TEXT_CAP);
            else texts[l][0] = '\0';
        }
}

void snake_lanes_step(snake_lanes *s, const int *moves) {
    for (int l = 0; l < SNAKE_LANES; l++) {
        if (s->game_of[l] < 0) continue;
        snake_game *g = &s->games[l];
        snake_step(g, moves[l]);
        if (g->over) {
            s->score_sum += g->score;
            s->games_done++;
            start_next(s, l);
        }
    }
}

int snake_lanes_done(const snake_lanes *s) {
    return s->games_done >= s->n_games;
}
