/* The parity gate: the acceptance rule for a converted or compressed
 * encoder (docs/encoders-ane.md). A candidate encoder engine (e.g. a bundle
 * through the fp16 interpreter or on the ANE) is compared with a reference
 * encoder engine (the CPU engine on the original folder) on a fixture set:
 *   - argmax agreement on every decision must be 100% (MLM: every real
 *     position; classifier: every input);
 *   - max |p_cpu - p_cand| over every probability must be <= 0.02;
 *   - every candidate output finite, and identical over repeated runs;
 *   - per-layer max/mean |error| of the hidden states (real positions only)
 *     to locate a failure;
 *   - per input the CPU's top-1/top-2 logit margin beside the logit error:
 *     a margin below twice the error is "not certified" (reported, not a
 *     failure: the agreement there is luck, not a guarantee).
 * A model without a head (embeddings) is gated on the pooled vectors:
 * cosine similarity >= 0.999 for every input (nectar's rule; docs/encoders-ane.md
 * states the gate for probabilities only). */
#ifndef NC_ENGINE_ENGINE_PARITY_H
#define NC_ENGINE_ENGINE_PARITY_H

#include <stdio.h>

#include "engine/engine.h"

#define ENGINE_PARITY_MAX_DRIFT 0.02
#define ENGINE_PARITY_MIN_COSINE 0.999

typedef enum {
    ENGINE_PARITY_MLM,
    ENGINE_PARITY_CLASSIFIER,
    ENGINE_PARITY_EMBEDDING
} engine_parity_kind;

typedef struct engine_parity_input {
    int n_tokens;    /* real tokens */
    int n_decisions; /* argmax decisions (positions or 1) */
    int n_agree;
    double logit_err;  /* max |logit_cpu - logit_cand| (embeddings: max |pooled| error) */
    double margin;     /* smallest CPU top-1 minus top-2 logit over its decisions */
    double prob_drift; /* max |p_cpu - p_cand| */
    double cosine;     /* pooled vectors (embeddings) */
    int certified;     /* every decision has margin >= 2 x its logit error */
} engine_parity_input;

typedef struct engine_parity_report {
    engine_parity_kind kind;
    int n_inputs, n_decisions, n_agree, n_not_certified;
    double max_prob_drift, min_cosine;
    int is_finite, is_deterministic, repeats;
    int n_hidden; /* num_hidden_layers + 1 */
    double layer_max[MODERNBERT_MAX_LAYERS + 1], layer_mean[MODERNBERT_MAX_LAYERS + 1];
    double layer_ref_max[MODERNBERT_MAX_LAYERS + 1]; /* max |h| of the CPU, for scale */
    engine_parity_input *inputs; /* n_inputs; free with engine_parity_report_free */
    int passed;
    char why[256]; /* first failed criterion, "" when passed */
} engine_parity_report;

/* Runs both encoder engines (engine_encode) on n rows of seq ids (mask: 1
 * real, 0 pad; NULL: all real), the candidate `repeats` (>= 2) times. Fails
 * when an engine is no encoder, when the two differ in shape or head (the
 * gate compares like with like), or when an engine cannot run; the verdict
 * is in rep->passed. */
nc_status engine_parity_run(engine *ref, engine *cand, const int32_t *ids, const int32_t *mask,
                            int n, int seq, int repeats, engine_parity_report *rep, nc_error *err);
void engine_parity_report_free(engine_parity_report *rep);

/* The report as text: verdict, criteria, per-layer errors, per-input lines. */
void engine_parity_print(const engine_parity_report *rep, FILE *f);

#endif
