/* Fuzz target: a weight.bin (MIL blob storage v2). The reader validates the
 * header, every record the header claims, and records at arbitrary offsets
 * against arbitrary tensor types. Then the file goes where nectar uses it:
 * written next to a MIL program whose constants refer to each valid record
 * (BLOBFILE with the record's dtype and element count, through the three
 * path spellings the blob cache resolves), that program's values read
 * element by element, and interpreted: the constants themselves, palettized
 * indices through constexpr_lut_to_dense, and quantized data through
 * constexpr_blockwise_shift_scale. Every value read must match the payload
 * bytes decoded independently (fuzz_ref.h). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_files.h"
#include "fuzz_ref.h"
#include "mil/interp.h"
#include "mil/mil_blob.h"
#include "mil/parse.h"

#define MAX_RECORDS 24
#define MAX_ELEMS 4096

typedef struct {
    mil_blob_entry e;
    size_t n;  /* elements */
    int lut;   /* > 0: also constexpr_lut_to_dense indices, palette entries of this many values */
    int shift; /* also used as constexpr_blockwise_shift_scale data */
} record;

/* A little-endian unsigned integer of n bytes. */
static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int b = n - 1; b >= 0; b--)
        v = v << 8 | p[b];
    return v;
}

/* Element i of a record's payload, decoded from the bytes. */
static double ref_value(const mil_blob_entry *e, size_t i) {
    const uint8_t *p = e->data;
    switch (e->dtype) {
    case MIL_DT_FP16:
        return fuzz_fp16_to_f64((uint16_t)le(p + 2 * i, 2));
    case MIL_DT_BF16:
        return fuzz_bf16_to_f32((uint16_t)le(p + 2 * i, 2));
    case MIL_DT_FP32: {
        uint32_t bits = (uint32_t)le(p + 4 * i, 4);
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    case MIL_DT_INT8:
        return (int8_t)p[i];
    case MIL_DT_UINT8:
        return p[i];
    case MIL_DT_INT16:
        return (int16_t)le(p + 2 * i, 2);
    case MIL_DT_UINT16:
        return (double)le(p + 2 * i, 2);
    case MIL_DT_INT32:
        return (int32_t)le(p + 4 * i, 4);
    case MIL_DT_UINT32:
        return (double)le(p + 4 * i, 4);
    case MIL_DT_INT4: {
        unsigned u = fuzz_sub_byte(p, i, 4);
        return u & 8 ? (double)u - 16 : (double)u;
    }
    case MIL_DT_UINT1:
    case MIL_DT_UINT2:
    case MIL_DT_UINT3:
    case MIL_DT_UINT4:
    case MIL_DT_UINT6:
        return fuzz_sub_byte(p, i, mil_dtype_bits(e->dtype));
    case MIL_DT_FP8E4M3FN: { /* bias 7, no infinities, S.1111.111 is NaN */
        int exp = (p[i] >> 3) & 15, mant = p[i] & 7;
        double v = exp == 15 && mant == 7 ? NAN
                   : exp == 0             ? ldexp(mant, -9)
                                          : ldexp(8 + mant, exp - 10);
        return p[i] & 0x80 ? -v : v;
    }
    case MIL_DT_FP8E5M2: /* binary16 without its low byte */
        return fuzz_fp16_to_f64((uint16_t)(p[i] << 8));
    default:
        return NAN;
    }
}

/* Elements a record holds: its payload bits less the padding. */
static size_t record_elems(const mil_blob_entry *e) {
    int bits = mil_dtype_bits(e->dtype);
    if (bits <= 0 || e->size_bytes > (uint64_t)MAX_ELEMS * 8) return 0;
    return (size_t)((e->size_bytes * 8 - e->padding_bits) / (uint64_t)bits);
}

static int is_index_type(mil_dtype dt) {
    return dt == MIL_DT_UINT8 || (mil_dtype_is_sub_byte(dt) && dt != MIL_DT_INT4);
}

static int is_shift_type(mil_dtype dt) {
    return dt == MIL_DT_INT8 || dt == MIL_DT_UINT8 || dt == MIL_DT_INT4 || dt == MIL_DT_UINT4;
}

static void blobfile(FILE *f, const record *r, int k) {
    static const char *spellings[3] = {"@model_path/weight.bin", "weight.bin", NULL};
    char abs[256];
    const char *path =
        spellings[k % 3] ? spellings[k % 3] : fuzz_path(abs, sizeof abs, "weight.bin");
    fprintf(f, "tensor<%s, [%zu]>(BLOBFILE(path = string(\"%s\"), offset = uint64(%llu)))",
            mil_dtype_name(r->e.dtype), r->n, path, (unsigned long long)r->e.record_offset);
}

/* The program: per record a const, and the constexpr ops that take it. */
static char *program_text(const record *r, int nr, size_t *len) {
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f) abort();
    fprintf(f, "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
               "    func main<ios18>(tensor<fp32, [1]> x) {\n");
    for (int k = 0; k < nr; k++) {
        fprintf(f, "        tensor<%s, [%zu]> b%d = const()[name = string(\"b%d\"), val = ",
                mil_dtype_name(r[k].e.dtype), r[k].n, k, k);
        blobfile(f, &r[k], k);
        fprintf(f, "];\n");
        if (r[k].lut) { /* palette entry j is (j) or (j, j + 0.5) */
            int np = 1 << mil_dtype_bits(r[k].e.dtype), vs = r[k].lut;
            fprintf(f, "        tensor<fp16, [%zu]> l%d = constexpr_lut_to_dense(indices = ",
                    r[k].n * (size_t)vs, k);
            blobfile(f, &r[k], k + 1);
            fprintf(f, ", lut = tensor<fp16, [1, %d, %d]>([", np, vs);
            for (int j = 0; j < np * vs; j++)
                fprintf(f, "%s%g", j ? ", " : "", j / vs + 0.5 * (j % vs));
            fprintf(f, "]))[name = string(\"l%d\")];\n", k);
        }
        if (r[k].shift) {
            fprintf(f, "        tensor<fp16, [%zu]> s%d = constexpr_blockwise_shift_scale(data = ",
                    r[k].n, k);
            blobfile(f, &r[k], k + 2);
            fprintf(f, ", scale = tensor<fp16, [1]>([0x1p-1]))[name = string(\"s%d\")];\n", k);
        }
    }
    fprintf(f, "    } -> (x");
    for (int k = 0; k < nr; k++) {
        fprintf(f, ", b%d", k);
        if (r[k].lut) fprintf(f, ", l%d", k);
        if (r[k].shift) fprintf(f, ", s%d", k);
    }
    fprintf(f, ");\n}\n");
    if (fclose(f) != 0) abort();
    return text;
}

/* The program's view of each constant: its bytes and every element. */
static void read_values(const mil_program *p, const record *r) {
    const mil_function *fn = p->functions[0];
    nc_error err;
    for (int o = 0; o < fn->n_ops; o++) {
        const mil_op *op = fn->ops[o];
        if (strcmp(op->type, "const") || op->n_outputs != 1) continue;
        const record *rk = &r[atoi(op->outputs[0]->name + 1)];
        const mil_value *v = mil_op_attr(op, "val");
        const uint8_t *bytes;
        size_t nb;
        if (!v || mil_value_bytes(p, v, &bytes, &nb, &err) != NC_OK) abort();
        if (nb != rk->e.size_bytes || memcmp(bytes, rk->e.data, nb)) abort();
        for (size_t i = 0; i < rk->n; i++) {
            double d, want = ref_value(&rk->e, i);
            if (mil_value_to_f64(p, v, i, &d, &err) != NC_OK) abort();
            if (!fuzz_same(d, want)) abort();
        }
    }
}

/* Interpreted: outputs equal the decoded payload (l: the index itself, and
 * the index + 0.5 after it with two-value entries; s: half the quantized
 * value). Not every dtype is an interpreter tensor type,
 * so a refused program is fine; a wrong value is not. */
static void interpret(const mil_program *p, const record *r, int nr) {
    mil_interp *it;
    nc_error err;
    float x = 1.0f, *out = malloc(MAX_ELEMS * sizeof *out);
    if (!out) abort();
    if (mil_interp_new_limited(p, "main", MIL_INTERP_FP32, MAX_ELEMS, &it, &err) == NC_OK) {
        if (mil_interp_set_input(it, "x", MIL_DT_FP32, 1, (const int64_t[]){1}, &x, &err) ==
                NC_OK &&
            mil_interp_run(it, &err) == NC_OK) {
            for (int k = 0; k < nr; k++) {
                char name[16];
                double scale[3] = {1, 1, 0.5};
                for (int kind = 0; kind < 3; kind++) {
                    if ((kind == 1 && !r[k].lut) || (kind == 2 && !r[k].shift)) continue;
                    size_t per = kind == 1 ? (size_t)r[k].lut : 1;
                    snprintf(name, sizeof name, "%c%d", "bls"[kind], k);
                    if (mil_interp_copy_out(it, name, MIL_DT_FP32, out, MAX_ELEMS, &err) != NC_OK)
                        continue;
                    for (size_t i = 0; i < r[k].n * per; i++) {
                        double want = ref_value(&r[k].e, i / per);
                        /* int32/uint32 as fp32 round; compare where fp32 is exact */
                        if (!isnan(want) && fabs(want) < 16777216.0 &&
                            !fuzz_same(out[i],
                                       (float)(want * scale[kind] + 0.5 * (double)(i % per))))
                            abort();
                    }
                }
            }
        }
        mil_interp_free(it);
    }
    free(out);
}

/* The program over records r, parsed with the fuzz folder as its model
 * folder (the text is ours: a parse failure is a bug). */
static mil_program *parse_program(const record *r, int nr) {
    size_t len;
    char *text = program_text(r, nr, &len);
    mil_program *p;
    nc_error err;
    if (mil_parse(text, len, "fuzz", &p, &err) != NC_OK) abort();
    if (mil_program_set_model_dir(p, fuzz_dir(), &err) != NC_OK) abort();
    free(text);
    return p;
}

static void through_program(const mil_blob_file *f, const mil_blob_entry *e, size_t n) {
    nc_error err;
    record r[MAX_RECORDS];
    int nr = 0;
    for (size_t i = 0; i < n && nr < MAX_RECORDS; i++) {
        size_t elems = record_elems(&e[i]);
        /* a record whose size is no whole number of elements has no tensor type */
        if (!elems || elems > MAX_ELEMS ||
            mil_blob_check_type(f, &e[i], e[i].dtype, elems, "t", &err) != NC_OK)
            continue;
        r[nr].e = e[i];
        r[nr].n = elems;
        /* every other index record takes the general (vector) palette path */
        r[nr].lut = !is_index_type(e[i].dtype) ? 0 : nr % 2 && 2 * elems <= MAX_ELEMS ? 2 : 1;
        r[nr].shift = is_shift_type(e[i].dtype);
        nr++;
    }
    if (!nr) return;
    mil_program *p = parse_program(r, nr);
    read_values(p, r);
    /* the interpreter has no fp8: those constants are read above only */
    int ni = 0;
    for (int k = 0; k < nr; k++)
        if (r[k].e.dtype != MIL_DT_FP8E4M3FN && r[k].e.dtype != MIL_DT_FP8E5M2) r[ni++] = r[k];
    if (ni < nr) {
        mil_program_free(p);
        p = ni ? parse_program(r, ni) : NULL;
    }
    if (p) interpret(p, r, ni);
    mil_program_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mil_blob_file f;
    nc_error err;
    fuzz_write_file("weight.bin", data, size);
    char path[256];
    mil_blob_file ff;
    nc_status from_file = mil_blob_open(fuzz_path(path, sizeof path, "weight.bin"), &ff, &err);
    if (from_file == NC_OK) mil_blob_close(&ff);
    if (mil_blob_open_memory(data, size, "fuzz", &f, &err) != NC_OK) {
        if (from_file == NC_OK) abort(); /* the file and the memory reader agree */
        return 0;
    }
    if (from_file != NC_OK) abort();
    mil_blob_entry *e;
    size_t n;
    if (mil_blob_list(&f, &e, &n, &err) == NC_OK) {
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            for (uint64_t k = 0; k < e[i].size_bytes; k++)
                sum += e[i].data[k]; /* touch every byte */
            mil_blob_check_type(&f, &e[i], e[i].dtype, e[i].size_bytes, "t", &err);
        }
        volatile uint64_t keep = sum; /* the reads must happen */
        (void)keep;
        through_program(&f, e, n);
        free(e);
    }
    for (uint64_t off = 64; off < size; off += 64) {
        mil_blob_entry one;
        if (mil_blob_entry_at(&f, off, &one, &err) == NC_OK)
            mil_blob_check_type(&f, &one, MIL_DT_UINT3, one.size_bytes * 8 / 3, "t", &err);
    }
    mil_blob_close(&f);
    return 0;
}
