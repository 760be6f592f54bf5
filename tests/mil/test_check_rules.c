/* The ANE rules, one by one: for each rule a small program that breaks it
 * (the rule reports at the right line with the right severity) and a clean
 * program in the ANE idiom (fp32 boundary cast, 1x1 conv, BC1S layout,
 * written-out attention) that passes every rule. */
#include <stdarg.h>

#include "../test.h"
#include "mil/ane_profile.h"
#include "mil/ane_rules.h"
#include "mil/check.h"
#include "mil/parse.h"

/* Wraps a function signature and body into a program(1.3) text. */
static char *program(const char *params, const char *body, const char *outs) {
    static char buf[32768];
    snprintf(buf, sizeof buf,
             "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
             "    func main<ios18>(%s) {\n%s    } -> (%s);\n}\n",
             params, body, outs);
    return buf;
}

/* Checks `text` with the ANE rules settled by `profile` (NULL: none). */
static int check_text_profile(const char *text, const mil_ane_profile *profile,
                              mil_diagnostics *d) {
    nc_error err;
    mil_program *prog;
    memset(d, 0, sizeof *d);
    if (mil_parse(text, strlen(text), "t.mil", &prog, &err) != NC_OK) {
        printf("  parse: %s\n", err.msg);
        return -1;
    }
    mil_check_options opt = {1, NULL, NULL};
    nc_status st = mil_check_program_profile(prog, &opt, profile, d, &err);
    mil_program_free(prog);
    return st == NC_OK ? 0 : -1;
}

/* Checks `text` with the ANE rules; returns the diagnostics (caller frees). */
static int check_text(const char *text, mil_diagnostics *d) {
    return check_text_profile(text, NULL, d);
}

/* Number of diagnostics of `rule` with `sev`; *line gets the first's line. */
static int count_rule(const mil_diagnostics *d, const char *rule, mil_severity sev, int *line) {
    int n = 0;
    for (int i = d->n - 1; i >= 0; i--)
        if (!strcmp(d->items[i].rule, rule) && d->items[i].severity == sev) {
            n++;
            if (line) *line = d->items[i].line;
        }
    return n;
}

static void dump(const mil_diagnostics *d) {
    mil_diagnostics_print(d, stdout);
}

/* Expects rule `rule` to fire (severity sev) at `line` (among others). */
static int expect_rule(const char *params, const char *body, const char *outs, const char *rule,
                       mil_severity sev, int line) {
    mil_diagnostics d;
    if (check_text(program(params, body, outs), &d)) return 0;
    int at_line = 0;
    for (int i = 0; i < d.n; i++)
        if (!strcmp(d.items[i].rule, rule) && d.items[i].severity == sev && d.items[i].line == line)
            at_line = 1;
    int n = count_rule(&d, rule, sev, NULL);
    int ok = at_line;
    if (!ok) {
        printf("  expected %s at line %d, got %d report(s) elsewhere:\n", rule, line, n);
        dump(&d);
    }
    mil_diagnostics_free(&d);
    return ok;
}

#define STR(name, v)                                                                               \
    "        string " name " = const()[name = string(\"" name "\"), val = string(\"" v "\")];\n"

/* The ANE idiom: fp32 in, cast, 1x1 conv with constant weights, relu,
 * attention written out on [1, heads, d, L] (inner dimensions 32), cast
 * back. No rule fires. */
static void test_clean_ane_program_passes_every_rule(void) {
    static char body[24576], weights[12288];
    size_t n = 0;
    for (int i = 0; i < 32 * 32; i++)
        n += (size_t)snprintf(weights + n, sizeof weights - n, "%s%s", i ? ", " : "",
                              i % 33 ? "0x0p+0" : "0x1p+0");
    snprintf(body, sizeof body,
             STR("to16",
                 "fp16") "        tensor<fp16, [1, 32, 1, 32]> x16 = cast(dtype = to16, x = "
                         "x)[name = string(\"c0\")];\n"
                         "        tensor<fp16, [32, 32, 1, 1]> w = const()[name = string(\"w\"), "
                         "val = tensor<fp16, [32, 32, 1, 1]>([%s])];\n"
                         "        tensor<fp16, [1, 32, 1, 32]> h = conv(weight = w, x = x16)[name "
                         "= string(\"conv\")];\n"
                         "        tensor<fp16, [1, 32, 1, 32]> r = relu(x = h)[name = "
                         "string(\"relu\")];\n"
                         "        tensor<int32, [4]> hs = const()[name = string(\"hs\"), val = "
                         "tensor<int32, [4]>([1, 1, 32, 32])];\n"
                         "        tensor<fp16, [1, 1, 32, 32]> q = reshape(shape = hs, x = r)[name "
                         "= string(\"heads\")];\n"
                         "        bool bf = const()[name = string(\"bf\"), val = bool(false)];\n"
                         "        bool bt = const()[name = string(\"bt\"), val = bool(true)];\n"
                         "        tensor<fp16, [1, 1, 32, 32]> s = matmul(transpose_x = bt, "
                         "transpose_y = bf, x = q, y = q)[name = string(\"qk\")];\n"
                         "        tensor<fp16, [1, 1, 32, 32]> sm = add(x = s, y = mask)[name = "
                         "string(\"mask\")];\n"
                         "        int32 ax = const()[name = string(\"ax\"), val = int32(-1)];\n"
                         "        tensor<fp16, [1, 1, 32, 32]> p = softmax(axis = ax, x = sm)[name "
                         "= string(\"sm\")];\n"
                         "        tensor<fp16, [1, 1, 32, 32]> o = matmul(transpose_x = bf, "
                         "transpose_y = bt, x = q, y = p)[name = string(\"pv\")];\n"
                         "        tensor<int32, [4]> os = const()[name = string(\"os\"), val = "
                         "tensor<int32, [4]>([1, 32, 1, 32])];\n"
                         "        tensor<fp16, [1, 32, 1, 32]> ob = reshape(shape = os, x = "
                         "o)[name = string(\"merge\")];\n" STR(
                             "to32", "fp32") "        tensor<fp32, [1, 32, 1, 32]> y = cast(dtype "
                                             "= to32, x = ob)[name = string(\"c1\")];\n",
             weights);
    mil_diagnostics d;
    CHECK(check_text(program("tensor<fp32, [1, 32, 1, 32]> x, tensor<fp16, [1, 1, 32, 32]> mask",
                             body, "y"),
                     &d) == 0);
    if (d.n) dump(&d);
    CHECKF(d.n == 0, "%d diagnostics on the clean program", d.n);
    mil_diagnostics_free(&d);
}

#define IN16 "tensor<fp16, [1, 32]> x"

static void test_rule_fp16_compute(void) {
    /* relu on fp32 data (line 5), then a cast of an fp32 intermediate (line 7) */
    CHECK(expect_rule("tensor<fp32, [1, 32]> x",
                      "        tensor<fp32, [1, 32]> y = relu(x = x)[name = string(\"r\")];\n" STR(
                          "t", "fp16") "        tensor<fp16, [1, 32]> z = cast(dtype = t, x = "
                                       "y)[name = string(\"c\")];\n",
                      "z", "ane-fp16-compute", MIL_SEV_ERROR, 5));
    CHECK(expect_rule(
        IN16,
        STR("t", "fp32") "        tensor<fp32, [1, 32]> y = cast(dtype = t, x = x)[name = "
                         "string(\"c\")];\n"
                         "        tensor<fp32, [1, 32]> z = exp(x = y)[name = string(\"e\")];\n",
        "z", "ane-fp16-compute", MIL_SEV_ERROR, 6));
}

static void test_rule_boundary_io(void) {
    CHECK(expect_rule("tensor<fp32, [1, 32]> x",
                      "        tensor<fp32, [1, 32]> y = relu(x = x)[name = string(\"r\")];\n", "y",
                      "ane-boundary-io", MIL_SEV_ERROR, 5));
    CHECK(expect_rule("tensor<int8, [1, 32]> x",
                      STR("t", "fp16") "        tensor<fp16, [1, 32]> y = cast(dtype = t, x = "
                                       "x)[name = string(\"c\")];\n",
                      "y", "ane-boundary-io", MIL_SEV_ERROR, 4));
}

static void test_rule_no_bool_io(void) {
    CHECK(expect_rule(
        "tensor<bool, [1, 32]> m, " IN16,
        "        fp16 z = const()[name = string(\"z\"), val = fp16(0x0p+0)];\n"
        "        tensor<fp16, [1, 32]> y = select(a = x, b = z, cond = m)[name = string(\"s\")];\n",
        "y", "ane-no-bool-io", MIL_SEV_ERROR, 4));
}

static void test_rule_io_width(void) {
    CHECK(expect_rule("tensor<fp16, [1, 16]> x",
                      "        tensor<fp16, [1, 16]> y = relu(x = x)[name = string(\"r\")];\n", "y",
                      "ane-io-width", MIL_SEV_ERROR, 4));
    CHECK(expect_rule("tensor<fp16, [1, 40]> x",
                      "        tensor<fp16, [1, 40]> y = relu(x = x)[name = string(\"r\")];\n", "y",
                      "ane-io-width", MIL_SEV_ERROR, 4));
}

static void test_rule_no_scatter(void) {
    CHECK(expect_rule(
        "tensor<fp16, [4, 32]> x, tensor<fp16, [1, 32]> u",
        "        tensor<int32, [1]> i = const()[name = string(\"i\"), val = tensor<int32, "
        "[1]>([2])];\n" STR("m",
                            "update") "        tensor<fp16, [4, 32]> y = scatter(data = x, indices "
                                      "= i, mode = m, updates = u)[name = string(\"s\")];\n",
        "y", "ane-no-scatter", MIL_SEV_ERROR, 7));
}

static void test_rule_no_state(void) {
    CHECK(expect_rule(
        "state<tensor<fp16, [1, 32]>> s",
        "        tensor<fp16, [1, 32]> y = read_state(input = s)[name = string(\"r\")];\n", "y",
        "ane-no-state", MIL_SEV_ERROR, 5));
}

static void test_rule_no_range_dims(void) {
    const char *text =
        "program(1.3)\n[buildInfo = dict<string, string>({})]\n{\n"
        "    func main<ios17>(tensor<fp16, [?]> input) [FlexibleShapeInformation = "
        "tuple<tuple<string, dict<string, tensor<int32, [?]>>>, tuple<string, dict<string, "
        "list<tensor<int32, [2]>, ?>>>>(((\"DefaultShapes\", {{\"input\", [32]}}), (\"RangeDims\", "
        "{{\"input\", [[32, 64]]}})))] {\n"
        "        tensor<fp16, [?]> y = relu(x = input)[name = string(\"r\")];\n"
        "    } -> (y);\n}\n";
    mil_diagnostics d;
    CHECK(check_text(text, &d) == 0);
    int line = 0;
    CHECK(count_rule(&d, "ane-no-range-dims", MIL_SEV_ERROR, &line) == 1 && line == 4);
    CHECK(count_rule(&d, "ane-static-dims", MIL_SEV_ERROR, NULL) >= 1);
    mil_diagnostics_free(&d);
}

static void test_rule_static_dims(void) {
    CHECK(expect_rule("tensor<fp16, [1, ?]> x",
                      "        tensor<fp16, [1, ?]> y = relu(x = x)[name = string(\"r\")];\n", "y",
                      "ane-static-dims", MIL_SEV_ERROR, 4));
}

static void test_rule_gather_indices(void) {
    /* int32 indices from the data */
    CHECK(expect_rule("tensor<fp16, [64, 32]> t, tensor<int32, [32]> i",
                      "        int32 ax = const()[name = string(\"ax\"), val = int32(0)];\n"
                      "        tensor<fp16, [32, 32]> y = gather(axis = ax, indices = i, x = "
                      "t)[name = string(\"g\")];\n",
                      "y", "ane-gather-indices", MIL_SEV_ERROR, 6));
    /* uint16 indices cannot reach a 151,936-row table */
    CHECK(expect_rule("tensor<fp16, [151936, 32]> t, tensor<uint16, [32]> i",
                      "        int32 ax = const()[name = string(\"ax\"), val = int32(0)];\n"
                      "        tensor<fp16, [32, 32]> y = gather(axis = ax, indices = i, x = "
                      "t)[name = string(\"g\")];\n",
                      "y", "ane-gather-indices", MIL_SEV_ERROR, 6));
    /* constant int32 indices are refused too: the ANE compiler's "Unsupported
     * tensor data type: int32" does not depend on where the indices come from */
    CHECK(expect_rule(
        "tensor<fp16, [1, 32]> t",
        "        tensor<int32, [32]> i = const()[name = string(\"i\"), val = tensor<int32, [32]>"
        "([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
        "0, 0, 0])];\n"
        "        int32 ax = const()[name = string(\"ax\"), val = int32(0)];\n"
        "        tensor<fp16, [32, 32]> y = gather(axis = ax, indices = i, x = t)[name = "
        "string(\"g\")];\n",
        "y", "ane-gather-indices", MIL_SEV_ERROR, 7));
    /* constant uint16 indices (the KV-cache spread) pass, and so do uint16
     * indices from an input (the boundary rule speaks about the input itself) */
    static const char *const srcs[2][2] = {
        {"tensor<fp16, [1, 32]> t",
         "        tensor<uint16, [32]> i = const()[name = string(\"i\"), val = tensor<uint16, [32]>"
         "([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "
         "0, 0, 0])];\n"},
        {"tensor<fp16, [1, 32]> t, tensor<uint16, [32]> i", ""}};
    for (int k = 0; k < 2; k++) {
        char body[1024];
        snprintf(body, sizeof body,
                 "%s        int32 ax = const()[name = string(\"ax\"), val = int32(0)];\n"
                 "        tensor<fp16, [32, 32]> y = gather(axis = ax, indices = i, x = t)[name = "
                 "string(\"g\")];\n",
                 srcs[k][1]);
        mil_diagnostics d;
        CHECK(check_text(program(srcs[k][0], body, "y"), &d) == 0);
        CHECK(count_rule(&d, "ane-gather-indices", MIL_SEV_ERROR, NULL) == 0);
        mil_diagnostics_free(&d);
    }
}

static void test_rule_conv_const_weight(void) {
    CHECK(expect_rule(
        "tensor<fp16, [1, 4, 1, 32]> x, tensor<fp16, [4, 4, 1, 1]> w",
        "        tensor<fp16, [1, 4, 1, 32]> y = conv(weight = w, x = x)[name = string(\"c\")];\n",
        "y", "ane-conv-const-weight", MIL_SEV_ERROR, 5));
}

/* Palettized conv weights: an fp16 table passes, an fp32 one is an error
 * at the op's line, 3-bit indices a warning. */
static const char *lut_body(char *buf, size_t cap, const char *idt, int entries, const char *ldt) {
    char idx[400], lut[2048]; /* up to 64 entries of "0x1p-NN, " */
    size_t n = 0, m = 0;
    for (int i = 0; i < 16; i++)
        n += (size_t)snprintf(idx + n, sizeof idx - n, "%s%d", i ? ", " : "", i % entries);
    for (int i = 0; i < entries && m < sizeof lut - 16; i++)
        m += (size_t)snprintf(lut + m, sizeof lut - m, "%s0x1p-%d", i ? ", " : "", i % 14 + 1);
    snprintf(buf, cap,
             "        tensor<%s, [4, 4, 1, 1]> i = const()[name = string(\"i\"), val = "
             "tensor<%s, [4, 4, 1, 1]>([%s])];\n"
             "        tensor<%s, [1, 1, 1, 1, %d, 1]> l = const()[name = string(\"l\"), val = "
             "tensor<%s, [1, 1, 1, 1, %d, 1]>([%s])];\n"
             "        tensor<%s, [4, 4, 1, 1]> w = constexpr_lut_to_dense(indices = i, lut = "
             "l)[name = string(\"w\")];\n"
             "        tensor<fp16, [1, 4, 1, 32]> y = conv(weight = w, x = x)[name = "
             "string(\"c\")];\n",
             idt, idt, idx, ldt, entries, ldt, entries, lut, ldt);
    return buf;
}

static void test_rule_lut(void) {
    static char body[4096];
    const char *x = "tensor<fp16, [1, 4, 1, 32]> x";
    mil_diagnostics d;
    CHECK(check_text(program(x, lut_body(body, sizeof body, "uint4", 16, "fp16"), "y"), &d) == 0);
    int clean = count_rule(&d, "ane-lut", MIL_SEV_ERROR, NULL) +
                count_rule(&d, "ane-lut", MIL_SEV_WARNING, NULL);
    mil_diagnostics_free(&d);
    CHECK(clean == 0);
    CHECK(check_text(program(x, lut_body(body, sizeof body, "uint6", 64, "fp16"), "y"), &d) == 0);
    clean = count_rule(&d, "ane-lut", MIL_SEV_ERROR, NULL) +
            count_rule(&d, "ane-lut", MIL_SEV_WARNING, NULL);
    mil_diagnostics_free(&d);
    CHECK(clean == 0);
    CHECK(expect_rule(x, lut_body(body, sizeof body, "uint4", 16, "fp32"), "y", "ane-lut",
                      MIL_SEV_ERROR, 7));
    CHECK(expect_rule(x, lut_body(body, sizeof body, "uint3", 8, "fp16"), "y", "ane-lut",
                      MIL_SEV_WARNING, 7));
}

static void test_warning_matmul_inner(void) {
    CHECK(expect_rule(
        "tensor<fp16, [1, 32, 48]> a, tensor<fp16, [1, 48, 32]> b",
        "        tensor<fp16, [1, 32, 32]> y = matmul(x = a, y = b)[name = string(\"m\")];\n", "y",
        "ane-matmul-inner", MIL_SEV_WARNING, 5));
}

static void test_rule_conv_kernel_width(void) {
    CHECK(expect_rule(
        "tensor<fp16, [1, 4, 1, 47]> x, tensor<fp16, [4, 4, 1, 16]> w",
        "        tensor<fp16, [1, 4, 1, 32]> y = conv(weight = w, x = x)[name = string(\"c\")];\n",
        "y", "ane-conv-kernel-width", MIL_SEV_ERROR, 5));
}

static void test_rule_max_dim(void) {
    CHECK(expect_rule("tensor<fp16, [1, 4, 1, 32]> x, tensor<fp16, [70000, 4, 1, 1]> w",
                      "        tensor<fp16, [1, 70000, 1, 32]> y = conv(weight = w, x = x)[name = "
                      "string(\"c\")];\n",
                      "y", "ane-max-dim", MIL_SEV_ERROR, 5));
}

static void test_rule_sdpa_mask(void) {
    CHECK(expect_rule("tensor<fp16, [1, 2, 32, 32]> q, tensor<fp16, [1, 1, 32, 32]> m",
                      "        tensor<fp16, [1, 2, 32, 32]> y = "
                      "scaled_dot_product_attention(attn_mask = m, key = q, "
                      "query = q, value = q)[name = string(\"a\")];\n",
                      "y", "ane-sdpa-mask", MIL_SEV_ERROR, 5));
}

/* Chip-dependent ops: a warning at `line` with the rewrite, and no error. */
static void expect_warning(const char *body, int line, const char *rule, const char *rewrite_word) {
    mil_diagnostics d;
    int got = 0;
    CHECK(check_text(program("tensor<fp16, [1, 64]> x", body, "y"), &d) == 0);
    int n = count_rule(&d, rule, MIL_SEV_WARNING, &got);
    int has_rewrite = 0;
    for (int i = 0; i < d.n; i++)
        if (!strcmp(d.items[i].rule, rule) && strstr(d.items[i].msg, rewrite_word)) has_rewrite = 1;
    if (n != 1 || d.n_errors) dump(&d);
    CHECKF(n == 1 && got == line && d.n_errors == 0 && has_rewrite, "%s: %d warnings at line %d",
           rule, n, got);
    mil_diagnostics_free(&d);
}

static void test_warning_gelu(void) {
    expect_warning("        tensor<fp16, [1, 64]> y = gelu(x = x)[name = string(\"g\")];\n", 5,
                   "ane-gelu", "tanh");
}
static void test_warning_tile(void) {
    expect_warning(
        "        tensor<int32, [2]> r = const()[name = string(\"r\"), val = tensor<int32, [2]>([2, "
        "1])];\n"
        "        tensor<fp16, [2, 64]> y = tile(reps = r, x = x)[name = string(\"t\")];\n",
        6, "ane-tile", "broadcast");
}
static void test_warning_reduce_mean(void) {
    expect_warning("        tensor<int32, [1]> a = const()[name = string(\"a\"), val = "
                   "tensor<int32, [1]>([0])];\n"
                   "        bool k = const()[name = string(\"k\"), val = bool(false)];\n"
                   "        tensor<fp16, [64]> y = reduce_mean(axes = a, keep_dims = k, x = "
                   "x)[name = string(\"m\")];\n",
                   7, "ane-reduce-mean", "reduce_sum");
}
static void test_warning_concat(void) {
    expect_warning("        int32 a = const()[name = string(\"a\"), val = int32(0)];\n"
                   "        tensor<fp16, [2, 64]> y = concat(axis = a, values = (x, x))[name = "
                   "string(\"c\")];\n",
                   6, "ane-concat", "switch");
}
static void test_warning_exp(void) {
    expect_warning("        tensor<fp16, [1, 64]> y = exp(x = x)[name = string(\"e\")];\n", 5,
                   "ane-exp", "max");
}
static void test_warning_sqrt(void) {
    expect_warning("        tensor<fp16, [1, 64]> y = sqrt(x = x)[name = string(\"s\")];\n", 5,
                   "ane-sqrt", "rsqrt");
}

/* The table is complete: every row has an id, a check, a source, and
 * warnings carry a rewrite; --skip leaves a rule out. */
static void test_rule_table_rows_are_complete(void) {
    int n;
    const mil_ane_rule *r = mil_ane_rules(&n);
    CHECK(n >= 20);
    for (int i = 0; i < n; i++) {
        CHECK(r[i].id && !strncmp(r[i].id, "ane-", 4) && r[i].check && r[i].description &&
              r[i].source);
        CHECK(r[i].severity == MIL_SEV_ERROR || r[i].suggestion);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(r[i].id, r[j].id));
    }
    CHECK(mil_check_rule_listed("ane-exp,ane-gelu", "ane-gelu"));
    CHECK(!mil_check_rule_listed("ane-exp,ane-gelu", "ane-ge"));
}

/* The hand-written attention block from the corpus (fed to the ANE compiler
 * by its authors) passes the generic checks and the ANE rules. */
static void test_corpus_attention_passes(void) {
    const char *path = nc_test_fixture_path(
        "mil-corpus/joshuaswarren__mil-hwx-compiler__tests__fixtures__attention.mil");
    CHECKF(path, "tests/fixtures/mil-corpus attention.mil missing");
    nc_error err;
    mil_program *prog;
    CHECK_OK(mil_parse_file(path, &prog, &err), &err);
    mil_diagnostics d = {0};
    mil_check_options opt = {1, NULL, NULL};
    CHECK_OK(mil_check_program(prog, &opt, &d, &err), &err);
    if (d.n) dump(&d);
    CHECK(d.n == 0);
    mil_diagnostics_free(&d);
    mil_program_free(prog);
}

/* The chip-dependent rules: warnings without a profile; with one, an error
 * where the probe case failed and nothing where it passed. */
static void test_profile_settles_chip_dependent_rules(void) {
    char body[2048];
    snprintf(body, sizeof body,
             "        tensor<uint16, [32]> i = const()[name = string(\"i\"), val = tensor<uint16, "
             "[32]>([%s])];\n"
             "        int32 ax = const()[name = string(\"ax\"), val = int32(3)];\n"
             "        tensor<fp16, [1, 1, 1, 32]> g = gather(axis = ax, indices = i, x = x)[name = "
             "string(\"g\")];\n"
             "        int32 sa = const()[name = string(\"sa\"), val = int32(-1)];\n"
             "        tensor<fp16, [1, 1, 1, 96]> s = softmax(axis = sa, x = w)[name = "
             "string(\"s\")];\n"
             "        tensor<fp16, [1, 1, 1, 32]> y = silu(x = g)[name = string(\"y\")];\n",
             "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, "
             "23, 24, 25, 26, 27, 28, 29, 30, 31");
    const char *text =
        program("tensor<fp16, [1, 1, 1, 32]> x, tensor<fp16, [1, 1, 1, 96]> w", body, "y, s");
    char copy[8192];
    snprintf(copy, sizeof copy, "%s", text);
    mil_diagnostics d;
    CHECK(check_text_profile(copy, NULL, &d) == 0);
    CHECK(count_rule(&d, "ane-softmax-npot", MIL_SEV_WARNING, NULL) == 1);
    CHECK(count_rule(&d, "ane-elementwise-only", MIL_SEV_WARNING, NULL) == 1);
    CHECK(count_rule(&d, "ane-silu", MIL_SEV_ERROR, NULL) == 0);
    CHECK(count_rule(&d, "ane-gather-indices", MIL_SEV_ERROR, NULL) == 0);
    mil_diagnostics_free(&d);
    static const char *prof = "{\"cases\": [{\"id\": \"softmax96\", \"status\": \"ok\"},"
                              "{\"id\": \"elementwise_only\", \"status\": \"compile failed\"},"
                              "{\"id\": \"silu\", \"status\": \"wrong\"},"
                              "{\"id\": \"gather_uint16\", \"status\": \"eval failed\"}]}";
    mil_ane_profile p;
    nc_error err = {0};
    CHECK_OK(mil_ane_profile_parse(prof, strlen(prof), "p.json", &p, &err), &err);
    CHECK(check_text_profile(copy, &p, &d) == 0);
    CHECK(count_rule(&d, "ane-softmax-npot", MIL_SEV_WARNING, NULL) == 0);
    CHECK(count_rule(&d, "ane-softmax-npot", MIL_SEV_ERROR, NULL) == 0);
    CHECK(count_rule(&d, "ane-elementwise-only", MIL_SEV_ERROR, NULL) == 1);
    CHECK(count_rule(&d, "ane-silu", MIL_SEV_ERROR, NULL) == 1);
    CHECK(count_rule(&d, "ane-gather-indices", MIL_SEV_ERROR, NULL) == 1);
    mil_diagnostics_free(&d);
}

int main(void) {
    RUN(test_profile_settles_chip_dependent_rules);
    RUN(test_clean_ane_program_passes_every_rule);
    RUN(test_rule_fp16_compute);
    RUN(test_rule_boundary_io);
    RUN(test_rule_no_bool_io);
    RUN(test_rule_io_width);
    RUN(test_rule_no_scatter);
    RUN(test_rule_no_state);
    RUN(test_rule_no_range_dims);
    RUN(test_rule_static_dims);
    RUN(test_rule_gather_indices);
    RUN(test_rule_conv_kernel_width);
    RUN(test_rule_conv_const_weight);
    RUN(test_rule_lut);
    RUN(test_warning_matmul_inner);
    RUN(test_rule_max_dim);
    RUN(test_rule_sdpa_mask);
    RUN(test_warning_gelu);
    RUN(test_warning_tile);
    RUN(test_warning_reduce_mean);
    RUN(test_warning_concat);
    RUN(test_warning_exp);
    RUN(test_warning_sqrt);
    RUN(test_rule_table_rows_are_complete);
    RUN(test_corpus_attention_passes);
    return nc_test_exit_code();
}
