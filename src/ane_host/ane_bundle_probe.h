/* `nectar ane probe --bundle DIR`: the probe on the user's own programs.
 * Every program of a bundle is compiled (and loaded) on the device whole,
 * then as one program per sequence bucket (its functions of one S), then
 * one program per function (views written with ane_ladder_write_view, no
 * weight copies), and the report recommends a form for each disputed
 * construct: the program split that compiles, and for each kernel the
 * device refuses even alone the compile options of the construct it holds
 * (docs/lowering.md, "Lowering forms"). */
#ifndef NC_ANE_HOST_ANE_BUNDLE_PROBE_H
#define NC_ANE_HOST_ANE_BUNDLE_PROBE_H

#include <stdio.h>

#include "ane_host/ane_device.h"
#include "bundle/forms_profile.h"

typedef struct ane_bundle_probe_prog {
    char path[64]; /* "layer_03/model.mil" */
    int n_fns, n_buckets;
    int whole_ok, buckets_ok, fns_ok;   /* the counts that compiled */
    char whole_error[400];              /* the framework's text, "" when ok */
    char bucket_error[400], fn_error[400]; /* the first refusal at each level */
    char refused_kernels[200];          /* kernels refused alone: "kv,attn" */
    char kernel_error[4][240];          /* the first refusal of each of the first four */
    int fn_ok[LOWER_MAX_FUNCS];         /* per function alone: 1 compiled, 0 refused */
} ane_bundle_probe_prog;

/* Probes every program of bundle (Qwen3 or encoder) on dev, building the
 * views under work (created); *out (malloc'd, *n entries), *opens the
 * model_open calls it cost. Refusals are results; fails only when the
 * bundle cannot be read or the views written. */
nc_status ane_bundle_probe(const ane_device *dev, const char *bundle, const char *work,
                           ane_bundle_probe_prog **out, int *n, int *opens, nc_error *err);

/* The outcome per lowering form (forms_profile.h) of a probe of a decoder
 * bundle; 0 for an encoder bundle (its manifest records no such forms). */
nc_status ane_bundle_probe_forms(const char *bundle, const ane_bundle_probe_prog *p, int n,
                                 lower_forms_tally *t, int *has, nc_error *err);

/* The recommendations, one line each, into f. */
void ane_bundle_probe_recommend(const ane_bundle_probe_prog *p, int n, FILE *f);

/* The table a person reads. */
void ane_bundle_probe_print(const ane_bundle_probe_prog *p, int n, FILE *f);

#endif
