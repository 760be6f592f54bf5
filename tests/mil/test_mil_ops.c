/* The op table against coremltools' op registry (tools/mil_op_fixtures.py ->
 * tests/fixtures/mil_ops/signatures.txt): for every op nectar knows, at each
 * opset iOS15..iOS18, the same arguments, the same optional and
 * must-be-constant flags, tuple arguments, the same allowed dtypes, the same
 * arguments tied to one type variable, and the op absent where coremltools
 * does not have it yet. */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "base/mmap.h"
#include "mil/ops.h"

typedef struct {
    char name[48];
    char flags[8];
    char domain[16];
    uint32_t dtypes; /* 0 = any */
} ref_arg;

/* "fp16,int32" -> mask; "*" -> 0. Unknown names set bit 31 so they never match. */
static uint32_t parse_dtypes(const char *s) {
    if (!strcmp(s, "*")) return 0;
    uint32_t mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "str")) t = "string";
        mil_dtype dt = mil_dtype_from_name(t);
        mask |= dt == MIL_DT_INVALID ? 1u << 31 : MIL_DTBIT(dt);
    }
    return mask;
}

static void describe(uint32_t mask, char *out, size_t n) {
    size_t pos = 0;
    out[0] = 0;
    for (int dt = 1; dt < MIL_DT_COUNT && pos < n; dt++)
        if (mask & MIL_DTBIT(dt))
            pos += (size_t)snprintf(out + pos, n - pos, "%s%s", pos ? "," : "",
                                    mil_dtype_name((mil_dtype)dt));
}

/* Where nectar accepts more than coremltools' registry, on evidence: real
 * coremlc output from coremltools 9 uses fp8 data in
 * constexpr_blockwise_shift_scale (docs/references.md §M.2). */
static int superset_allowed(const char *op, const char *arg, uint32_t mine, uint32_t theirs) {
    uint32_t fp8 = MIL_DTBIT(MIL_DT_FP8E4M3FN) | MIL_DTBIT(MIL_DT_FP8E5M2);
    return !strcmp(op, "constexpr_blockwise_shift_scale") &&
           (!strcmp(arg, "data") || !strcmp(arg, "offset")) && (mine & ~fp8) == theirs;
}

/* Compares one fixture line; returns the number of differences printed. */
static int compare_line(char *line) {
    char op[64];
    int opset, used;
    if (sscanf(line, "%63s %d%n", op, &opset, &used) != 2)
        return printf("  bad line: %s\n", line), 1;
    const mil_op_def *def = mil_op_lookup(op, opset);
    char *rest = line + used;
    while (*rest == ' ')
        rest++;
    if (!strcmp(rest, "absent")) {
        if (def)
            return printf("  %s ios%d: coremltools lacks it, nectar has a row (ios%d)\n", op, opset,
                          def->opset),
                   1;
        return 0;
    }
    if (!def) return printf("  %s ios%d: missing from nectar's table\n", op, opset), 1;
    if (!strcmp(op, "const")) return 0; /* val is an attribute in MIL text, not an argument */
    ref_arg ref[MIL_MAX_OP_ARGS + 4];
    int n = 0, bad = 0;
    char *save = NULL;
    for (char *f = strtok_r(rest, " ", &save); f && n < MIL_MAX_OP_ARGS + 4;
         f = strtok_r(NULL, " ", &save)) {
        char dts[256];
        if (sscanf(f, "%47[^:]:%7[^:]:%15[^:]:%255s", ref[n].name, ref[n].flags, ref[n].domain,
                   dts) != 4)
            return printf("  bad field %s\n", f), 1;
        ref[n].dtypes = parse_dtypes(dts);
        n++;
    }
    int n_mine = 0;
    while (n_mine < MIL_MAX_OP_ARGS && def->args[n_mine].name)
        n_mine++;
    for (int i = 0; i < n_mine; i++) {
        int found = 0;
        for (int j = 0; j < n; j++)
            found |= !strcmp(ref[j].name, def->args[i].name);
        if (!found)
            bad += printf("  %s ios%d: nectar has argument '%s', coremltools does not\n", op, opset,
                          def->args[i].name) > 0;
    }
    for (int j = 0; j < n; j++) {
        const mil_arg_spec *a = mil_op_def_arg(def, ref[j].name);
        if (!a) {
            bad += printf("  %s ios%d: argument '%s' missing\n", op, opset, ref[j].name) > 0;
            continue;
        }
        int opt = strchr(ref[j].flags, 'o') != NULL, cst = strchr(ref[j].flags, 'c') != NULL;
        int tup = strchr(ref[j].flags, 't') != NULL;
        if (opt != !!(a->flags & MIL_ARG_OPTIONAL) || cst != !!(a->flags & MIL_ARG_CONST) ||
            tup != !!(a->flags & MIL_ARG_TUPLE))
            bad += printf("  %s ios%d: '%s' flags differ (coremltools %s)\n", op, opset,
                          ref[j].name, ref[j].flags) > 0;
        if (ref[j].dtypes && ref[j].dtypes != a->dtypes &&
            !superset_allowed(op, ref[j].name, a->dtypes, ref[j].dtypes)) {
            char mine[256], theirs[256];
            describe(a->dtypes, mine, sizeof mine);
            describe(ref[j].dtypes, theirs, sizeof theirs);
            bad += printf("  %s ios%d: '%s' dtypes %s, coremltools %s\n", op, opset, ref[j].name,
                          mine, theirs) > 0;
        }
        for (int k = 0; k < j; k++) { /* tied to one type variable in both or in neither */
            const mil_arg_spec *b = mil_op_def_arg(def, ref[k].name);
            if (!b) continue;
            int tied_ref = strcmp(ref[j].domain, "-") && !strcmp(ref[j].domain, ref[k].domain);
            int tied_mine = a->domain && a->domain == b->domain;
            if (tied_ref != tied_mine)
                bad += printf("  %s ios%d: '%s' and '%s' %s share a dtype in coremltools\n", op,
                              opset, ref[k].name, ref[j].name, tied_ref ? "must" : "need not") > 0;
        }
    }
    return bad;
}

static void test_op_table_matches_coremltools_registry(void) {
    char *text;
    size_t len;
    nc_error err;
    CHECK_OK(nc_read_file("tests/fixtures/mil_ops/signatures.txt", &text, &len, &err), &err);
    int n_lines = 0, n_bad = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        n_bad += compare_line(line);
        n_lines++;
    }
    free(text);
    CHECKF(n_bad == 0, "%d differences over %d op/opset rows", n_bad, n_lines);
    CHECKF(n_lines > 300, "only %d rows", n_lines);
}

int main(void) {
    RUN(test_op_table_matches_coremltools_registry);
    return nc_test_exit_code();
}
