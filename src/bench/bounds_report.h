/* `nectar bounds` results as one JSON document (the --json output, fields in
 * docs/measuring.md) and the readable table printed from that same document,
 * so the two views can never disagree. */
#ifndef NC_BENCH_BOUNDS_REPORT_H
#define NC_BENCH_BOUNDS_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "bench/bounds.h"

typedef struct nc_bounds_query {
    int is_decoder; /* qwen3 when set, else the encoder shape */
    nc_encoder_shape encoder;
    nc_qwen3_shape decoder;
    const char *source;           /* where the shape came from: "--like qwen3-0.6b", a path */
    int64_t batch, seq_len;       /* the forward pass / prefill shape */
    int64_t context;              /* decoder: cached positions read per decoded token */
    double bandwidth_bytes_per_s; /* <= 0: not given, no bandwidth floor */
    double compute_flops_per_s;   /* <= 0: not given, no compute floor */
    const char *format;           /* one weight format, or NULL for all */
    int has_amdahl;
    double fraction, speedup; /* speedup may be infinity */
} nc_bounds_query;

nc_status nc_bounds_report(const nc_bounds_query *q, json_t **out, nc_error *err);
void nc_bounds_print_table(FILE *f, const json_t *report);

#endif
