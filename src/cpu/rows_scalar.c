/* The row kernels (rows.h) in portable C, one float per "vector". */
#include <math.h>

#include "cpu/rows.h"

#define ID(x) (x)
#define LOAD1(p) (*(p))
#define STORE1(p, v) (*(p) = (v))
#define ADD1(a, b) ((a) + (b))
#define SUB1(a, b) ((a) - (b))
#define MUL1(a, b) ((a) * (b))
#define DIV1(a, b) ((a) / (b))
#define FMA1(a, b, c) ((a) * (b) + (c))
#define BLEND_LT1(v, lim, r, y) ((v) < (lim) ? (y) : (r))

CPU_DEF_ROWS(cpu_rows_scalar, float, 1, ID, LOAD1, STORE1, ADD1, SUB1, MUL1, DIV1, fminf, FMA1, ID,
             expf, BLEND_LT1)
