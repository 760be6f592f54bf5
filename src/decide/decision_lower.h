/* The decision model's NE region as one ANE program (docs/decision.md,
 * "The partitioned candidate"): the encoder program of modernbert_lower.h
 * with, after its final norm, the type-embedding addition (a 1x1 conv of a
 * one-hot input `types` [B, K+1, 1, L] by the transposed type table) and
 * the H head layers, in the same function per (batch, sequence) shape. The
 * function's output `hidden` [B, D, 1, L] is the head layers' output, which
 * the CPU tail (decision_tail) reads. The CPU keeps the tokenizer, the token
 * embeddings and the embedding LayerNorm before the region. */
#ifndef NC_DECIDE_DECISION_LOWER_H
#define NC_DECIDE_DECISION_LOWER_H

#include "lower/modernbert_compile.h"

#define DECISION_PARTITION_FILE "partition.json"

/* 1 when dir holds decision.json (a decision-model folder). */
int decision_is_dir(const char *dir);

/* `nectar compile` of a decision-model folder: the encoder bundle of
 * lower_modernbert_compile (o->model_dir, shapes, threads) whose program
 * also holds the type addition and head layers (o->lower.append is set
 * here), plus BUNDLE/partition.json naming which parts run where. On
 * failure nothing is left at o->out_dir. */
nc_status decision_compile(mb_compile_options *o, mb_compile_report *rep, nc_error *err);

/* 1 when BUNDLE holds partition.json (a decision bundle). */
int decision_is_bundle(const char *bundle);

#endif
