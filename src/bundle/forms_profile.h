/* The lowering forms as keys of the probe profile (docs/lowering.md,
 * "Lowering forms"; docs/ane-bridge.md, "The ladder remembers"): each
 * form a bundle was compiled in -- program split, kernels per layer, KV
 * update, RoPE, attention layout, LM-head rows and split, exp, matmul
 * padding -- with how many of its kernels a device accepted and refused,
 * and the framework's first refusal. The compile ladder (src/ane_host)
 * and `nectar ane probe --bundle` record them; `nectar compile
 * --ane-profile` and `nectar ane doctor` read them back and choose, for
 * each form the device refused, the next value no device has refused.
 *
 * The profile's member (beside the probe's "cases" and the ladder's
 * "ladder"):
 *   "forms": {"<device>": {"attention": {"broadcast": {"ok": 0, "refused": 15,
 *                                                      "error": "..."}},
 *                          "rope": {"conv": {"ok": 15, "refused": 0, "error": ""}}, ...}}
 *
 * A refusal is charged to every form the refused kernel holds (a `kv`
 * kernel: the KV update and the kernels per layer that made it a kernel of
 * its own; a program refused whole whose functions all compile alone: the
 * program split). A device does not say which construct it refused, so
 * a form that was not the cause may be charged too; the recommendation
 * then moves it to a value not tried yet, and the next run records that. */
#ifndef NC_BUNDLE_FORMS_PROFILE_H
#define NC_BUNDLE_FORMS_PROFILE_H

#include <stddef.h>

#include "base/json.h"
#include "bundle/forms_rules.h"
#include "bundle/manifest.h"

typedef enum lower_form_key {
    LOWER_FK_PROGRAM_SPLIT,
    LOWER_FK_KERNELS_PER_LAYER,
    LOWER_FK_KV_UPDATE,
    LOWER_FK_ROPE,
    LOWER_FK_ATTENTION,
    LOWER_FK_HEAD_ROWS,
    LOWER_FK_HEAD_SPLIT,
    LOWER_FK_EXP,
    LOWER_FK_MATMUL_PAD,
    LOWER_N_FORM_KEYS
} lower_form_key;

/* Every form of a bundle: the manifest's plan.forms and its kernels per
 * layer (0 in either: the default), and the model they lower, which the
 * rules between forms depend on (forms_rules.h; all 0: Qwen3 or Llama, the
 * head's rows not checked). */
typedef struct lower_all_forms {
    lower_forms forms;
    int kernels_per_layer;
    lower_forms_model model;
} lower_all_forms;

const char *lower_form_key_name(lower_form_key k); /* "program_split" (the manifest's and profile's key) */
const char *lower_form_option(lower_form_key k);   /* "--program-split" (nectar compile's) */
/* The value of key k in a ("layer", "4", "16384"). */
void lower_form_value(const lower_all_forms *a, lower_form_key k, char *buf, size_t cap);
/* Sets key k of a to value; -1 when value is not one of the key's. */
int lower_form_set(lower_all_forms *a, lower_form_key k, const char *value);

/* One bundle's outcome per form key (the bundle holds one value of each). */
typedef struct lower_forms_tally {
    lower_all_forms of;
    struct {
        int ok, refused;
        char error[240]; /* the first refusal charged to it */
    } key[LOWER_N_FORM_KEYS];
} lower_forms_tally;

void lower_forms_tally_init(lower_forms_tally *t, const lower_manifest *m);

/* Charges program p's outcome: whole_ok (1: compiled and bound as it is),
 * else fn_ok[f] per function (1 accepted alone, 0 refused alone, -1 not
 * tried), with the refusal texts whole_error and fn_error[f] (NULL: none). */
void lower_forms_tally_program(lower_forms_tally *t, const lower_program_info *p, int whole_ok,
                               const char *whole_error, const int *fn_ok,
                               const char *const *fn_error);

/* Writes t into profile's "forms" member under device (each value seen
 * replaces what an earlier run recorded for it). */
void lower_forms_tally_put(json_t *profile, const char *device, const lower_forms_tally *t);

/* What the profile says for device about cur: for each key whose value
 * there is refused, the first value of the key's order that a device
 * accepted, else the first not tried yet (never a refused one, never one
 * that makes a set lower_forms_check refuses for cur's model; none left:
 * the key stays; the keys are gone through again while one changes, so a
 * value another change allows is found). *out = cur with those changes; `why` gets one
 * "--option value (old refused: error)" per change, "; "-separated, and
 * `options` the bare options ("--attention grouped ..."). Returns the
 * number of changes. A profile member of the wrong shape is skipped. */
int lower_forms_recommend(const json_t *profile, const char *device, const lower_all_forms *cur,
                          lower_all_forms *out, char *why, size_t why_cap, char *options,
                          size_t options_cap);

#endif
