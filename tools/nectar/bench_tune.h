/* `nectar bench -m DIR --tune`: the decode kernel chosen by timing this
 * model's decoding in the engine, not the bandwidth probe alone. The probe
 * ranks a slot's candidates on synthetic products; on some CPUs the engine
 * ranks them otherwise (docs/performance.md: the probe's pick decoded 4%
 * slower than the default on an Emerald Rapids VM, and 25% faster on a Zen
 * 5 one). So the probe shortlists (cpu_tune_shortlist: the default and its
 * three fastest), the engine decodes the same tokens with each in
 * interleaved rounds, and the fastest by weight bytes per CPU-second is
 * kept in the wisdom file, marked "engine" (cpu_wisdom_keep). Every
 * candidate keeps the precision contract, so the choice changes speed
 * only. bf16 and Q8 weights: a Q4 model's rows are laid out for its kernel
 * when it loads, so its kernel cannot change under a loaded model. */
#ifndef NC_TOOLS_BENCH_TUNE_H
#define NC_TOOLS_BENCH_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "cpu/cpu_wisdom.h"
#include "engine/engine.h"

/* Tokens per timed decode and interleaved rounds (the median decides). */
#define BENCH_TUNE_TOKENS 48
#define BENCH_TUNE_ROUNDS 5

/* Tunes m's decode slot on sequence s (a context of at least
 * BENCH_TUNE_TOKENS + 1), decoding tokens[0..BENCH_TUNE_TOKENS) into
 * logits, and reports to out. *tuning is re-read from the wisdom file
 * afterwards, so it says what the rest of the run uses. Nothing to choose
 * (a Q4 or fp32 model, one candidate, a kernel forced by NECTAR_BF16) is a
 * line in out, not a failure; so is a wisdom file that cannot be written
 * (the choice then holds for this run). Fails on an engine error. The
 * caller has refused a run with no wisdom file to keep the choice in
 * ((*tuning)->file "off": NECTAR_WISDOM=off), before opening the model. */
nc_status bench_tune(engine *m, engine_seq *s, const int32_t *tokens, float *logits, int threads,
                     FILE *out, const cpu_tuning **tuning, nc_error *err);

#endif
