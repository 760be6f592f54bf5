/* Reading literal values: element access for inline and BLOBFILE tensors and
 * their bytes in weight.bin layout. Blob payloads are validated against the
 * declared tensor type the first time they are read. */
#include <math.h>
#include <string.h>

#include "base/half.h"
#include "mil/blob_cache.h"
#include "mil/ir.h"

static double fp8_to_f64(uint8_t b, int e4m3) {
    int sign = b >> 7;
    double v;
    if (!e4m3) return nc_fp16_to_f32((uint16_t)(b << 8)); /* e5m2 is fp16's top byte */
    int exp = (b >> 3) & 0xf, mant = b & 7;
    if (exp == 0xf && mant == 7) return NAN; /* e4m3fn: no inf, one NaN pattern */
    if (exp == 0)
        v = ldexp(mant / 8.0, -6);
    else
        v = ldexp(1.0 + mant / 8.0, exp - 7);
    return sign ? -v : v;
}

/* Element i as double and as integer; `packed` selects the weight.bin layout
 * for sub-byte types (else one element per byte). */
static void decode(mil_dtype dt, const uint8_t *p, size_t i, int packed, double *f, int64_t *iv) {
    int64_t x = 0;
    double d = 0;
    int is_float = 1;
    switch (dt) {
    case MIL_DT_FP16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        d = nc_fp16_to_f32(h);
        break;
    }
    case MIL_DT_BF16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        d = nc_bf16_to_f32(h);
        break;
    }
    case MIL_DT_FP32: {
        float v;
        memcpy(&v, p + 4 * i, 4);
        d = v;
        break;
    }
    case MIL_DT_FP64:
        memcpy(&d, p + 8 * i, 8);
        break;
    case MIL_DT_FP8E4M3FN:
        d = fp8_to_f64(p[i], 1);
        break;
    case MIL_DT_FP8E5M2:
        d = fp8_to_f64(p[i], 0);
        break;
    default:
        is_float = 0;
        break;
    }
    if (!is_float) {
        switch (dt) {
        case MIL_DT_INT8:
            x = (int8_t)p[i];
            break;
        case MIL_DT_UINT8:
        case MIL_DT_BOOL:
            x = p[i];
            break;
        case MIL_DT_INT16: {
            int16_t v;
            memcpy(&v, p + 2 * i, 2);
            x = v;
            break;
        }
        case MIL_DT_UINT16: {
            uint16_t v;
            memcpy(&v, p + 2 * i, 2);
            x = v;
            break;
        }
        case MIL_DT_INT32: {
            int32_t v;
            memcpy(&v, p + 4 * i, 4);
            x = v;
            break;
        }
        case MIL_DT_UINT32: {
            uint32_t v;
            memcpy(&v, p + 4 * i, 4);
            x = v;
            break;
        }
        case MIL_DT_INT64:
            memcpy(&x, p + 8 * i, 8);
            break;
        case MIL_DT_UINT64: {
            uint64_t v;
            memcpy(&v, p + 8 * i, 8);
            x = (int64_t)v;
            break;
        }
        default: { /* sub-byte */
            int bits = mil_dtype_bits(dt);
            unsigned u =
                packed ? mil_unpack_sub_byte(p, i, bits) : (unsigned)(p[i] & ((1u << bits) - 1));
            x = u;
            if (dt == MIL_DT_INT4 && (u & 8)) x = (int64_t)u - 16;
            break;
        }
        }
        d = (double)x;
    } else {
        x = isfinite(d) && fabs(d) < 9.2e18 ? (int64_t)d : 0;
    }
    *f = d;
    *iv = x;
}

/* Payload of a blob value, checked against its declared type. */
static nc_status blob_payload(const mil_program *prog, const mil_value *v, const uint8_t **out,
                              size_t *size_bytes, nc_error *err) {
    const mil_blob_file *f;
    mil_blob_entry e;
    if (!prog)
        return nc_fail(err, NC_ERR_INVALID, "%s: reading a BLOBFILE value needs its program",
                       v->blob_path);
    NC_TRY(mil_blob_cache_get(prog, v->blob_path, &f, err));
    NC_TRY(mil_blob_entry_at(f, v->blob_offset, &e, err));
    int64_t numel = mil_type_numel(v->type);
    if (numel < 0)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: BLOBFILE at offset %llu has a tensor type of unknown size",
                       v->blob_path, (unsigned long long)v->blob_offset);
    char what[64];
    snprintf(what, sizeof what, "BLOBFILE offset %llu", (unsigned long long)v->blob_offset);
    NC_TRY(mil_blob_check_type(f, &e, v->type->dtype, (uint64_t)numel, what, err));
    *out = e.data;
    *size_bytes = (size_t)e.size_bytes;
    return NC_OK;
}

nc_status mil_value_bytes(const mil_program *prog, const mil_value *v, const uint8_t **out,
                          size_t *size_bytes, nc_error *err) {
    *out = NULL;
    *size_bytes = 0;
    if (!v || !v->type || v->type->kind != MIL_TYPE_TENSOR || v->type->dtype == MIL_DT_STRING)
        return nc_fail(err, NC_ERR_INVALID, "value is not a numeric tensor");
    if (v->kind == MIL_VALUE_BLOB) return blob_payload(prog, v, out, size_bytes, err);
    if (v->kind != MIL_VALUE_TENSOR) return nc_fail(err, NC_ERR_INVALID, "value is not a tensor");
    mil_dtype dt = v->type->dtype;
    if (!mil_dtype_is_sub_byte(dt)) {
        *out = v->data;
        *size_bytes = v->n * mil_dtype_storage_bytes(dt);
        return NC_OK;
    }
    /* Inline sub-byte data is one element per byte; pack it once into the
     * program's arena and keep it (the value is logically const: a cache). */
    int bits = mil_dtype_bits(dt);
    size_t nb = (v->n * (size_t)bits + 7) / 8;
    if (!v->packed) {
        if (!prog) return nc_fail(err, NC_ERR_INVALID, "packing sub-byte data needs its program");
        uint8_t *packed = nc_arena_alloc(&((mil_program *)prog)->arena, nb ? nb : 1);
        if (!packed) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
        mil_pack_sub_byte(v->data, v->n, bits, packed);
        ((mil_value *)v)->packed = packed;
    }
    *out = v->packed;
    *size_bytes = nb;
    return NC_OK;
}

static nc_status element(const mil_program *prog, const mil_value *v, size_t i, double *f,
                         int64_t *x, nc_error *err) {
    if (!v || !v->type || v->type->kind != MIL_TYPE_TENSOR || v->type->dtype == MIL_DT_STRING ||
        (v->kind != MIL_VALUE_TENSOR && v->kind != MIL_VALUE_BLOB))
        return nc_fail(err, NC_ERR_INVALID, "value is not a numeric tensor");
    if (i >= v->n) return nc_fail(err, NC_ERR_RANGE, "element %zu of a %zu-element value", i, v->n);
    if (v->kind == MIL_VALUE_TENSOR) {
        decode(v->type->dtype, v->data, i, 0, f, x);
        return NC_OK;
    }
    const uint8_t *p;
    size_t nb;
    NC_TRY(blob_payload(prog, v, &p, &nb, err));
    decode(v->type->dtype, p, i, 1, f, x);
    return NC_OK;
}

nc_status mil_value_to_f64(const mil_program *prog, const mil_value *v, size_t i, double *out,
                           nc_error *err) {
    int64_t x;
    return element(prog, v, i, out, &x, err);
}

nc_status mil_value_to_i64(const mil_program *prog, const mil_value *v, size_t i, int64_t *out,
                           nc_error *err) {
    double d;
    return element(prog, v, i, &d, out, err);
}
