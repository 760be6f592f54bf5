/* The compile ladder's memory: the forms a refused program is tried in,
 * in an order that is data (ANE_LADDER_ORDER, or the profile's
 * "ladder_order" list), and each outcome on a device -- per program and
 * form, with the framework's error text -- kept in the probe profile
 * (the JSON `nectar ane probe` saves, member "ladder"), so the next run
 * starts at the form that worked instead of climbing the ladder again.
 *
 * Outcomes are keyed by the device ("real", or the fake's settings:
 * "fake:reject=gather") and by the program's text (an FNV-1a hash of its
 * model.mil, so a recompiled program is a new one). Where the profile lives:
 * NECTAR_ANE_PROFILE names the file ("off": none); unset, the real device
 * uses <per-user cache>/nectar-ane/profile.json (ane_stage_default_root)
 * and the fake device records nothing, so tests touch no user file unless
 * they say where. */
#ifndef NC_ANE_HOST_ANE_LADDER_H
#define NC_ANE_HOST_ANE_LADDER_H

#include <stddef.h>

#include "base/error.h"
#include "bundle/forms_profile.h"
#include "bundle/manifest.h"
#include "mil/ir.h"

/* A rung: a form a refused program can take. */
typedef enum ane_rung {
    ANE_RUNG_PROGRAM,  /* the program as compiled */
    ANE_RUNG_FUNCTION, /* each of its functions as a program of its own (BUNDLE/ladder/) */
    ANE_RUNG_OUTPUTS,  /* a function of several outputs refused alone: a program per output */
    ANE_RUNG_RELOWER,  /* a function still refused, lowered again from the bundle into a form
                          that avoids what it holds (ane_relower.h; the engine's hook) */
    ANE_RUNG_CPU,      /* the MIL interpreter on the same program */
    ANE_N_RUNGS
} ane_rung;

/* The default order, by name: the table the runner climbs. */
extern const char *const ANE_LADDER_ORDER[ANE_N_RUNGS];

const char *ane_rung_name(ane_rung r); /* "program", "function", "outputs", "relower", "cpu" */
int ane_rung_parse(const char *name);  /* -1: none */

/* The outcome of one program on the device, for the profile. */
typedef struct ane_ladder_outcome {
    char key[24];   /* the program's hash (ane_ladder_program_key) */
    char path[128]; /* "layer_03/model.mil", for people */
    ane_rung start; /* the rung it ended on: where the next run starts */
    int tried[ANE_N_RUNGS];
    int ok[ANE_N_RUNGS];          /* the function rung: every function on the device */
    char error[ANE_N_RUNGS][512]; /* the framework's text where refused */
    int n_fns, n_fns_refused;     /* the function rung */
    char fns_refused[512];        /* their names, comma-separated */
    char fns_split[512];          /* the outputs rung: functions placed as a program per output */
    int outputs_known;            /* the profile recorded the outputs rung for this program */
    char fns_relowered[512];      /* the relower rung: functions placed re-lowered */
    char relowered_forms[256];    /* and the forms they took ("kv update onehot") */
    int relower_known;            /* the profile recorded the relower rung for this program */
    char fn_error[LOWER_MAX_FUNCS][200]; /* per function, this run's refusal ("": none seen) */
} ane_ladder_outcome;

/* The ladder a bundle open climbs: the order, and what the profile
 * recorded for this device. */
typedef struct ane_ladder {
    char profile[1024]; /* "" : nothing read or written */
    char device[160];   /* the profile's key for the device */
    ane_rung order[ANE_N_RUNGS];
    int n_order;
    void *recorded; /* the profile's JSON (json_t *), NULL when none */
} ane_ladder;

/* The profile path for a device (is_fake; device = its key), after
 * NECTAR_ANE_PROFILE; "" when nothing is to be recorded. */
nc_status ane_ladder_profile_path(int is_fake, char *buf, size_t cap, nc_error *err);

/* Reads the profile (a missing file: nothing recorded); a malformed one
 * fails naming it. profile "" or NULL: the default order, no memory. */
nc_status ane_ladder_open(ane_ladder *l, const char *profile, const char *device, nc_error *err);
void ane_ladder_close(ane_ladder *l);

/* The key of program folder dir (its model.mil's text). */
nc_status ane_ladder_program_key(const char *dir, char key[24], nc_error *err);

/* Where the recorded outcome of program o->key says to start (an index
 * into l->order; 0 without a record). The rungs before it are filled into
 * o as tried and refused, with the recorded error text, and o->fns_refused
 * with the functions the function rung could not place. */
int ane_ladder_start(const ane_ladder *l, ane_ladder_outcome *o);

/* 1 when name is in the comma-separated list. */
int ane_ladder_listed(const char *list, const char *name);

/* Writes the outcomes of one bundle open (n may be 0: the forms alone)
 * into the profile (atomically: the other members, the probe's, are
 * kept). A no-op without a profile. */
nc_status ane_ladder_record(ane_ladder *l, const ane_ladder_outcome *o, int n, nc_error *err);

/* The lowering forms' outcome of one bundle open (forms_profile.h), put
 * into the profile under this device; written by the next
 * ane_ladder_record. A no-op without a profile. */
void ane_ladder_put_forms(ane_ladder *l, const lower_forms_tally *t);

/* What the profile says to compile instead of cur on this device
 * (lower_forms_recommend): the options ("--attention grouped"; "" when
 * nothing is refused) and the reasons. Returns the number of changes. */
int ane_ladder_recommend(const ane_ladder *l, const lower_all_forms *cur, lower_all_forms *out,
                         char *why, size_t why_cap, char *options, size_t options_cap);

/* The outcome of program p (o: its ladder record) as lower_forms_tally_program
 * takes it: accepted whole, else per function from the function rung. */
void ane_ladder_tally(lower_forms_tally *t, const lower_program_info *p,
                      const ane_ladder_outcome *o);

/* Output out_index of the function named fn of prog (parsed from program
 * folder src) as a program of its own in folder dst: one function named
 * piece, the same inputs, that output alone and only the ops it needs
 * (the others pruned), weights hard-linked as ane_ladder_write_view's.
 * The outputs rung: a device that refuses functions of several outputs. */
nc_status ane_ladder_write_output_view(const mil_program *prog, const char *fn, int out_index,
                                       const char *piece, const char *src, const char *dst,
                                       nc_error *err);

/* The functions named names[0..n) of prog (parsed from program folder
 * src; a name given twice is taken once: an enumerated function is the
 * manifest entry of every bucket) as a program of their own in folder dst
 * (created): dst/model.mil, and dst/weights/weight.bin the program's own
 * file, hard-linked (else symlinked: no copy). The function rung and
 * `nectar ane probe --bundle`. */
nc_status ane_ladder_write_view(const mil_program *prog, const char *const *names, int n,
                                const char *src, const char *dst, nc_error *err);

#endif
