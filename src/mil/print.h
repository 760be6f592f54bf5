/* MIL text printer: writes the program(1.3) dialect that current coremlc
 * emits (one-line buildInfo, typed literals, C99 hex floats so every value
 * round-trips exactly, arguments and op attributes sorted by name, 4/12/8
 * indentation). A program(1.0) program keeps its dialect: rank-0 types are
 * spelled tensor<T, []>. Output is deterministic. */
#ifndef NC_MIL_PRINT_H
#define NC_MIL_PRINT_H

#include <stdio.h>

#include "mil/ir.h"

nc_status mil_print(const mil_program *prog, FILE *f, nc_error *err);
/* The text in a malloc'd NUL-terminated buffer (free() it). */
nc_status mil_print_string(const mil_program *prog, char **out, size_t *len, nc_error *err);
/* Writes the text to `path` atomically. */
nc_status mil_print_file(const mil_program *prog, const char *path, nc_error *err);

#endif
