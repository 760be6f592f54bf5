/* The study's FP16 gate on the whole decision (docs/decision.md): a
 * candidate (a bundle's NE region in the interpreter's fp16 mode, fp16 or
 * palettized weights) against the reference (the CPU engine on the folder)
 * on a fixture batch: 100% argmax agreement (marker and action), finite and
 * deterministic outputs, at most 0.02 absolute drift in the calibrated and
 * the action probabilities. Reported beside the gate: per input the margin
 * certificate top1(z) - top2(z) > 2 delta of the marker logits z (delta:
 * that input's largest logit error; "not certified" is a diagnostic, not a
 * failure), the study's bound delta / (2T) on the calibrated drift, and
 * the largest drift of every encoder and head layer's output. */
#ifndef NC_DECIDE_DECISION_PARITY_H
#define NC_DECIDE_DECISION_PARITY_H

#include <stdio.h>

#include "decide/decision.h"

#define DECISION_GATE_DRIFT 0.02

typedef struct decision_parity_report {
    int n, K, A, n_enc_layers, n_head_layers;
    int marker_misses, action_misses; /* inputs whose argmax differs */
    double drift_probs, drift_cal, drift_act, logit_err; /* max absolute */
    int finite, deterministic;
    double *layer_err; /* [n_enc_layers + n_head_layers]: max |candidate - reference| */
    double *layer_scale; /* the same layers' max |reference| */
    double *margin, *delta; /* [n]: top1 - top2 of the reference logits; the logit error */
    int n_uncertified;
    double temperature;
    int passed;
} decision_parity_report;

/* ref and cand on the batch (ids, mask [n][seq]), the candidate twice. */
nc_status decision_parity_run(decision_model *ref, decision_model *cand, const int32_t *ids,
                              const int32_t *mask, int n, int seq, decision_parity_report *rep,
                              nc_error *err);
void decision_parity_print(const decision_parity_report *rep, FILE *f);
void decision_parity_report_free(decision_parity_report *rep);

#endif
