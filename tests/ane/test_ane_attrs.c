/* modelAttributes parsing (src/ane_host/ane_attrs.c) on fixtures written
 * from the reference's examples (tests/fixtures/ane/README.md), and binding
 * a manifest function's I/O to the reported symbols by name
 * (src/ane_host/ane_bind.c): the indices expected below are read off the
 * fixture text by hand, not computed by the code under test. */
#include <string.h>

#include "../test.h"
#include "ane_host/ane_attrs.h"
#include "ane_host/ane_bind.h"
#include "ane_host/ane_encoding.h"
#include "base/mmap.h"

static int load(const char *name, ane_attrs *a, nc_error *err) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/ane/%s", name);
    char *buf = NULL;
    size_t len = 0;
    if (nc_read_file(path, &buf, &len, err)) return 0;
    nc_status st = ane_attrs_parse(buf, len, path, a, err);
    free(buf);
    return st == NC_OK;
}

static void test_identity_model_attributes(void) {
    nc_error err = {0};
    ane_attrs a;
    CHECKF(load("attrs_identity.json", &a, &err), "%s", err.msg);
    CHECK(a.n_procs == 1 && a.n_in_symbols == 1 && a.n_out_symbols == 1);
    const ane_attr_proc *p = ane_attrs_proc(&a, "main");
    CHECK(p && p->id == 0 && p->n_in == 1 && p->n_out == 1);
    const ane_attr_io *in = ane_attrs_io(p, "a_input0", 0), *out = ane_attrs_io(p, "out", 1);
    CHECK(in && out && !ane_attrs_io(p, "out@output", 1) && !ane_attrs_io(p, "out", 0));
    CHECK(in->symbol == 0 && in->has_shape && strcmp(in->type, "Float16") == 0);
    CHECK(in->batches == 1 && in->channels == 4 && in->depth == 1 && in->height == 1 &&
          in->width == 4);
    CHECK(in->row_stride == 64 && in->plane_stride == 64 && in->batch_stride == 256);
    CHECK(out->symbol == 0 && out->channels == 4 && out->row_stride == 64);
    ane_attrs_free(&a);
}

/* A live-list entry that carries the symbol index instead of the name. */
static void test_live_entries_by_symbol_index(void) {
    const char *json =
        "{\"ANEFModelDescription\": {\"kANEFModelInputSymbolsArrayKey\": [\"b\", \"a\"], "
        "\"kANEFModelOutputSymbolsArrayKey\": [\"y@output\"], "
        "\"kANEFModelProcedureNameToIDMapKey\": {\"main\": 0}, "
        "\"ANEFModelProcedures\": [{\"ANEFModelProcedureID\": 0, "
        "\"ANEFModelInputSymbolIndexArray\": [0, 1], "
        "\"ANEFModelOutputSymbolIndexArray\": [0]}]}, \"NetworkStatusList\": [{\"LiveInputList\": "
        "[{\"Symbol\": 1, \"Type\": \"Float16\", \"Batches\": 1, \"Channels\": 3, \"Height\": 1, "
        "\"Width\": 64}]}]}";
    nc_error err = {0};
    ane_attrs a;
    CHECK_OK(ane_attrs_parse(json, strlen(json), "attrs", &a, &err), &err);
    const ane_attr_proc *p = ane_attrs_proc(&a, "main");
    const ane_attr_io *ia = ane_attrs_io(p, "a", 0), *ib = ane_attrs_io(p, "b", 0);
    CHECK(ia && ib && ia->symbol == 1 && ib->symbol == 0);
    CHECK(ia->has_shape && ia->channels == 3 && ia->width == 64 && ia->depth == 1 &&
          !ib->has_shape);
    ane_attrs_free(&a);
}

static void test_procedure_ids_and_repeated_symbol_names(void) {
    nc_error err = {0};
    ane_attrs a;
    CHECKF(load("attrs_two_procedures.json", &a, &err), "%s", err.msg);
    CHECK(a.n_procs == 2 && a.n_in_symbols == 2 && a.n_out_symbols == 2);
    const ane_attr_proc *def = ane_attrs_proc(&a, "0@default"),
                        *res = ane_attrs_proc(&a, "0@res_320x320");
    CHECK(def && res && def->id == 1 && res->id == 0);
    CHECK(ane_attrs_io(def, "input_tensor", 0)->symbol == 1);
    CHECK(ane_attrs_io(res, "input_tensor", 0)->symbol == 0);
    CHECK(ane_attrs_io(def, "output_tensor", 1)->symbol == 1);
    CHECK(!ane_attrs_io(def, "input_tensor", 0)->has_shape);
    ane_attrs_free(&a);
}

/* A valid one-procedure description (input x, output y), and the same with
 * one NetworkStatusList input entry. */
#define ONE_PROC_DESC                                                                              \
    "\"ANEFModelDescription\": {\"kANEFModelInputSymbolsArrayKey\": [\"x\"], "                     \
    "\"kANEFModelOutputSymbolsArrayKey\": [\"y@output\"], "                                        \
    "\"kANEFModelProcedureNameToIDMapKey\": {\"main\": 0}, \"ANEFModelProcedures\": "              \
    "[{\"ANEFModelProcedureID\": 0, \"ANEFModelInputSymbolIndexArray\": [0], "                     \
    "\"ANEFModelOutputSymbolIndexArray\": [0]}]}"
#define LIVE_IN(entry)                                                                             \
    "{" ONE_PROC_DESC ", \"NetworkStatusList\": [{\"LiveInputList\": [" entry "]}]}"

/* Each malformed document fails with a message naming the key at fault. */
static void test_malformed_attributes_name_the_key(void) {
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"[]", "not a dictionary"},
        {"{}", "'ANEFModelDescription'"},
        {"{\"ANEFModelDescription\": {}}", "kANEFModelInputSymbolsArrayKey"},
        {"{\"ANEFModelDescription\": {\"kANEFModelInputSymbolsArrayKey\": [\"x\"], "
         "\"kANEFModelOutputSymbolsArrayKey\": [\"y@output\"], "
         "\"kANEFModelProcedureNameToIDMapKey\": {\"main\": 0}}}",
         "ANEFModelProcedures"},
        {"{\"ANEFModelDescription\": {\"kANEFModelInputSymbolsArrayKey\": [\"x\"], "
         "\"kANEFModelOutputSymbolsArrayKey\": [\"y@output\"], "
         "\"kANEFModelProcedureNameToIDMapKey\": {\"main\": 0}, "
         "\"ANEFModelProcedures\": [{\"ANEFModelProcedureID\": 0, "
         "\"ANEFModelInputSymbolIndexArray\": [1], "
         "\"ANEFModelOutputSymbolIndexArray\": [0]}]}}",
         "ANEFModelInputSymbolIndexArray'[0] = 1 is outside"},
        {"{\"ANEFModelDescription\": {\"kANEFModelInputSymbolsArrayKey\": [\"x\"], "
         "\"kANEFModelOutputSymbolsArrayKey\": [\"y@output\"], "
         "\"kANEFModelProcedureNameToIDMapKey\": {\"main\": 3}, "
         "\"ANEFModelProcedures\": [{\"ANEFModelProcedureID\": 0, "
         "\"ANEFModelInputSymbolIndexArray\": [0], "
         "\"ANEFModelOutputSymbolIndexArray\": [0]}]}}",
         "has 0 names in kANEFModelProcedureNameToIDMapKey"},
        {"{\"ANEFModelDescription\": {\"kANEFModelInputSymbolsArrayKey\": [\"x\", \"x\"], "
         "\"kANEFModelOutputSymbolsArrayKey\": [\"y@output\"], "
         "\"kANEFModelProcedureNameToIDMapKey\": {\"main\": 0}, "
         "\"ANEFModelProcedures\": [{\"ANEFModelProcedureID\": 0, "
         "\"ANEFModelInputSymbolIndexArray\": [0, 1], "
         "\"ANEFModelOutputSymbolIndexArray\": [0]}]}}",
         "names 'x' twice"},
        {"{\"ANEFModelDescription\": {\"kANEFModelInputSymbolsArrayKey\": [\"x\"], "
         "\"kANEFModelProcedureNameToIDMapKey\": {\"main\": 0}, "
         "\"ANEFModelProcedures\": [{\"ANEFModelProcedureID\": 0, "
         "\"ANEFModelInputSymbolIndexArray\": [0], "
         "\"ANEFModelOutputSymbolIndexArray\": [0]}]}}",
         "names the outputs"},
        {LIVE_IN("{\"Name\": \"z\", \"Type\": \"Float16\", \"Batches\": 1, \"Channels\": 1, "
                 "\"Height\": 1, \"Width\": 32}"),
         "describes 'z'"},
        {LIVE_IN("{\"Name\": \"x\", \"Type\": \"Float16\", \"Batches\": 1, \"Height\": 1, "
                 "\"Width\": 32}"),
         "Channels"},
        {LIVE_IN("{\"Type\": \"Float16\", \"Batches\": 1, \"Channels\": 1, \"Height\": 1, "
                 "\"Width\": 32}, {\"Type\": \"Float16\", \"Batches\": 1, \"Channels\": 1, "
                 "\"Height\": 1, \"Width\": 32}"),
         "describes 2 I/O, the procedure has 1"},
        {"{\"ANEFModelDescription\": ", "1:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nc_error err = {0};
        ane_attrs a;
        nc_status st = ane_attrs_parse(bad[i].json, strlen(bad[i].json), "attrs", &a, &err);
        CHECKF(st != NC_OK, "case %zu parsed", i);
        CHECKF(strstr(err.msg, bad[i].needle) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg,
               bad[i].needle);
        CHECK(a.procs == NULL);
    }
}

/* Two procedures with the same I/O names and other widths (buckets), the
 * NetworkStatusList in the opposite order and with strides wider than
 * packed: each binds to the entry whose shapes fit, with its strides; the
 * same entries without names bind by position. Widths and strides below
 * are written by hand. */
#define TWO_BUCKETS_DESC                                                                           \
    "\"ANEFModelDescription\": {\"kANEFModelInputSymbolsArrayKey\": [\"x\", \"x\"], "              \
    "\"kANEFModelOutputSymbolsArrayKey\": [\"y@output\", \"y@output\"], "                          \
    "\"kANEFModelProcedureNameToIDMapKey\": {\"f32\": 0, \"f64\": 1}, \"ANEFModelProcedures\": "   \
    "[{\"ANEFModelProcedureID\": 0, \"ANEFModelInputSymbolIndexArray\": [0], "                     \
    "\"ANEFModelOutputSymbolIndexArray\": [0]}, {\"ANEFModelProcedureID\": 1, "                    \
    "\"ANEFModelInputSymbolIndexArray\": [1], \"ANEFModelOutputSymbolIndexArray\": [1]}]}"
#define LIVE(name, w, stride)                                                                      \
    "{" name                                                                                       \
    "\"Type\": \"Float16\", \"Batches\": 1, \"Channels\": 4, \"Height\": 1, \"Width\": " #w        \
    ", \"RowStride\": " #stride "}"
#define STATUS_OF(in, out, w, stride)                                                              \
    "{\"LiveInputList\": [" LIVE(in, w, stride) "], \"LiveOutputList\": [" LIVE(out, w, stride) "]}"
#define STATUS(w, stride) STATUS_OF("\"Name\": \"x\", ", "\"Name\": \"y@output\", ", w, stride)
#define NAMELESS(w, stride) STATUS_OF("", "", w, stride)

static lower_fn_info bucket_fn(int w) {
    lower_fn_info f = {0};
    snprintf(f.name, sizeof f.name, "f%d", w);
    f.n_in = f.n_out = 1;
    f.in[0].rank = f.out[0].rank = 4;
    snprintf(f.in[0].name, sizeof f.in[0].name, "x");
    snprintf(f.out[0].name, sizeof f.out[0].name, "y");
    for (int k = 0; k < 2; k++) {
        lower_io *io = k ? &f.out[0] : &f.in[0];
        snprintf(io->dtype, sizeof io->dtype, "fp16");
        io->shape[0] = 1, io->shape[1] = 4, io->shape[2] = 1, io->shape[3] = w;
    }
    return f;
}

static void test_status_list_out_of_order_or_nameless_binds_by_shape(void) {
    static const char *const docs[] = {
        "{" TWO_BUCKETS_DESC ", \"NetworkStatusList\": [" STATUS(64, 192) ", " STATUS(32, 128) "]}",
        "{" TWO_BUCKETS_DESC
        ", \"NetworkStatusList\": [" NAMELESS(32, 128) ", " NAMELESS(64, 192) "]}",
        /* nameless and out of order: the shapes still tell them apart */
        "{" TWO_BUCKETS_DESC
        ", \"NetworkStatusList\": [" NAMELESS(64, 192) ", " NAMELESS(32, 128) "]}",
    };
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
        nc_error err = {0};
        ane_attrs a;
        CHECK_OK(ane_attrs_parse(docs[d], strlen(docs[d]), "attrs", &a, &err), &err);
        for (int w = 32; w <= 64; w += 32) {
            lower_fn_info f = bucket_fn(w);
            ane_binding b;
            CHECKF(ane_bind_function(&a, &f, &b, &err) == NC_OK, "doc %zu f%d: %s", d, w, err.msg);
            size_t stride = w == 32 ? 128 : 192;
            CHECKF(b.proc_id == (w == 32 ? 0 : 1) && b.in[0].layout.row_bytes == stride &&
                       b.out[0].layout.row_bytes == stride && b.in[0].layout.bytes == 4 * stride,
                   "doc %zu f%d: proc %d, rows of %zu bytes", d, w, b.proc_id,
                   b.in[0].layout.row_bytes);
        }
        ane_attrs_free(&a);
    }
}

static lower_io io(const char *name, int64_t c, int64_t h, int64_t w) {
    lower_io x = {0};
    snprintf(x.name, sizeof x.name, "%s", name);
    snprintf(x.dtype, sizeof x.dtype, "fp16");
    x.rank = 4;
    x.shape[0] = 1;
    x.shape[1] = c;
    x.shape[2] = h;
    x.shape[3] = w;
    return x;
}

/* qkv_s32 of a D=64, 4 heads of 24, 2 KV heads model, as the manifest
 * lists it (declaration order). */
static lower_fn_info qkv_fn(void) {
    lower_fn_info f = {0};
    snprintf(f.name, sizeof f.name, "qkv_s32");
    f.seq = 32;
    f.n_in = 3;
    f.in[0] = io("x", 64, 1, 32);
    f.in[1] = io("rope_cos", 1, 24, 32);
    f.in[2] = io("rope_sin", 1, 24, 32);
    f.n_out = 3;
    f.out[0] = io("q", 96, 1, 32);
    f.out[1] = io("k_new", 48, 1, 32);
    f.out[2] = io("v_new", 48, 1, 32);
    return f;
}

static void test_binding_by_name_ignores_declaration_order(void) {
    nc_error err = {0};
    ane_attrs a;
    CHECKF(load("attrs_qkv_reordered.json", &a, &err), "%s", err.msg);
    lower_fn_info f = qkv_fn();
    ane_binding b;
    CHECK_OK(ane_bind_function(&a, &f, &b, &err), &err);
    CHECK(b.proc_id == 1 && b.n_in == 3 && b.n_out == 3);
    /* from the fixture: inputs x=0, rope_sin=1, rope_cos=2; outputs v_new=0, q=1, k_new=2 */
    CHECK(b.in[0].symbol == 0 && b.in[1].symbol == 2 && b.in[2].symbol == 1);
    CHECK(b.out[0].symbol == 1 && b.out[1].symbol == 2 && b.out[2].symbol == 0);
    CHECK(ane_binding_io(&b, "rope_cos", 0)->layout.rows == 24);
    CHECK(ane_binding_io(&b, "rope_cos", 0)->layout.row_bytes == 64);
    CHECK(ane_binding_io(&b, "q", 1)->layout.bytes == 96 * 64);
    lower_fn_info m = {0};
    snprintf(m.name, sizeof m.name, "mlp_s32");
    m.n_in = m.n_out = 1;
    m.in[0] = io("x", 64, 1, 32);
    m.out[0] = io("x_out", 64, 1, 32);
    CHECK_OK(ane_bind_function(&a, &m, &b, &err), &err);
    CHECK(b.proc_id == 0 && b.in[0].symbol == 3 && b.out[0].symbol == 3);
    ane_attrs_free(&a);
}

static void test_binding_mismatches_are_errors(void) {
    nc_error err = {0};
    ane_attrs a;
    CHECKF(load("attrs_qkv_reordered.json", &a, &err), "%s", err.msg);
    lower_fn_info f = qkv_fn();
    ane_binding b;
    f.in[1].shape[2] = 16; /* rope tables of another head_dim */
    CHECK(ane_bind_function(&a, &f, &b, &err) == NC_ERR_FORMAT);
    CHECK(strstr(err.msg, "qkv_s32: input 'rope_cos'") != NULL);
    f = qkv_fn();
    snprintf(f.out[2].name, sizeof f.out[2].name, "v");
    CHECK(ane_bind_function(&a, &f, &b, &err) == NC_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "no output 'v'") != NULL);
    f = qkv_fn();
    f.n_in = 2;
    CHECK(ane_bind_function(&a, &f, &b, &err) == NC_ERR_FORMAT);
    f = qkv_fn();
    snprintf(f.name, sizeof f.name, "attn_s32");
    CHECK(ane_bind_function(&a, &f, &b, &err) == NC_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "attn_s32") != NULL);
    f = qkv_fn();
    snprintf(f.out[0].dtype, sizeof f.out[0].dtype, "fp32");
    CHECK(ane_bind_function(&a, &f, &b, &err) == NC_ERR_FORMAT);
    CHECK(strstr(err.msg, "Float16") != NULL);
    ane_attrs_free(&a);
}

/* Each dimension is compared on its own: an output of 48 channels (k_new's
 * width) must not bind to q's 96-channel surface, nor 192 to it, though
 * height and width agree (dropping the channel comparison let it through;
 * on a device that reads or writes half a surface silently). */
static void test_channel_count_must_match_the_surface(void) {
    nc_error err = {0};
    ane_attrs a;
    CHECKF(load("attrs_qkv_reordered.json", &a, &err), "%s", err.msg);
    static const int64_t channels[] = {48, 95, 97, 192};
    for (size_t i = 0; i < sizeof channels / sizeof *channels; i++) {
        lower_fn_info f = qkv_fn();
        f.out[0].shape[1] = channels[i];
        ane_binding b;
        nc_status st = ane_bind_function(&a, &f, &b, &err);
        CHECKF(st == NC_ERR_FORMAT && strstr(err.msg, "output 'q'") && strstr(err.msg, "96"),
               "q with %lld channels: status %d (%s)", (long long)channels[i], (int)st, err.msg);
    }
    lower_fn_info f = qkv_fn();
    f.in[0].shape[1] = 32; /* x of half the model width */
    ane_binding b;
    CHECK(ane_bind_function(&a, &f, &b, &err) == NC_ERR_FORMAT &&
          strstr(err.msg, "input 'x'") != NULL);
    ane_attrs_free(&a);
}

/* Runtime encodings (as method_getTypeEncoding returns them on arm64)
 * against the offset-free forms src/ane's selector table holds. */
static void test_type_encodings_compare_without_offsets(void) {
    static const char *const cases[][2] = {
        {"B48@0:8@16@24I32^@36", "B@:@@I^@"}, /* compileModel:options:qos:error: */
        {"@32@0:8@16@24", "@@:@@"},           /* modelAtURL:key: */
        {"@24@0:8^{__IOSurface=}16", "@@:^{__IOSurface=}"},
        {"v24@0:8@?16", "v@:@?"}, /* setCompletionHandler: */
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        ane_encoding_strip_offsets(cases[i][0], out, sizeof out);
        CHECKF(strcmp(out, cases[i][1]) == 0, "%s -> %s", cases[i][0], out);
    }
    char small[4];
    ane_encoding_strip_offsets("B48@0:8@16", small, sizeof small);
    CHECK(strcmp(small, "B@:") == 0);
}

int main(void) {
    RUN(test_type_encodings_compare_without_offsets);
    RUN(test_identity_model_attributes);
    RUN(test_procedure_ids_and_repeated_symbol_names);
    RUN(test_live_entries_by_symbol_index);
    RUN(test_malformed_attributes_name_the_key);
    RUN(test_binding_by_name_ignores_declaration_order);
    RUN(test_binding_mismatches_are_errors);
    RUN(test_status_list_out_of_order_or_nameless_binds_by_shape);
    RUN(test_channel_count_must_match_the_surface);
    return nc_test_exit_code();
}
