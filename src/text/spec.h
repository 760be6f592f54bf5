/* tokenizer.json's pipeline components ("normalizer", "pre_tokenizer",
 * "post_processor") share one shape: JSON null (or absent) is nothing, an
 * object names its "type", and type "Sequence" lists more components under
 * a key of its own ("normalizers", "pretokenizers", "processors"), nested at
 * most 4 deep. One walker for that shape; each component kind parses its
 * own leaves. */
#ifndef NC_TEXT_SPEC_H
#define NC_TEXT_SPEC_H

#include "base/json.h"

/* Called for every component that is not a Sequence, in order. */
typedef nc_status (*tok_spec_leaf_fn)(void *ctx, const json_t *spec, const char *type,
                                      const char *what, nc_error *err);

/* Walks spec (NULL or null: nothing); `kind` ("normalizer") names it in
 * messages, `list_key` is the Sequence's list. */
nc_status tok_spec_walk(const json_t *spec, const char *kind, const char *list_key,
                        tok_spec_leaf_fn leaf, void *ctx, const char *what, nc_error *err);

#endif
