/* safetensors reader: a file written by the Python `safetensors` library
 * (the fixture's model.safetensors) is read; hand-built byte images check
 * every validation rule with its one-line message; sharded folders are read
 * through model.safetensors.index.json. */
#include "../test.h"
#include "base/mmap.h"
#include "io/hf_weights.h"
#include "io/safetensors.h"
#include "io/safetensors_write.h"

#include <sys/stat.h>

/* A safetensors image: 8-byte length, header, then data_len bytes of data. */
static size_t make_image(unsigned char *buf, const char *header, size_t data_len) {
    size_t h = strlen(header);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, header, h);
    for (size_t i = 0; i < data_len; i++)
        buf[8 + h + i] = (unsigned char)i;
    return 8 + h + data_len;
}

/* Parses the image; returns the status, leaves the message in err. */
static nc_status parse(const char *header, size_t data_len, nc_error *err) {
    static unsigned char buf[4096];
    size_t n = make_image(buf, header, data_len);
    st_tensor *t;
    int nt;
    nc_status st = st_parse(buf, n, "x.safetensors", &t, &nt, err);
    if (st == NC_OK) st_tensors_free(t, nt);
    return st;
}

static int one_line_naming(const nc_error *err, const char *a, const char *b) {
    return !strchr(err->msg, '\n') && strstr(err->msg, a) && (!b || strstr(err->msg, b));
}

static void test_reads_file_written_by_python_safetensors(void) {
    const char *path = "tests/fixtures/qwen3/tiny_gqa2/model.safetensors";
    if (!nc_file_exists(path)) SKIP("%s missing", path);
    st_file *f;
    nc_error err;
    CHECK_OK(st_open(path, &f, &err), &err);
    const st_tensor *t = st_find(f, "model.layers.0.self_attn.q_proj.weight");
    CHECK(t && t->dtype == ST_F32 && t->ndim == 2 && t->shape[0] == 96 && t->shape[1] == 64);
    CHECK(t->size_bytes == 96 * 64 * 4 && t->n_elems == 96 * 64);
    CHECK(st_find(f, "model.norm.weight") != NULL);
    CHECK(st_find(f, "__metadata__") == NULL);
    CHECK(st_find(f, "no.such.tensor") == NULL);
    st_close(f);
}

static void test_valid_header_with_metadata_and_all_dtypes(void) {
    nc_error err;
    CHECK_OK(parse("{\"__metadata__\":{\"format\":\"pt\"},"
                   "\"a\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
                   "\"b\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[12,20]},"
                   "\"c\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[20,21]},"
                   "\"d\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[21,21]},"
                   "\"e\":{\"dtype\":\"I8\",\"shape\":[3],\"data_offsets\":[21,24]},"
                   "\"f\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[24,28]},"
                   "\"g\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[28,36]},"
                   "\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[36,40]},"
                   "\"i\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[40,44]}}",
                   44, &err),
             &err);
    unsigned char buf[512];
    size_t n =
        make_image(buf, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12);
    st_tensor *t;
    int nt;
    CHECK_OK(st_parse(buf, n, "y", &t, &nt, &err), &err);
    CHECK(nt == 1 && t[0].offset_bytes == 4 && (const unsigned char *)t[0].data == buf + n - 8);
    st_tensors_free(t, nt);
}

static void test_rejects_bad_header_length(void) {
    nc_error err;
    unsigned char buf[16] = {0};
    st_tensor *t;
    int nt;
    CHECK(st_parse(buf, 5, "short.st", &t, &nt, &err) == NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "short.st", "too short"));
    buf[0] = 200; /* header of 200 bytes in a 16-byte file */
    CHECK(st_parse(buf, 16, "trunc.st", &t, &nt, &err) == NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "trunc.st", "exceeds the file size"));
    memset(buf, 0, 16);
    buf[0] = 1; /* a one-byte header, "{": named by its length, not as bad JSON */
    buf[8] = '{';
    CHECK(st_parse(buf, 16, "one.st", &t, &nt, &err) == NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "one.st", "header length 1"));
    memset(buf, 0xff, 8); /* 2^64 - 1 */
    CHECK(st_parse(buf, 16, "huge.st", &t, &nt, &err) == NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "huge.st", "header length"));
    memset(buf, 0, 8);
    buf[3] = 0x10; /* 256 MiB > the 100 MB limit */
    CHECK(st_parse(buf, 16, "big.st", &t, &nt, &err) == NC_ERR_FORMAT);
}

/* A header that runs 1 to 8 bytes past the end of the file is refused
 * (the bound once compared with the file size, not the size after the
 * 8-byte length, and the JSON parser read past the buffer; the bytes
 * beyond `size` are valid here, so only the bound can refuse it). */
static void test_rejects_header_running_past_the_end(void) {
    unsigned char buf[64];
    size_t n = make_image(buf, "{}              ", 0); /* a 16-byte header */
    st_tensor *t;
    int nt;
    nc_error err;
    CHECK_OK(st_parse(buf, n, "exact.st", &t, &nt, &err), &err);
    st_tensors_free(t, nt);
    for (size_t k = 1; k <= 8; k++) {
        nc_status st = st_parse(buf, n - k, "short.st", &t, &nt, &err);
        if (st == NC_OK) st_tensors_free(t, nt);
        CHECKF(st == NC_ERR_FORMAT && one_line_naming(&err, "short.st", "exceeds the file size"),
               "header %zu bytes past the end: status %d (%s)", k, (int)st, err.msg);
    }
}

static void test_rejects_invalid_json(void) {
    nc_error err;
    CHECK(parse("{\"a\":{\"dtype\":\"F32\",", 0, &err) == NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "x.safetensors", "invalid JSON"));
    CHECK(parse("[1, 2, 3]", 0, &err) == NC_ERR_FORMAT);
    CHECK(parse("{\"a\":1}", 0, &err) == NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "'a'", "not an object"));
    CHECK(parse("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                8, &err) == NC_ERR_FORMAT); /* duplicate names */
}

static void test_rejects_unknown_dtype_naming_tensor(void) {
    nc_error err;
    CHECK(parse("{\"w.weight\":{\"dtype\":\"Q4_K\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2,
                &err) == NC_ERR_UNSUPPORTED);
    CHECK(one_line_naming(&err, "w.weight", "unknown dtype 'Q4_K'"));
}

static void test_rejects_span_mismatch_and_bad_offsets(void) {
    nc_error err;
    CHECK(parse("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 24, &err) ==
          NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "'w'", "24 bytes but data_offsets span 20"));
    CHECK(parse("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 6, &err) ==
          NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "'w'", "past the data block"));
    CHECK(parse("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8, &err) ==
          NC_ERR_FORMAT);
    CHECK(parse("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 8, &err) ==
          NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "'w'", "shape[0]"));
    CHECK(parse("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 8, &err) ==
          NC_ERR_FORMAT);
    CHECK(parse("{\"w\":{\"dtype\":\"U8\",\"shape\":[4611686018427387904,4611686018427387904],"
                "\"data_offsets\":[0,0]}}",
                8, &err) == NC_ERR_FORMAT);
    CHECK(parse("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 8, &err) == NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "'w'", "dtype"));
}

static void test_rejects_overlapping_tensors(void) {
    nc_error err;
    CHECK(parse("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                12, &err) == NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "'a'", "overlap"));
    CHECK(strstr(err.msg, "'b'") != NULL);
}

static void test_open_missing_file_names_it(void) {
    st_file *f;
    nc_error err;
    CHECK(st_open("build/no/such/file.safetensors", &f, &err) == NC_ERR_IO);
    CHECK(one_line_naming(&err, "build/no/such/file.safetensors", NULL));
}

/* Shard fill: element i of tensor k is k * 1000 + i. */
static nc_status fill_index(void *ctx, int k, size_t first, size_t n, void *dst, nc_error *err) {
    (void)ctx;
    (void)err;
    for (size_t i = 0; i < n; i++)
        ((float *)dst)[i] = (float)(k * 1000 + (int)(first + i));
    return NC_OK;
}

static void test_sharded_folder_via_index(void) {
    const char *dir = "build/test_st_sharded";
    mkdir("build", 0777);
    mkdir(dir, 0777);
    nc_error err;
    st_write_tensor a[2] = {{"a", ST_F32, 2, {2, 3}}, {"b", ST_F32, 1, {4}}};
    st_write_tensor b[1] = {{"c", ST_F32, 1, {5}}};
    CHECK_OK(st_write_file("build/test_st_sharded/model-00001-of-00002.safetensors", a, 2,
                           fill_index, NULL, &err),
             &err);
    CHECK_OK(st_write_file("build/test_st_sharded/model-00002-of-00002.safetensors", b, 1,
                           fill_index, NULL, &err),
             &err);
    const char *index = "{\"metadata\":{\"total_size\":60},\"weight_map\":{"
                        "\"a\":\"model-00001-of-00002.safetensors\","
                        "\"b\":\"model-00001-of-00002.safetensors\","
                        "\"c\":\"model-00002-of-00002.safetensors\"}}";
    CHECK_OK(nc_write_file_atomic("build/test_st_sharded/model.safetensors.index.json", index,
                                  strlen(index), &err),
             &err);
    hf_weights *w;
    CHECK_OK(hf_weights_open(dir, &w, &err), &err);
    const char *file = NULL;
    const st_tensor *c = hf_weights_find(w, "c", &file);
    const st_tensor *ta = hf_weights_find(w, "a", NULL);
    int ok = w->n_shards == 2 && c && strstr(file, "00002-of") && c->shape[0] == 5 &&
             ((const float *)c->data)[4] == 4.0f && ta && ((const float *)ta->data)[5] == 5.0f &&
             !hf_weights_find(w, "d", NULL);
    hf_weights_close(w);
    CHECK(ok);

    /* an index naming a tensor its shard lacks, and one naming a missing shard */
    const char *stale = "{\"weight_map\":{\"a\":\"model-00001-of-00002.safetensors\","
                        "\"zz\":\"model-00002-of-00002.safetensors\"}}";
    nc_write_file_atomic("build/test_st_sharded/model.safetensors.index.json", stale, strlen(stale),
                         &err);
    CHECK(hf_weights_open(dir, &w, &err) == NC_ERR_NOT_FOUND);
    CHECK(one_line_naming(&err, "'zz'", "00002-of-00002"));
    const char *missing = "{\"weight_map\":{\"a\":\"model-00009-of-00009.safetensors\"}}";
    nc_write_file_atomic("build/test_st_sharded/model.safetensors.index.json", missing,
                         strlen(missing), &err);
    CHECK(hf_weights_open(dir, &w, &err) == NC_ERR_IO);
    CHECK(one_line_naming(&err, "model-00009-of-00009.safetensors", NULL));
    const char *escape = "{\"weight_map\":{\"a\":\"../x.safetensors\"}}";
    nc_write_file_atomic("build/test_st_sharded/model.safetensors.index.json", escape,
                         strlen(escape), &err);
    CHECK(hf_weights_open(dir, &w, &err) == NC_ERR_FORMAT);
    CHECK(one_line_naming(&err, "weight_map['a']", NULL));
}

int main(void) {
    RUN(test_reads_file_written_by_python_safetensors);
    RUN(test_valid_header_with_metadata_and_all_dtypes);
    RUN(test_rejects_bad_header_length);
    RUN(test_rejects_header_running_past_the_end);
    RUN(test_rejects_invalid_json);
    RUN(test_rejects_unknown_dtype_naming_tensor);
    RUN(test_rejects_span_mismatch_and_bad_offsets);
    RUN(test_rejects_overlapping_tensors);
    RUN(test_open_missing_file_names_it);
    RUN(test_sharded_folder_via_index);
    return nc_test_exit_code();
}
