/* Whether a model folder holds nectar's q8/q4 blocks (2-D U8 tensors, as
 * `nectar quantize` writes them): quantize and compile refuse such a folder
 * with one line naming the reason, before any other check. */
#ifndef NECTAR_CLI_QUANTIZED_H
#define NECTAR_CLI_QUANTIZED_H

#include "nectar.h"

/* *n = the number of quantized matrices in dir's safetensors. */
nc_status cli_count_quantized(const char *dir, int *n, nc_error *err);

#endif
