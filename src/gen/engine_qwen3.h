/* The cpu Qwen3 engine (src/models/qwen3.h) behind the generation seam. */
#ifndef NC_GEN_ENGINE_QWEN3_H
#define NC_GEN_ENGINE_QWEN3_H

#include "gen/engine.h"
#include "models/qwen3.h"

/* Borrows m and s (the caller frees them after the engine is done). */
gen_engine gen_engine_qwen3(qwen3_model *m, qwen3_state *s);

#endif
