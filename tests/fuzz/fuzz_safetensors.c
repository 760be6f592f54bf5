/* Fuzz target: a .safetensors file, parsed in memory and then taken through
 * what the loaders do with an accepted file: the folder opened by hf_weights
 * (as model.safetensors, and sharded through an index.json listing its
 * tensors), lookup by name, the float and Q8/Q4 matrix checks of the CPU
 * loaders (hf_tensors), rows widened to fp32 by every kernel table and
 * elements read and narrowed to fp16 by the lowering (weights_fp16). Beyond
 * "no crash, no leak": accepted tensors lie inside the buffer, hold shape x
 * dtype-size bytes and come sorted; the folder holds the same tensors; what
 * each reader returns agrees with the bytes (fuzz_ref.h). */
#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_kernels.h"
#include "fuzz_files.h"
#include "fuzz_ref.h"
#include "io/hf_weights.h"
#include "io/safetensors.h"
#include "lower/weights_fp16.h"
#include "models/hf_tensors.h"

#define MAX_READ 4096               /* elements read back per tensor */
#define ABSENT "nectar.fuzz.absent" /* a name the index lists but the file lacks */

static void check_parsed(const uint8_t *data, size_t size, const st_tensor *t, int n) {
    for (int i = 0; i < n; i++) {
        const uint8_t *p = t[i].data;
        if (p < data || p + t[i].size_bytes > data + size) abort();
        size_t elems = 1;
        for (int d = 0; d < t[i].ndim; d++)
            elems *= (size_t)t[i].shape[d];
        if (elems != t[i].n_elems || t[i].size_bytes != elems * st_dtype_size(t[i].dtype)) abort();
        const char *dt = st_dtype_name(t[i].dtype);
        if (!dt || !dt[0]) abort();
        if (i && strcmp(t[i - 1].name, t[i].name) >= 0) abort();
    }
}

static int is_float(st_dtype d) {
    return d == ST_F32 || d == ST_F16 || d == ST_BF16;
}

/* Element i of a float tensor from its bytes. */
static double ref_elem(const st_tensor *t, size_t i) {
    const uint8_t *b = t->data;
    if (t->dtype == ST_F32) {
        float f;
        memcpy(&f, b + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, b + 2 * i, 2);
    return t->dtype == ST_F16 ? fuzz_fp16_to_f64(h) : fuzz_bf16_to_f32(h);
}

/* Weight k of a stored Q8/Q4 row (cpu_quant.h's layout), in float as the
 * kernels compute it: d * code. */
static float ref_quant(cpu_wtype type, const uint8_t *row, int k) {
    const uint8_t *blk = row + (size_t)(k / 32) * (type == CPU_W_Q8 ? 34 : 18);
    uint16_t h;
    memcpy(&h, blk, 2);
    float d = (float)fuzz_fp16_to_f64(h);
    int j = k % 32, code;
    if (type == CPU_W_Q8)
        code = (int8_t)blk[2 + j];
    else
        code = (j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4) - 8;
    return d * (float)code;
}

/* Rows of a matrix the CPU loader accepted, widened by every kernel table. */
static void read_rows(const st_tensor *t, const cpu_mat *m, int rows, int cols) {
    const cpu_kernels *tables[8];
    int nt = cpu_kernels_available(tables, 8);
    size_t rb = cpu_wtype_row_bytes(m->type, cols);
    float *buf = malloc(((size_t)cols + 1) * sizeof *buf);
    if (!buf) abort();
    for (int r = 0; r < rows && r < 64 && (size_t)(r + 1) * (size_t)cols <= MAX_READ; r++) {
        const uint8_t *row = (const uint8_t *)m->data + (size_t)r * rb;
        for (int k = 0; k < nt; k++) {
            tables[k]->row_to_f32[m->type](row, buf, cols);
            for (int c = 0; c < cols; c++) {
                double want = cpu_wtype_is_quant(m->type) ? ref_quant(m->type, row, c)
                                                          : ref_elem(t, (size_t)r * cols + c);
                if (!fuzz_same(buf[c], want)) abort();
            }
        }
    }
    free(buf);
}

/* The CPU loaders' view: hft_find with the tensor's own shape (and a wrong
 * one), a 2-D tensor as a matrix, a small one as a widened vector. */
static void cpu_loader_reads(const hf_weights *w, const st_tensor *t) {
    const char *dir = fuzz_dir();
    nc_error err;
    const st_tensor *got;
    int ok_float = is_float(t->dtype) && (uintptr_t)t->data % st_dtype_size(t->dtype) == 0;
    if (t->ndim <= 3) {
        nc_status st = hft_find(w, dir, t->name, t->ndim, t->shape, &got, &err);
        if ((st == NC_OK) != ok_float || (st == NC_OK && got != t)) abort();
        if (t->ndim > 0) {
            int64_t wrong[ST_MAX_DIMS];
            memcpy(wrong, t->shape, sizeof wrong);
            wrong[0] = wrong[0] == INT64_MAX ? 0 : wrong[0] + 1;
            if (hft_find(w, dir, t->name, t->ndim, wrong, &got, &err) == NC_OK) abort();
        }
    }
    if (t->ndim == 2 && t->shape[0] <= INT_MAX && t->shape[1] <= INT_MAX) {
        int rows = (int)t->shape[0], cols = (int)t->shape[1];
        if (t->dtype == ST_U8) /* a `nectar quantize` matrix: the shape holds row bytes */
            cols = cols % 34 == 0 ? cols / 34 * 32 : cols % 18 == 0 ? cols / 18 * 32 : cols;
        cpu_mat m;
        if (hft_load_mat(w, dir, t->name, rows, cols, &m, &err) == NC_OK) {
            if (m.data != t->data) abort();
            read_rows(t, &m, rows, cols);
        }
    }
    if (ok_float && t->ndim <= 3 && t->n_elems <= MAX_READ) {
        float *buf = malloc((t->n_elems ? t->n_elems : 1) * sizeof *buf), *dst = buf;
        const float *v;
        if (!buf) abort();
        if (hft_load_vec(w, dir, t->name, t->ndim, t->shape, &dst, &v, &err) != NC_OK) abort();
        for (size_t i = 0; i < t->n_elems; i++)
            if (!fuzz_same(v[i], ref_elem(t, i))) abort();
        free(buf);
    }
}

/* The lowering's view: elements as fp32, the first MAX_READ narrowed to fp16
 * with finite values saturating (never inf), other dtypes refused. */
static void lowering_reads(const hf_weights *w, const st_tensor *t) {
    nc_error err;
    size_t n = t->n_elems < MAX_READ ? t->n_elems : MAX_READ;
    nc_fp16 *h = malloc((n ? n : 1) * sizeof *h);
    lower_fp16_stats stats = {0};
    if (!h) abort();
    nc_status st = lower_tensor_to_fp16(NULL, t, 0, n, h, &stats, &err);
    if ((st == NC_OK) != is_float(t->dtype)) abort();
    if (st == NC_OK) {
        if (stats.n_values != n) abort();
        for (size_t i = 0; i < n; i++) {
            double ref = ref_elem(t, i);
            if (!fuzz_same(lower_tensor_f32_at(t, i), ref)) abort();
            if (isfinite(ref) && !isfinite(nc_fp16_to_f32(h[i]))) abort();
        }
    }
    free(h);
    const st_tensor *got;
    if (t->ndim == 1 || t->ndim == 2) {
        int64_t d1 = t->ndim == 2 ? t->shape[1] : 0;
        st = lower_tensor_find(w, fuzz_dir(), t->name, t->shape[0], d1, &got, &err);
        if ((st == NC_OK) != (d1 != 0 || t->ndim == 1) || (st == NC_OK && got != t)) abort();
    }
}

/* index.json listing every tensor in model.safetensors; with `absent`, also
 * one that is not there, which hf_weights_open must refuse. */
static void write_index(const st_file *f, int absent) {
    json_t *root = json_object(), *map = json_object();
    for (int i = 0; i < f->n_tensors; i++)
        json_object_set_new(map, f->tensors[i].name, json_string("model.safetensors"));
    if (absent) json_object_set_new(map, ABSENT, json_string("model.safetensors"));
    json_object_set_new(root, "weight_map", map);
    char *s = json_dumps(root, 0);
    if (!s) abort();
    fuzz_write_file("model.safetensors.index.json", s, strlen(s));
    free(s);
    json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_tensor *t;
    int n;
    nc_error err;
    nc_status parsed = st_parse(data, size, "fuzz", &t, &n, &err);
    if (parsed == NC_OK) check_parsed(data, size, t, n);

    fuzz_remove_file("model.safetensors.index.json");
    fuzz_write_file("model.safetensors", data, size);
    hf_weights *w;
    nc_status opened = hf_weights_open(fuzz_dir(), &w, &err);
    if ((opened == NC_OK) != (parsed == NC_OK)) abort();
    if (opened != NC_OK) return 0;
    const st_file *f = w->shards[0];
    if (w->n_shards != 1 || f->n_tensors != n) abort();
    for (int i = 0; i < n; i++) {
        const st_tensor *ft = &f->tensors[i];
        const char *file = NULL;
        if (strcmp(ft->name, t[i].name) || ft->dtype != t[i].dtype ||
            ft->size_bytes != t[i].size_bytes || hf_weights_find(w, ft->name, &file) != ft || !file)
            abort();
        cpu_loader_reads(w, ft);
        lowering_reads(w, ft);
    }
    if (n > 0) { /* the same file as a one-shard checkpoint */
        int absent = n % 2 && !st_find(f, ABSENT);
        write_index(f, absent);
        hf_weights *ws;
        nc_status st = hf_weights_open(fuzz_dir(), &ws, &err);
        if ((st == NC_OK) == absent) abort();
        if (st == NC_OK) {
            for (int i = 0; i < n; i++)
                if (!hf_weights_find(ws, f->tensors[i].name, NULL)) abort();
            hf_weights_close(ws);
        }
    }
    hf_weights_close(w);
    st_tensors_free(t, n);
    return 0;
}
