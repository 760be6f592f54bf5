/* MIL element types (dtypes): one table holds each dtype's MIL spelling, its
 * weight.bin (blob storage v2) code, its width in bits and how an inline
 * literal element is stored in memory. Everything else walks that table. */
#ifndef NC_MIL_DTYPE_H
#define NC_MIL_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum mil_dtype {
    MIL_DT_INVALID = 0,
    MIL_DT_FP16,
    MIL_DT_FP32,
    MIL_DT_FP64,
    MIL_DT_BF16,
    MIL_DT_FP8E4M3FN,
    MIL_DT_FP8E5M2,
    MIL_DT_INT4,
    MIL_DT_INT8,
    MIL_DT_INT16,
    MIL_DT_INT32,
    MIL_DT_INT64,
    MIL_DT_UINT1,
    MIL_DT_UINT2,
    MIL_DT_UINT3,
    MIL_DT_UINT4,
    MIL_DT_UINT6,
    MIL_DT_UINT8,
    MIL_DT_UINT16,
    MIL_DT_UINT32,
    MIL_DT_UINT64,
    MIL_DT_BOOL,
    MIL_DT_STRING,
    MIL_DT_COUNT
} mil_dtype;

/* Bit for a dtype in a dtype set (allowed-dtype masks of the op table). */
#define MIL_DTBIT(dt) (1u << (dt))

/* "fp16", "uint4", ...; "?" for an invalid value. */
const char *mil_dtype_name(mil_dtype dt);
/* Parses a MIL dtype spelling; MIL_DT_INVALID when it is not one. */
mil_dtype mil_dtype_from_name(const char *name);
/* Width of one element in weight.bin in bits (16 for fp16, 4 for uint4);
 * 0 for string. bool is 8. */
int mil_dtype_bits(mil_dtype dt);
/* Bytes one element takes in an inline literal's data array (mil_value.data):
 * fp16/bf16 are uint16 bit patterns, fp8 a uint8 pattern, fp32 float, fp64
 * double, ints their natural width, sub-byte types one (u)int8 per element,
 * bool one uint8 (0/1); 0 for string (held as char pointers). */
size_t mil_dtype_storage_bytes(mil_dtype dt);
/* weight.bin BlobDataType code (1 = fp16, 2 = fp32, ... 17 = fp8e5m2); 0 when
 * the dtype cannot be stored in a blob (fp64, int64, uint64, bool, string). */
uint32_t mil_dtype_blob_code(mil_dtype dt);
/* Inverse of mil_dtype_blob_code; MIL_DT_INVALID for an unknown code. */
mil_dtype mil_dtype_from_blob_code(uint32_t code);

int mil_dtype_is_float(mil_dtype dt);    /* fp16, fp32, fp64, bf16, fp8 */
int mil_dtype_is_int(mil_dtype dt);      /* signed or unsigned integer, any width */
int mil_dtype_is_signed(mil_dtype dt);   /* int4..int64 */
int mil_dtype_is_sub_byte(mil_dtype dt); /* int4, uint1..uint6 */

#endif
