#!/bin/sh
# The kernel wisdom tests (test_cpu_wisdom) again on the AVX2 table, whose
# Q4 decode slot chooses between x16 (Q4 interleaved at load, its own
# kernel) and its row tiles, and the AVX-512 one without AMX tiles: the
# candidates and the written choices follow the table in use, not the
# widest one the CPU has.
BIN=${NECTAR_BUILD:-build}/tests/cpu/test_cpu_wisdom
if [ ! -x "$BIN" ]; then echo "SKIP wisdom_tables: $BIN not built"; exit 0; fi
. tests/common/on_tables.sh
nc_on_tables "$BIN" avx2 avx512
