/* Kernels chosen by measurement, FFTW-wisdom style. For each slot (bf16
 * decoding and prompts under the precision contract NECTAR_BF16 chose
 * (cpu_select_bf16: "accurate", the default, or "fast"); Q8 and Q4
 * decoding), the candidates that keep the contract are timed on this
 * machine the first time, and the fastest is used and remembered in a
 * wisdom file per CPU (brand, family, model, stepping and the feature bits
 * the kernels depend on). A choice changes speed only: every candidate of
 * a slot meets the same contract.
 *
 * The wisdom file is text, one choice per line, tab-separated:
 *   # nectar kernel wisdom 7
 *   <cpu key> <TAB> <slot> <TAB> <kernel> <TAB> <rate> [<TAB> engine]
 * where "engine" marks a choice made by timing a model's decoding in the
 * engine (cpu_wisdom_keep: `nectar bench --tune`), not the probe.
 * A file that does not parse is reported in one line (file:line: what),
 * ignored, measured again and rewritten; a kernel this build does not know
 * is measured again. The library reads no environment: the command line
 * passes the path (NECTAR_WISDOM, else $XDG_CACHE_HOME/nectar/wisdom). */
#ifndef NC_CPU_WISDOM_H
#define NC_CPU_WISDOM_H

#include <stddef.h>

#include "base/error.h"
#include "base/pool.h"
#include "cpu/cpu_kernels.h"

/* bf16 decoding and prompts (under the bf16 contract), Q8 and Q4 decoding
 * (qgemv.h: the table's tile or a row-sequential kernel; any contract). */
typedef enum {
    CPU_SLOT_DECODE_BF16,
    CPU_SLOT_PROMPT_BF16,
    CPU_SLOT_DECODE_Q8,
    CPU_SLOT_DECODE_Q4,
    CPU_SLOT_N
} cpu_slot;

/* Candidates per slot at most. A slot's list stops there, so a list that
 * reaches it may have lost kernels (test_cpu_wisdom fails on one that
 * does): the fast contract's bf16 decoding had 19 of 20 in December 2026. */
#define CPU_WISDOM_MAX_CANDIDATES 32

/* The longest wisdom path, its NUL included: the size of the callers'
 * buffers and of cpu_tuning.file. */
#define CPU_WISDOM_PATH_MAX 1024

typedef struct cpu_slot_report {
    char slot[32];   /* "decode-bf16-accurate", ... */
    char kernel[24]; /* the one in use */
    /* its measured rate, 0: not measured. Decoding: bytes per CPU-second of
     * the process x threads (GB/s had the threads had their cores);
     * prompts: one thread's GFLOP per CPU-second */
    double rate;
    const char *unit;
    /* "measured now", "from the wisdom file", "the only candidate",
     * "not measured (no wisdom)", "NECTAR_BF16=off" */
    const char *why;
    int n_candidates; /* measured now: every candidate's median rate */
    char cand_name[CPU_WISDOM_MAX_CANDIDATES][24];
    double cand_rate[CPU_WISDOM_MAX_CANDIDATES];
} cpu_slot_report;

typedef struct cpu_tuning {
    char cpu[192];                  /* the key the choices are kept under */
    char file[CPU_WISDOM_PATH_MAX]; /* the wisdom file, "off" for none */
    cpu_slot_report slot[CPU_SLOT_N];
    char note[320]; /* a wisdom file that did not parse or could not be written; "" */
} cpu_tuning;

/* Applies the choices for this CPU and the current bf16 contract to the
 * kernel tables: from `path` when it has them, else by timing the
 * candidates on `threads` threads (decoding over a 64 MiB matrix, more
 * than the L3 of most CPUs; prompts on one thread) and adding them to
 * `path`. path NULL: nothing read or written; measure != 0 then measures,
 * 0 keeps the defaults (the table's fp32 kernels in the accurate contract,
 * the first bf16 dot-product kernels in the fast one). Call it after
 * cpu_select_table/cpu_select_bf16, before a model runs. Fails only on out
 * of memory; file problems go to out->note. */
nc_status cpu_tune(const char *path, int measure, int threads, cpu_tuning *out, nc_error *err);
/* measure = CPU_TUNE_QUICK: one short round (tests: the choice is noise,
 * the file handling is what they check). */
#define CPU_TUNE_QUICK 2

/* The names of slot s's candidates under the current contract (the
 * default first); returns how many (at most cap are written). */
int cpu_tune_candidates(cpu_slot s, const char **names, int cap);

/* Uses kernel `name` for slot s, whatever was measured, and cpu_tune then
 * keeps it (tests, comparing kernels by hand: NECTAR_BF16=accurate,
 * decode=dp3-r8-pf1); NC_ERR_INVALID naming the candidates if the current
 * contract has no such kernel. cpu_select_bf16 clears what was forced
 * (cpu_tune_unforce) before it applies its own. */
nc_status cpu_tune_force(cpu_slot s, const char *name, nc_error *err);
void cpu_tune_unforce(void);
/* name NULL to cpu_tune_force: slot s is no longer forced (the kernel in
 * use stays until the next cpu_tune). cpu_tune_forced: the kernel forced
 * for slot s, NULL for none. */
const char *cpu_tune_forced(cpu_slot s);

/* The probe's ranking is not the engine's on every CPU (docs/performance.md:
 * on one Emerald Rapids VM the probe ranked `dp3-r4-pf2` 7% above
 * `fp32-widen`, which then decoded 4% faster), so a choice can be made by
 * timing a model's decoding instead: cpu_tune_shortlist gives the
 * candidates worth timing, slot s's default first, then the others by the
 * probe's rate, fastest first, at most cap (names[i], rates[i] in the slot's
 * unit; *n of them; one where the contract leaves no choice). The rates are
 * `known`'s where it holds every candidate's, measured under the current
 * contract (cpu_tune's report of the slot, "measured now": a fresh wisdom
 * file was just probed), else measured now on `threads` threads (quick: one
 * short round, for tests). cpu_wisdom_keep then writes the
 * engine's choice for this CPU and slot (under the current contract) to the wisdom file at path,
 * marked "engine", replacing the probe's line: 1 on success, 0 with the reason in note. */
nc_status cpu_tune_shortlist(cpu_slot s, const cpu_slot_report *known, int threads, int quick,
                             int cap, const char **names, double *rates, int *n, nc_error *err);
int cpu_wisdom_keep(const char *path, cpu_slot s, const char *kernel, double rate, char *note,
                    size_t note_cap);

/* The wisdom file a setting names: `setting` is NECTAR_WISDOM's value (a
 * path; "off": none; NULL or "": the default path from xdg_cache and
 * home, either NULL or empty when unset: xdg_cache/nectar/wisdom, else
 * home/.cache/nectar/wisdom, else none). *path is the path in buf, or NULL for none (buf then says
 * "off"). A path of cap bytes or more (cap - 1 characters fit) is NC_ERR_INVALID in one line naming
 * NECTAR_WISDOM, or XDG_CACHE_HOME / HOME for a default path made from them: a path that does not
 * fit is refused, never turned into "no wisdom" unnoticed. */
nc_status cpu_wisdom_path(const char *setting, const char *xdg_cache, const char *home, char *buf,
                          size_t cap, const char **path, nc_error *err);

/* cpu_tune(path, path != NULL, threads) the first time a process calls it;
 * every later call (any path, any threads) returns that call's choices and
 * touches neither the kernels nor the file: what every command and
 * nc_model_open that opens a CPU model calls, so the first open on a
 * machine measures and later ones read the file. Thread-safe. *out stays
 * valid for the process. */
nc_status cpu_tune_once(const char *path, int threads, const cpu_tuning **out, nc_error *err);
/* The next cpu_tune_once tunes again (the bf16 contract changed:
 * nc_set_bf16_contract). */
void cpu_tune_once_again(void);

/* The bf16 decode kernels as read patterns of the bandwidth probe
 * (cpu_membw.h): a program reads its weights through such a kernel, and on
 * a Zen 5 VM the engine's decode out-read every plain loop of the probe
 * (125% of it), so the ceiling must include them. cpu_decode_stream_kernels
 * names them (both contracts' candidates, at most cap); cpu_decode_stream
 * runs kernel number `kernel` once over `bytes` of bf16 rows at w (Qwen3-
 * 0.6B's layer products one after another, one pool loop each, as a decode
 * runs them) and returns the bytes it read (0: no such kernel, or no
 * memory for its vectors). */
int cpu_decode_stream_kernels(const char **names, int cap);
size_t cpu_decode_stream(nc_pool *pool, int kernel, const void *w, size_t bytes);

/* This CPU's key: vendor, brand, family/model/stepping and feature bits. */
void cpu_identity(char *out, size_t cap);

#endif
