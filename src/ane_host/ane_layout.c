/* 64-byte-row surface layouts and the copies into and out of them
 * (ane_layout.h). Each row is converted on its own, then its tail zeroed:
 * the padding must be defined bytes, since the ANE reads whole rows. */
#include "ane_host/ane_layout.h"

#include <string.h>

#include "base/half.h"

nc_status ane_layout_for(const char *what, ane_elem elem, int rank, const int64_t *shape,
                         ane_layout *out, nc_error *err) {
    if (rank < 1 || rank > 5)
        return nc_fail(err, NC_ERR_RANGE, "%s: rank %d, the ANE takes tensors of rank 1 to 5", what,
                       rank);
    int64_t rows = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] <= 0 || shape[i] > ((int64_t)1 << 31))
            return nc_fail(err, NC_ERR_RANGE, "%s: dimension %d is %lld", what, i,
                           (long long)shape[i]);
        if (i < rank - 1) rows *= shape[i];
        if (rows > ((int64_t)1 << 31))
            return nc_fail(err, NC_ERR_RANGE, "%s: %lld rows is too many", what, (long long)rows);
    }
    int64_t width = shape[rank - 1];
    int64_t padded = width < ANE_MIN_ROW_ELEMS ? ANE_MIN_ROW_ELEMS : width;
    size_t row_bytes = (size_t)padded * (size_t)elem;
    row_bytes = (row_bytes + ANE_ROW_ALIGN_BYTES - 1) / ANE_ROW_ALIGN_BYTES * ANE_ROW_ALIGN_BYTES;
    return ane_layout_from_strides(what, elem, rows, width, row_bytes, out, err);
}

nc_status ane_layout_from_strides(const char *what, ane_elem elem, int64_t rows, int64_t width,
                                  size_t row_bytes, ane_layout *out, nc_error *err) {
    if (rows <= 0 || width <= 0)
        return nc_fail(err, NC_ERR_RANGE, "%s: %lld rows of %lld values", what, (long long)rows,
                       (long long)width);
    if (row_bytes % ANE_ROW_ALIGN_BYTES || row_bytes < (size_t)width * (size_t)elem)
        return nc_fail(
            err, NC_ERR_RANGE,
            "%s: row stride %zu bytes is not a multiple of %d holding %lld values of %d bytes",
            what, row_bytes, ANE_ROW_ALIGN_BYTES, (long long)width, (int)elem);
    if ((uint64_t)rows > SIZE_MAX / row_bytes)
        return nc_fail(err, NC_ERR_RANGE, "%s: surface size overflows", what);
    out->elem = elem;
    out->rows = rows;
    out->width = width;
    out->row_bytes = row_bytes;
    out->bytes = (size_t)rows * row_bytes;
    return NC_OK;
}

/* One row: n values from src (fp32 when src_f32, else fp16 bits) into dst
 * of element type e, then zeros up to row_bytes. Rows start 64-byte
 * aligned inside a surface, so they can be addressed as fp16/fp32 arrays. */
static void put_row(ane_elem e, void *dst, size_t row_bytes, const void *src, int src_f32,
                    size_t n) {
    unsigned char *d = dst;
    if ((e == ANE_ELEM_FP16) == !src_f32)
        memcpy(d, src, n * (size_t)e);
    else if (e == ANE_ELEM_FP16)
        nc_f32_to_fp16_n(src, (nc_fp16 *)dst, n);
    else
        nc_fp16_to_f32_n(src, (float *)dst, n);
    memset(d + n * (size_t)e, 0, row_bytes - n * (size_t)e);
}

static void get_row(ane_elem e, const void *src, void *dst, int dst_f32, size_t n) {
    if ((e == ANE_ELEM_FP16) == !dst_f32)
        memcpy(dst, src, n * (size_t)e);
    else if (e == ANE_ELEM_FP16)
        nc_fp16_to_f32_n(src, (float *)dst, n);
    else
        nc_f32_to_fp16_n(src, (nc_fp16 *)dst, n);
}

static void pad(const ane_layout *l, const void *logical, size_t src_elem, int src_f32,
                void *surface) {
    size_t w = (size_t)l->width;
    for (int64_t r = 0; r < l->rows; r++)
        put_row(l->elem, (unsigned char *)surface + (size_t)r * l->row_bytes, l->row_bytes,
                (const unsigned char *)logical + (size_t)r * w * src_elem, src_f32, w);
}

static void unpad(const ane_layout *l, const void *surface, void *logical, size_t dst_elem,
                  int dst_f32) {
    size_t w = (size_t)l->width;
    for (int64_t r = 0; r < l->rows; r++)
        get_row(l->elem, (const unsigned char *)surface + (size_t)r * l->row_bytes,
                (unsigned char *)logical + (size_t)r * w * dst_elem, dst_f32, w);
}

void ane_pad_f32(const ane_layout *l, const float *logical, void *surface) {
    pad(l, logical, 4, 1, surface);
}
void ane_pad_fp16(const ane_layout *l, const uint16_t *logical, void *surface) {
    pad(l, logical, 2, 0, surface);
}
void ane_unpad_f32(const ane_layout *l, const void *surface, float *logical) {
    unpad(l, surface, logical, 4, 1);
}
void ane_unpad_fp16(const ane_layout *l, const void *surface, uint16_t *logical) {
    unpad(l, surface, logical, 2, 0);
}

void ane_unpad_column_f32(const ane_layout *l, const void *surface, int64_t col, float *out) {
    for (int64_t r = 0; r < l->rows; r++)
        get_row(l->elem,
                (const unsigned char *)surface + (size_t)r * l->row_bytes +
                    (size_t)col * (size_t)l->elem,
                &out[r], 1, 1);
}

nc_status ane_copy_columns_fp16(const ane_layout *src_l, const void *src, int64_t src_col,
                                const ane_layout *dst_l, void *dst, int64_t dst_col, int64_t n,
                                int zero_dst, nc_error *err) {
    if (src_l->elem != ANE_ELEM_FP16 || dst_l->elem != ANE_ELEM_FP16 ||
        src_l->rows != dst_l->rows || src_col < 0 || src_col >= src_l->width || dst_col < 0 ||
        dst_col >= dst_l->width || n < 1 || n > src_l->width || n > dst_l->width)
        return nc_fail(err, NC_ERR_INVALID,
                       "column copy: %lld columns from %lld of %lld rows x %lld into %lld of "
                       "%lld rows x %lld",
                       (long long)n, (long long)src_col, (long long)src_l->rows,
                       (long long)src_l->width, (long long)dst_col, (long long)dst_l->rows,
                       (long long)dst_l->width);
    for (int64_t r = 0; r < src_l->rows; r++) {
        unsigned char *d = (unsigned char *)dst + (size_t)r * dst_l->row_bytes;
        const unsigned char *s = (const unsigned char *)src + (size_t)r * src_l->row_bytes;
        if (zero_dst) memset(d, 0, dst_l->row_bytes);
        for (int64_t k = 0; k < n; k++)
            memcpy(d + (size_t)((dst_col + k) % dst_l->width) * 2,
                   s + (size_t)((src_col + k) % src_l->width) * 2, 2);
    }
    return NC_OK;
}
