/* The dtype table (see dtype.h): MIL spelling, blob code, bit width and
 * in-memory storage of inline literal elements, one row per dtype. */
#include "mil/dtype.h"

#include <string.h>

static const struct {
    const char *name;
    uint32_t blob_code; /* BlobDataType in MILBlob/Blob/BlobDataType.hpp; 0 = none */
    int bits;
    size_t storage_bytes;
    unsigned kind; /* 1 float, 2 signed int, 3 unsigned int, 0 other */
} dtypes[MIL_DT_COUNT] = {
    [MIL_DT_INVALID] = {"?", 0, 0, 0, 0},        [MIL_DT_FP16] = {"fp16", 1, 16, 2, 1},
    [MIL_DT_FP32] = {"fp32", 2, 32, 4, 1},       [MIL_DT_FP64] = {"fp64", 0, 64, 8, 1},
    [MIL_DT_BF16] = {"bf16", 5, 16, 2, 1},       [MIL_DT_FP8E4M3FN] = {"fp8e4m3fn", 16, 8, 1, 1},
    [MIL_DT_FP8E5M2] = {"fp8e5m2", 17, 8, 1, 1}, [MIL_DT_INT4] = {"int4", 8, 4, 1, 2},
    [MIL_DT_INT8] = {"int8", 4, 8, 1, 2},        [MIL_DT_INT16] = {"int16", 6, 16, 2, 2},
    [MIL_DT_INT32] = {"int32", 14, 32, 4, 2},    [MIL_DT_INT64] = {"int64", 0, 64, 8, 2},
    [MIL_DT_UINT1] = {"uint1", 9, 1, 1, 3},      [MIL_DT_UINT2] = {"uint2", 10, 2, 1, 3},
    [MIL_DT_UINT3] = {"uint3", 12, 3, 1, 3},     [MIL_DT_UINT4] = {"uint4", 11, 4, 1, 3},
    [MIL_DT_UINT6] = {"uint6", 13, 6, 1, 3},     [MIL_DT_UINT8] = {"uint8", 3, 8, 1, 3},
    [MIL_DT_UINT16] = {"uint16", 7, 16, 2, 3},   [MIL_DT_UINT32] = {"uint32", 15, 32, 4, 3},
    [MIL_DT_UINT64] = {"uint64", 0, 64, 8, 3},   [MIL_DT_BOOL] = {"bool", 0, 8, 1, 0},
    [MIL_DT_STRING] = {"string", 0, 0, 0, 0},
};

static int valid(mil_dtype dt) {
    return dt > MIL_DT_INVALID && dt < MIL_DT_COUNT;
}

const char *mil_dtype_name(mil_dtype dt) {
    return valid(dt) ? dtypes[dt].name : "?";
}

mil_dtype mil_dtype_from_name(const char *name) {
    for (int i = 1; i < MIL_DT_COUNT; i++)
        if (!strcmp(dtypes[i].name, name)) return (mil_dtype)i;
    return MIL_DT_INVALID;
}

int mil_dtype_bits(mil_dtype dt) {
    return valid(dt) ? dtypes[dt].bits : 0;
}
size_t mil_dtype_storage_bytes(mil_dtype dt) {
    return valid(dt) ? dtypes[dt].storage_bytes : 0;
}
uint32_t mil_dtype_blob_code(mil_dtype dt) {
    return valid(dt) ? dtypes[dt].blob_code : 0;
}

mil_dtype mil_dtype_from_blob_code(uint32_t code) {
    if (code == 0) return MIL_DT_INVALID;
    for (int i = 1; i < MIL_DT_COUNT; i++)
        if (dtypes[i].blob_code == code) return (mil_dtype)i;
    return MIL_DT_INVALID;
}

int mil_dtype_is_float(mil_dtype dt) {
    return valid(dt) && dtypes[dt].kind == 1;
}
int mil_dtype_is_int(mil_dtype dt) {
    return valid(dt) && (dtypes[dt].kind == 2 || dtypes[dt].kind == 3);
}
int mil_dtype_is_signed(mil_dtype dt) {
    return valid(dt) && dtypes[dt].kind == 2;
}
int mil_dtype_is_sub_byte(mil_dtype dt) {
    return valid(dt) && dtypes[dt].bits > 0 && dtypes[dt].bits < 8;
}
