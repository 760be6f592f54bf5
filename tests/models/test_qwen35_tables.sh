#!/bin/sh
# The Qwen3.5 parity tests on every kernel table this CPU has, not only the
# default one: the scalar reference (NECTAR_NO_SIMD=1) and, on x86-64, AVX2
# and AVX-512 without AMX tiles, so each table is checked against HF.
BIN=${NECTAR_BUILD:-build}/tests/models/test_qwen35_parity
if [ ! -x "$BIN" ]; then echo "SKIP qwen35_tables: $BIN not built"; exit 0; fi
tables="NECTAR_NO_SIMD=1"
case $(uname -m) in x86_64|amd64) tables="$tables NECTAR_SIMD=avx2 NECTAR_SIMD=avx512" ;; esac
out=$(mktemp)
status=0
for t in $tables; do
    name=$(echo "$t" | sed -e 's/NECTAR_NO_SIMD=1/scalar/' -e 's/NECTAR_SIMD=//')
    env "$t" "$BIN" >"$out" 2>&1 || status=1
    sed -e "s/^PASS /PASS ${name}_/" -e "s/^FAIL /FAIL ${name}_/" -e "s/^SKIP /SKIP ${name}_/" "$out"
done
rm -f "$out"
exit $status
