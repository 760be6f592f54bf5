/* Fuzz target: the MIL parser must accept or reject any bytes without a
 * crash, leak, hang or out-of-bounds read. What it accepts must also survive
 * the rest of the toolchain: inference on every op, printing, and reparsing
 * the printed text to the same program (a broken round trip aborts). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mil/compare.h"
#include "mil/ops.h"
#include "mil/parse.h"
#include "mil/print.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mil_program *p, *q;
    nc_error err;
    if (mil_parse((const char *)data, size, "fuzz", &p, &err) != NC_OK) return 0;
    mil_infer_out *out = malloc(sizeof *out);
    for (int f = 0; out && f < p->n_functions; f++)
        for (int k = 0; k < p->functions[f]->n_ops; k++)
            mil_op_infer(p, p->functions[f]->ops[k], out, &err);
    free(out);
    char *text;
    size_t n;
    if (mil_print_string(p, &text, &n, &err) == NC_OK) {
        if (mil_parse(text, n, "reprint", &q, &err) != NC_OK)
            abort(); /* printer wrote what parser rejects */
        if (!mil_program_equal(p, q, NULL, 0)) abort();
        mil_program_free(q);
        free(text);
    }
    mil_program_free(p);
    return 0;
}
