#!/bin/sh
# The Qwen3 parity tests again with the scalar reference kernels forced
# (NECTAR_NO_SIMD=1), so the portable fallback is checked against HF too.
BIN=${NECTAR_BUILD:-build}/tests/models/test_qwen3_parity
if [ ! -x "$BIN" ]; then echo "SKIP qwen3_scalar: $BIN not built"; exit 0; fi
out=$(mktemp)
NECTAR_NO_SIMD=1 "$BIN" >"$out" 2>&1
rc=$?
sed -e 's/^PASS /PASS scalar_/' -e 's/^FAIL /FAIL scalar_/' -e 's/^SKIP /SKIP scalar_/' "$out"
rm -f "$out"
exit $rc
