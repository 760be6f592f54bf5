/* MIL text parser: reads the program(1.3) dialect coremlc emits, the older
 * program(1.0) one (tensor<string, []> scalars), the proto-faithful
 * program(1)/<CoreML8> spelling and the E5RT partitioned dialect
 * (tensor_buffer types, per-op opsets, extra attributes). Errors are
 * "file:line:col: expected X, found Y". Op output types are kept as declared;
 * the checker compares them with inference. */
#ifndef NC_MIL_PARSE_H
#define NC_MIL_PARSE_H

#include <stddef.h>

#include "mil/ir.h"

/* Parses len bytes of MIL text. `source` names the text in messages (a
 * path); the program's model_dir is left unset. */
nc_status mil_parse(const char *text, size_t len, const char *source, mil_program **out,
                    nc_error *err);

/* Parses "[name = value, ...]" (attribute syntax, as after a function's
 * inputs) into fn's attributes, replacing them; the values live in fn's
 * program. What the builder cannot spell: FlexibleShapeInformation. */
nc_status mil_function_parse_attrs(mil_function *fn, const char *text, nc_error *err);

/* Reads and parses a file; model_dir becomes the file's folder, so that
 * @model_path BLOBFILE references resolve (weights are opened lazily). */
nc_status mil_parse_file(const char *path, mil_program **out, nc_error *err);

#endif
