/* weight.bin writer and reader against the layout of Apple's files: the
 * byte-exact example and the real offsets recorded in
 * docs/references.md §M.3 (64, 8320, 8512, ... of the
 * coremlc-compiled conv stack; 64, 4736, 5312 of the encoder), LSB-first
 * sub-byte packing worked out by hand from the MILBlob definition, and every
 * validation error of the reader; and a file written by Apple's own
 * MILBlob writer (via coremltools), read and reproduced byte for byte. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "base/mmap.h"
#include "mil/mil_blob.h"

static char tmp_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[512];
    if (!tmp_dir[0]) {
        snprintf(tmp_dir, sizeof tmp_dir, "/tmp/nectar_test_mil_blob_XXXXXX");
        if (!mkdtemp(tmp_dir)) return NULL;
    }
    snprintf(buf, sizeof buf, "%s/%s", tmp_dir, name);
    return buf;
}

/* Writes blobs of (dtype, n elements of zero bytes) and returns their offsets. */
static int write_blobs(const char *path, const mil_dtype *dts, const uint64_t *ns, int n,
                       uint64_t *offs, nc_error *err) {
    mil_blob_writer w;
    if (mil_blob_writer_open(&w, path, err)) return 0;
    for (int i = 0; i < n; i++) {
        uint64_t bytes = mil_blob_payload_bytes(dts[i], ns[i], NULL);
        uint8_t *buf = calloc(1, bytes ? bytes : 1);
        nc_status st = mil_blob_writer_add(&w, dts[i], ns[i], buf, &offs[i], err);
        free(buf);
        if (st) {
            mil_blob_writer_abort(&w);
            return 0;
        }
    }
    return mil_blob_writer_finish(&w, err) == NC_OK;
}

static void test_writer_matches_the_documented_byte_exact_example(void) {
    /* mil-format.md: one fp16 tensor of 4 values -> 136-byte file */
    const char *path = tmp_path("one.bin");
    nc_error err;
    mil_blob_writer w;
    uint16_t data[4] = {0x3c00, 0x4000, 0x4200, 0x4400};
    uint64_t off;
    CHECK_OK(mil_blob_writer_open(&w, path, &err), &err);
    CHECK_OK(mil_blob_writer_add(&w, MIL_DT_FP16, 4, data, &off, &err), &err);
    CHECK_OK(mil_blob_writer_finish(&w, &err), &err);
    CHECK(off == 64);
    char *buf;
    size_t n;
    CHECK_OK(nc_read_file(path, &buf, &n, &err), &err);
    static const uint8_t expect_head[8] = {1, 0, 0, 0, 2, 0, 0, 0};
    static const uint8_t expect_rec[32] = {0xEF, 0xBE, 0xAD, 0xDE, 1, 0,    0, 0, 8, 0, 0,
                                           0,    0,    0,    0,    0, 0x80, 0, 0, 0, 0, 0,
                                           0,    0,    0,    0,    0, 0,    0, 0, 0, 0};
    int ok = n == 136 && !memcmp(buf, expect_head, 8) && !memcmp(buf + 64, expect_rec, 32) &&
             !memcmp(buf + 128, data, 8);
    for (int i = 8; ok && i < 64; i++)
        ok = buf[i] == 0;
    for (int i = 96; ok && i < 128; i++)
        ok = buf[i] == 0;
    free(buf);
    CHECKF(ok, "file differs from the documented 136-byte layout (size %zu)", n);
    CHECK(access(tmp_path("one.bin.tmp"), F_OK) != 0); /* no temp file left */
}

static void test_writer_reproduces_real_coremlc_offsets(void) {
    /* The conv stack in the corpus: weight fp16 [64,64,1,1] then bias fp16
     * [64], three times; coremlc wrote offsets 64, 8320, 8512, 16768, 16960, 25216. */
    mil_dtype dts[6];
    uint64_t ns[6], offs[6];
    for (int i = 0; i < 6; i++) {
        dts[i] = MIL_DT_FP16;
        ns[i] = i % 2 ? 64 : 64 * 64;
    }
    nc_error err;
    CHECK(write_blobs(tmp_path("conv.bin"), dts, ns, 6, offs, &err));
    static const uint64_t want[6] = {64, 8320, 8512, 16768, 16960, 25216};
    for (int i = 0; i < 6; i++)
        CHECKF(offs[i] == want[i], "blob %d at %llu, coremlc wrote %llu", i,
               (unsigned long long)offs[i], (unsigned long long)want[i]);
    /* The encoder: fp16 [256,1,3,3] at 64, fp16 [256] bias at 4736, next at 5312. */
    mil_dtype d2[3] = {MIL_DT_FP16, MIL_DT_FP16, MIL_DT_FP16};
    uint64_t n2[3] = {256 * 9, 256, 1}, o2[3];
    CHECK(write_blobs(tmp_path("enc.bin"), d2, n2, 3, o2, &err));
    CHECK(o2[0] == 64 && o2[1] == 4736 && o2[2] == 5312);
    /* Palettized: uint4 [1024,1024] indices then the fp16 [64,1,16,1] LUT:
     * +524288+64 and +2048+64 as in the real file (6611392 -> 7135744 -> 7137856). */
    mil_dtype d3[3] = {MIL_DT_UINT4, MIL_DT_FP16, MIL_DT_FP16};
    uint64_t n3[3] = {1024 * 1024, 64 * 16, 1}, o3[3];
    CHECK(write_blobs(tmp_path("pal.bin"), d3, n3, 3, o3, &err));
    CHECK(o3[1] - o3[0] == 7135744 - 6611392);
    CHECK(o3[2] - o3[1] == 7137856 - 7135744);
}

static void test_reader_lists_and_validates_written_blobs(void) {
    mil_dtype dts[4] = {MIL_DT_FP16, MIL_DT_INT8, MIL_DT_UINT3, MIL_DT_FP32};
    uint64_t ns[4] = {5, 3, 7, 2}, offs[4];
    nc_error err;
    const char *path = tmp_path("mixed.bin");
    CHECK(write_blobs(path, dts, ns, 4, offs, &err));
    mil_blob_file f;
    CHECK_OK(mil_blob_open(path, &f, &err), &err);
    mil_blob_entry *e;
    size_t n;
    CHECK_OK(mil_blob_list(&f, &e, &n, &err), &err);
    CHECK(n == 4);
    for (int i = 0; i < 4; i++) {
        CHECK(e[i].record_offset == offs[i] && e[i].dtype == dts[i]);
        CHECK(e[i].data_offset == offs[i] + 64);
        CHECK_OK(mil_blob_check_type(&f, &e[i], dts[i], ns[i], "t", &err), &err);
    }
    CHECK(e[2].size_bytes == 3 && e[2].padding_bits == 3); /* 7 x 3 bits = 21 bits */
    CHECK(mil_blob_check_type(&f, &e[0], MIL_DT_FP16, 6, "w", &err) == NC_ERR_FORMAT);
    CHECKF(strstr(err.msg, "w: blob at offset 64 has 10 bytes"), "%s", err.msg);
    CHECK(mil_blob_check_type(&f, &e[0], MIL_DT_FP32, 5, "w", &err) == NC_ERR_FORMAT);
    CHECKF(strstr(err.msg, "holds fp16, MIL declares fp32"), "%s", err.msg);
    free(e);
    mil_blob_close(&f);
}

/* A valid 136-byte single-blob image to corrupt. */
static void make_image(uint8_t *img) {
    memset(img, 0, 136);
    img[0] = 1;
    img[4] = 2;
    uint8_t rec[32] = {0xEF, 0xBE, 0xAD, 0xDE, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0x80};
    memcpy(img + 64, rec, sizeof rec);
}

static void expect_entry_error(uint8_t *img, size_t size, uint64_t off, const char *needle) {
    mil_blob_file f;
    mil_blob_entry e;
    nc_error err;
    CHECK_OK(mil_blob_open_memory(img, size, "w.bin", &f, &err), &err);
    nc_status st = mil_blob_entry_at(&f, off, &e, &err);
    mil_blob_close(&f);
    CHECKF(st != NC_OK && strstr(err.msg, needle), "expected '%s', got '%s'", needle, err.msg);
}

static void test_reader_rejects_corrupt_files_with_clear_errors(void) {
    uint8_t img[136];
    nc_error err;
    mil_blob_file f;
    make_image(img);
    img[64] = 0;
    expect_entry_error(img, 136, 64, "w.bin: blob at offset 64: bad sentinel 0xDEADBE00");
    make_image(img);
    expect_entry_error(img, 136, 128, "is outside the file");
    expect_entry_error(img, 136, 4096, "is outside the file");
    expect_entry_error(img, 136, 65, "not 64-byte aligned");
    expect_entry_error(img, 136, 0, "is outside the file");
    img[8 + 64] = 200; /* size 200 runs past the end */
    expect_entry_error(img, 136, 64, "data [128, +200) is outside the file");
    make_image(img);
    img[68] = 99; /* dtype code */
    expect_entry_error(img, 136, 64, "unknown dtype code 99");
    make_image(img);
    img[64 + 24] = 3; /* padding on fp16 */
    expect_entry_error(img, 136, 64, "padding of 3 bits is invalid for fp16");
    make_image(img);
    img[64 + 16] = 0x10; /* data offset inside the record */
    expect_entry_error(img, 136, 64, "is outside the file");
    make_image(img);
    img[4] = 1;
    CHECK(mil_blob_open_memory(img, 136, "w.bin", &f, &err) == NC_ERR_FORMAT);
    CHECKF(strstr(err.msg, "w.bin: blob storage version 1, expected 2"), "%s", err.msg);
    CHECK(mil_blob_open_memory(img, 10, "w.bin", &f, &err) == NC_ERR_FORMAT);
    make_image(img);
    img[0] = 200; /* count larger than the file can hold */
    CHECK_OK(mil_blob_open_memory(img, 136, "w.bin", &f, &err), &err);
    mil_blob_entry *e;
    size_t n;
    CHECK(mil_blob_list(&f, &e, &n, &err) != NC_OK);
    mil_blob_close(&f);
    CHECK(mil_blob_open(tmp_path("missing.bin"), &f, &err) == NC_ERR_IO);
}

static void test_sub_byte_packing_is_lsb_first(void) {
    /* uint4 [1, 2, 3]: element i at bits 4i.. -> 0x21, 0x03 */
    uint8_t v4[3] = {1, 2, 3}, out[4];
    mil_pack_sub_byte(v4, 3, 4, out);
    CHECK(out[0] == 0x21 && out[1] == 0x03);
    /* uint3 [7, 0, 5]: bits 0-2 = 111, 3-5 = 000, 6-8 = 101 -> 0x47, 0x01 */
    uint8_t v3[3] = {7, 0, 5};
    mil_pack_sub_byte(v3, 3, 3, out);
    CHECK(out[0] == 0x47 && out[1] == 0x01);
    /* uint6 [63, 1]: 111111 then 000001 starting at bit 6 -> 0x7f, 0x00 */
    uint8_t v6[2] = {63, 1};
    mil_pack_sub_byte(v6, 2, 6, out);
    CHECK(out[0] == 0x7f && out[1] == 0x00);
    /* uint1 [1,0,1,1,0,0,0,1] -> 0b10001101 */
    uint8_t v1[8] = {1, 0, 1, 1, 0, 0, 0, 1};
    mil_pack_sub_byte(v1, 8, 1, out);
    CHECK(out[0] == 0x8d);
    for (int i = 0; i < 3; i++)
        CHECK(mil_unpack_sub_byte((const uint8_t[]){0x47, 0x01}, (size_t)i, 3) == v3[i]);
    for (int i = 0; i < 2; i++)
        CHECK(mil_unpack_sub_byte((const uint8_t[]){0x7f, 0x00}, (size_t)i, 6) == v6[i]);
    /* int4 -1 is the nibble 0xf */
    uint8_t vi[2] = {(uint8_t)-1, 2};
    mil_pack_sub_byte(vi, 2, 4, out);
    CHECK(out[0] == 0x2f);
    uint64_t pad;
    CHECK(mil_blob_payload_bytes(MIL_DT_UINT6, 5, &pad) == 4 && pad == 2);
}

static void test_every_dtype_code_maps_both_ways(void) {
    /* BlobDataType codes from MILBlob/Blob/BlobDataType.hpp (mil-format.md) */
    static const struct {
        mil_dtype dt;
        uint32_t code;
    } codes[] = {{MIL_DT_FP16, 1},       {MIL_DT_FP32, 2},    {MIL_DT_UINT8, 3},
                 {MIL_DT_INT8, 4},       {MIL_DT_BF16, 5},    {MIL_DT_INT16, 6},
                 {MIL_DT_UINT16, 7},     {MIL_DT_INT4, 8},    {MIL_DT_UINT1, 9},
                 {MIL_DT_UINT2, 10},     {MIL_DT_UINT4, 11},  {MIL_DT_UINT3, 12},
                 {MIL_DT_UINT6, 13},     {MIL_DT_INT32, 14},  {MIL_DT_UINT32, 15},
                 {MIL_DT_FP8E4M3FN, 16}, {MIL_DT_FP8E5M2, 17}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        CHECK(mil_dtype_blob_code(codes[i].dt) == codes[i].code);
        CHECK(mil_dtype_from_blob_code(codes[i].code) == codes[i].dt);
    }
    CHECK(mil_dtype_from_blob_code(0) == MIL_DT_INVALID &&
          mil_dtype_from_blob_code(18) == MIL_DT_INVALID);
    CHECK(mil_dtype_blob_code(MIL_DT_BOOL) == 0);
}

/* Apple's MILBlob StorageWriter (via coremltools, tools/mil_blob_fixtures.py)
 * wrote tests/fixtures/mil_blob/coremltools.bin: one blob per dtype it
 * supports. Our reader must find each blob's dtype and exact payload, and
 * our writer, given the same values, must produce the identical file. */
static void test_matches_apples_blob_writer_byte_for_byte(void) {
    char *list, *ref;
    size_t n_list, n_ref;
    nc_error err;
    CHECK_OK(nc_read_file("tests/fixtures/mil_blob/coremltools.txt", &list, &n_list, &err), &err);
    CHECK_OK(nc_read_file("tests/fixtures/mil_blob/coremltools.bin", &ref, &n_ref, &err), &err);
    mil_blob_file f;
    mil_blob_writer w;
    CHECK_OK(mil_blob_open_memory((const uint8_t *)ref, n_ref, "coremltools.bin", &f, &err), &err);
    const char *out_path = tmp_path("ours.bin");
    CHECK_OK(mil_blob_writer_open(&w, out_path, &err), &err);
    int n_blobs = 0, ok = 1;
    char *save = NULL;
    for (char *line = strtok_r(list, "\n", &save); line && ok; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        char name[16];
        unsigned long long count, offset;
        int used;
        ok = sscanf(line, "%15s %llu %llu%n", name, &count, &offset, &used) == 3 && count <= 64;
        mil_dtype dt = mil_dtype_from_name(name);
        int bits = mil_dtype_bits(dt);
        uint8_t vals[64], payload[512];
        memset(payload, 0, sizeof payload);
        const char *p = line + used;
        for (unsigned long long i = 0; ok && i < count; i++) {
            char *end;
            long long v = strtoll(p, &end, 10);
            ok = end != p;
            p = end;
            if (bits < 8)
                vals[i] = (uint8_t)v;
            else
                for (int b = 0; b < bits / 8; b++)
                    payload[i * (unsigned)(bits / 8) + (unsigned)b] =
                        (uint8_t)((unsigned long long)v >> (8 * b));
        }
        if (bits < 8) mil_pack_sub_byte(vals, count, bits, payload);
        uint64_t size = mil_blob_payload_bytes(dt, count, NULL), mine;
        mil_blob_entry e;
        CHECK_OK(mil_blob_entry_at(&f, offset, &e, &err), &err);
        CHECK_OK(mil_blob_check_type(&f, &e, dt, count, name, &err), &err);
        CHECKF(e.size_bytes == size && !memcmp(e.data, payload, size), "%s payload differs", name);
        CHECK_OK(mil_blob_writer_add(&w, dt, count, payload, &mine, &err), &err);
        CHECKF(mine == offset, "%s: our offset %llu, Apple's %llu", name, (unsigned long long)mine,
               offset);
        n_blobs++;
    }
    CHECK(ok);
    CHECK_OK(mil_blob_writer_finish(&w, &err), &err);
    CHECK(n_blobs == 14 && f.count == 14);
    char *ours;
    size_t n_ours;
    CHECK_OK(nc_read_file(out_path, &ours, &n_ours, &err), &err);
    int same = n_ours == n_ref && !memcmp(ours, ref, n_ref);
    free(ours);
    free(list);
    free(ref);
    mil_blob_close(&f);
    remove(out_path);
    CHECKF(same, "our file (%zu bytes) differs from Apple's (%zu bytes)", n_ours, n_ref);
}

static void cleanup(void) {
    const char *names[] = {"one.bin", "conv.bin", "enc.bin", "pal.bin", "mixed.bin"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        remove(tmp_path(names[i]));
    rmdir(tmp_dir);
}

int main(void) {
    RUN(test_writer_matches_the_documented_byte_exact_example);
    RUN(test_writer_reproduces_real_coremlc_offsets);
    RUN(test_reader_lists_and_validates_written_blobs);
    RUN(test_reader_rejects_corrupt_files_with_clear_errors);
    RUN(test_sub_byte_packing_is_lsb_first);
    RUN(test_every_dtype_code_maps_both_ways);
    RUN(test_matches_apples_blob_writer_byte_for_byte);
    cleanup();
    return nc_test_exit_code();
}
