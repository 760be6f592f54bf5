/* The post-processor of tokenizer.json that wraps an encoded text in special
 * tokens when HF's add_special_tokens=True: TemplateProcessing (its "single"
 * template, e.g. "[CLS] $A [SEP]" for ModernBERT, "<bos> $A <eos>"),
 * BertProcessing / RobertaProcessing (cls $A sep), ByteLevel (adds nothing),
 * or a Sequence of them. Only single sequences are wrapped (no pairs). */
#ifndef NC_TEXT_POST_TEMPLATE_H
#define NC_TEXT_POST_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/json.h"

typedef struct tok_template tok_template;

/* From tokenizer.json's "post_processor" (NULL or JSON null: adds nothing).
 * Unknown processor types are rejected naming `what`. */
nc_status tok_template_new(const json_t *spec, const char *what, tok_template **out, nc_error *err);
void tok_template_free(tok_template *t);

/* Replaces *ids (malloc'ed, *n ids) with the template applied. t may be NULL. */
nc_status tok_template_wrap(const tok_template *t, int32_t **ids, size_t *n, nc_error *err);

/* Special ids the template adds around one sequence (before, after). */
void tok_template_counts(const tok_template *t, size_t *before, size_t *after);

#endif
