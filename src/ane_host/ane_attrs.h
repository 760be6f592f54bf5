/* A loaded ANE model's modelAttributes dictionary, parsed: its procedures
 * (one per MIL function), and for each the input and output symbols a
 * request must bind, by name, with the symbol index the request passes in
 * inputIndices/outputIndices and the procedure id it passes as
 * procedureIndex. The compiler reorders I/O, so these indices, never the
 * declaration order, are what a request uses (docs/ane-rules.md).
 *
 * The dictionary arrives as JSON text: src/ane converts the NSDictionary
 * with CoreFoundation; tests use fixtures written from the reference
 * (docs/references.md §6.3). Keys read:
 *   ANEFModelDescription.kANEFModelInputSymbolsArrayKey   [name]
 *   ANEFModelDescription.kANEFModelOutputSymbolsArrayKey  [name "@output"]
 *   ANEFModelDescription.kANEFModelProcedureNameToIDMapKey {function: id}
 *   ANEFModelDescription.ANEFModelProcedures[] {ANEFModelProcedureID,
 *       ANEFModelInputSymbolIndexArray, ANEFModelOutputSymbolIndexArray}
 *   NetworkStatusList[] (optional) {LiveInputList, LiveOutputList}:
 *       [{Name (or Symbol, or neither: the I/O at that position), Type,
 *       Batches, Channels, Depth?, Height, Width, RowStride?, PlaneStride?,
 *       BatchStride?}], matched to the procedure's I/O by name (or index).
 *       Nothing documents that its order is ANEFModelProcedures' order: the
 *       entry at the procedure's position is taken when its names fit, and
 *       the binder (ane_bind.h) tries the others when its shapes do not. */
#ifndef NC_ANE_HOST_ANE_ATTRS_H
#define NC_ANE_HOST_ANE_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define ANE_NAME_MAX 64
#define ANE_OUTPUT_SUFFIX "@output"

typedef struct ane_attr_io {
    char name[ANE_NAME_MAX]; /* as the MIL declares it ("@output" removed) */
    int symbol;              /* index into the symbol array: the request's index */
    int has_shape;           /* NetworkStatusList described it */
    char type[16];           /* "Float16", "Float32", ... */
    int64_t batches, channels, depth, height, width; /* NCDHW as reported */
    int64_t row_stride, plane_stride, batch_stride;  /* bytes; 0 when absent */
} ane_attr_io;

typedef struct ane_attr_proc {
    char name[ANE_NAME_MAX]; /* the MIL function name */
    int id;                  /* the request's procedureIndex */
    int n_in, n_out;
    ane_attr_io *in, *out;
    int status_fit; /* the NetworkStatusList entry at its position described it */
} ane_attr_proc;

typedef struct ane_attrs {
    int n_procs;
    ane_attr_proc *procs; /* in ANEFModelProcedures order */
    int n_in_symbols, n_out_symbols;
    int n_status;
    void *status; /* NetworkStatusList (a jansson array, kept for ane_attrs_proc_with_status) */
} ane_attrs;

/* Parses len bytes of JSON; `what` names the text in messages. Every
 * failure names the key at fault. Free with ane_attrs_free (also after a
 * failure). */
nc_status ane_attrs_parse(const char *text, size_t len, const char *what, ane_attrs *out,
                          nc_error *err);
void ane_attrs_free(ane_attrs *a);

/* Procedure p as NetworkStatusList entry j describes it (shapes and
 * strides); fails when the entry does not fit p's I/O. Free out with
 * ane_attr_proc_free. */
nc_status ane_attrs_proc_with_status(const ane_attrs *a, const ane_attr_proc *p, int j,
                                     ane_attr_proc *out, nc_error *err);
void ane_attr_proc_free(ane_attr_proc *p);
/* The procedure of MIL function `name`, or NULL. */
const ane_attr_proc *ane_attrs_proc(const ane_attrs *a, const char *name);
/* An input (is_output 0) or output of p by name, or NULL. */
const ane_attr_io *ane_attrs_io(const ane_attr_proc *p, const char *name, int is_output);

#endif
