/* The rules between lowering forms (docs/lowering.md, "Lowering forms"):
 * which forms `nectar compile` lowers together, for which models. One
 * function, called by the compiler before it lowers anything and by the
 * probe profile's recommendation (forms_profile.h) for every set it would
 * suggest, so a suggestion is never a set compile refuses. */
#ifndef NC_BUNDLE_FORMS_RULES_H
#define NC_BUNDLE_FORMS_RULES_H

#include <stdint.h>

#include "base/error.h"
#include "bundle/bundle_forms.h"

/* What a model brings to the rules (all 0: a Qwen3 or Llama model of a
 * vocabulary not checked). */
typedef struct lower_forms_model {
    int recurrent; /* Qwen3.5: linear-attention layers, planned per layer program */
    int windows;   /* Gemma 3: sliding-window layers, lowered per bucket */
    int64_t vocab; /* the LM head's rows on the ANE (0: not checked, or the head on the CPU) */
} lower_forms_model;

/* NC_OK when compile lowers `forms` with `kernels_per_layer` (0: 4) for
 * model m; else NC_ERR_UNSUPPORTED with one line naming the options. */
nc_status lower_forms_check(const lower_forms *forms, int kernels_per_layer,
                            const lower_forms_model *m, nc_error *err);

#endif
