/* `nectar quantize` (see quant_write.h): streams the quantized tensors into
 * one model.safetensors through st_write_file, quantizing the rows that
 * cover each chunk it asks for, then copies the folder's other files. */
#include "models/quant_write.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mmap.h"
#include "cpu/cpu_quant.h"
#include "io/hf_weights.h"
#include "io/safetensors_write.h"

typedef struct {
    const st_tensor *src;
    cpu_wtype qtype; /* CPU_W_Q8/Q4, or CPU_W_N: copied as is */
    size_t row_bytes;
} qw_item;

typedef struct {
    qw_item *items;
    float *row_f32; /* one source row widened */
    uint8_t *row_q; /* one quantized row */
} qw_ctx;

static int is_float(st_dtype d) {
    return d == ST_F32 || d == ST_F16 || d == ST_BF16;
}
static cpu_wtype float_wtype(st_dtype d) {
    return d == ST_F32 ? CPU_W_F32 : d == ST_F16 ? CPU_W_F16 : CPU_W_BF16;
}

int quant_write_takes(int ndim, st_dtype dt, int64_t cols) {
    return ndim == 2 && is_float(dt) && cols > 0 && cols <= INT_MAX;
}

void quant_write_stored_shape(st_write_tensor *t, cpu_wtype type) {
    t->dtype = ST_U8;
    t->shape[1] = (int64_t)cpu_wtype_row_bytes(type, (int)t->shape[1]);
}

void quant_write_span(cpu_wtype type, st_dtype dt, int cols, const void *src, size_t first,
                      size_t n, float *row_f32, uint8_t *row_q, void *dst) {
    size_t row_bytes = cpu_wtype_row_bytes(type, cols);
    size_t in_row = (size_t)cols * st_dtype_size(dt), r0 = first / row_bytes;
    uint8_t *o = dst;
    for (size_t at = first; at < first + n;) {
        size_t r = at / row_bytes, off = at % row_bytes;
        size_t take = row_bytes - off < first + n - at ? row_bytes - off : first + n - at;
        cpu_kernels_scalar.row_to_f32[float_wtype(dt)]((const uint8_t *)src + (r - r0) * in_row,
                                                       row_f32, cols);
        cpu_quantize_weight_row(type, row_f32, cols, row_q);
        memcpy(o + (at - first), row_q + off, take);
        at += take;
    }
}

/* Bytes [first, first + n) of item `index` of the output. */
static nc_status fill(void *vctx, int index, size_t first, size_t n, void *dst, nc_error *err) {
    (void)err;
    qw_ctx *c = vctx;
    const qw_item *it = &c->items[index];
    if (it->qtype == CPU_W_N) {
        size_t esz = st_dtype_size(it->src->dtype);
        memcpy(dst, (const uint8_t *)it->src->data + first * esz, n * esz);
        return NC_OK;
    }
    int cols = (int)it->src->shape[1];
    size_t in_row = (size_t)cols * st_dtype_size(it->src->dtype);
    quant_write_span(it->qtype, it->src->dtype, cols,
                     (const uint8_t *)it->src->data + first / it->row_bytes * in_row, first, n,
                     c->row_f32, c->row_q, dst);
    return NC_OK;
}

static nc_status make_dir(const char *dir, nc_error *err) {
    if (nc_is_dir(dir)) return NC_OK;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return nc_fail(err, NC_ERR_IO, "%s: cannot create folder: %s", dir, strerror(errno));
    return NC_OK;
}

/* Every regular file of in_dir except the weights (config, tokenizer, ...). */
static nc_status copy_other_files(const char *in_dir, const char *out_dir, nc_error *err) {
    DIR *d = opendir(in_dir);
    if (!d) return nc_fail(err, NC_ERR_IO, "%s: cannot list: %s", in_dir, strerror(errno));
    nc_status st = NC_OK;
    struct dirent *e;
    while (st == NC_OK && (e = readdir(d))) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        if (n[0] == '.' || (len > 12 && !strcmp(n + len - 12, ".safetensors")) ||
            !strcmp(n, "model.safetensors.index.json"))
            continue;
        char src[PATH_MAX], dst[PATH_MAX];
        hf_path_join(src, sizeof src, in_dir, n);
        hf_path_join(dst, sizeof dst, out_dir, n);
        struct stat sb;
        if (stat(src, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        char *buf = NULL;
        size_t size = 0;
        st = nc_read_file(src, &buf, &size, err);
        if (st == NC_OK) st = nc_write_file_atomic(dst, buf, size, err);
        free(buf);
    }
    closedir(d);
    return st;
}

nc_status quant_write_model(const char *in_dir, const char *out_dir, cpu_wtype type,
                            quant_write_stats *stats, nc_error *err) {
    if (type != CPU_W_Q8 && type != CPU_W_Q4)
        return nc_fail(err, NC_ERR_INVALID, "quantize: type must be q8 or q4");
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(in_dir, a) && realpath(out_dir, b) && !strcmp(a, b))
        return nc_fail(err, NC_ERR_INVALID, "%s: the output folder must differ from the input",
                       out_dir);
    hf_weights *w;
    NC_TRY(hf_weights_open(in_dir, &w, err));
    int n = 0, max_cols = 1;
    for (int s = 0; s < w->n_shards; s++)
        n += w->shards[s]->n_tensors;
    qw_item *items = calloc((size_t)n + 1, sizeof *items);
    st_write_tensor *ts = calloc((size_t)n + 1, sizeof *ts);
    quant_write_stats sum = {0};
    nc_status st = items && ts ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "quantize: out of memory");
    for (int s = 0, i = 0; st == NC_OK && s < w->n_shards; s++)
        for (int j = 0; j < w->shards[s]->n_tensors; j++, i++) {
            const st_tensor *t = &w->shards[s]->tensors[j];
            items[i].src = t;
            ts[i].name = t->name;
            ts[i].ndim = t->ndim;
            memcpy(ts[i].shape, t->shape, sizeof t->shape);
            ts[i].dtype = t->dtype;
            items[i].qtype = CPU_W_N;
            sum.bytes_in += t->size_bytes;
            if (quant_write_takes(t->ndim, t->dtype, t->shape[1])) {
                items[i].qtype = type;
                items[i].row_bytes = cpu_wtype_row_bytes(type, (int)t->shape[1]);
                quant_write_stored_shape(&ts[i], type);
                if (t->shape[1] > max_cols) max_cols = (int)t->shape[1];
                sum.n_quantized++;
            } else {
                sum.n_copied++;
            }
            sum.bytes_out += st_write_tensor_bytes(&ts[i]);
        }
    qw_ctx c = {items, malloc((size_t)max_cols * sizeof(float)),
                malloc(cpu_wtype_row_bytes(CPU_W_Q8, max_cols))};
    if (st == NC_OK && (!c.row_f32 || !c.row_q))
        st = nc_fail(err, NC_ERR_NOMEM, "quantize: out of memory");
    if (st == NC_OK) st = make_dir(out_dir, err);
    char path[PATH_MAX];
    hf_path_join(path, sizeof path, out_dir, "model.safetensors");
    if (st == NC_OK) st = st_write_file(path, ts, n, fill, &c, err);
    if (st == NC_OK) st = copy_other_files(in_dir, out_dir, err);
    free(c.row_f32);
    free(c.row_q);
    free(items);
    free(ts);
    hf_weights_close(w);
    if (st == NC_OK && stats) *stats = sum;
    return st;
}
