#!/bin/sh
# Runs every test binary under BUILD/tests and every tests/**/test_*.sh, from
# the repository root, and prints the closing line "N passed, N failed, N skipped".
# A binary that crashes or exits non-zero without a FAIL line counts as a failure.
BUILD=${1:-build}
export NECTAR_BIN="$BUILD/nectar"
export NECTAR_BUILD="$BUILD"
# No test measures kernels into the user's wisdom file (~/.cache/nectar):
# a test that wants the measurement names its own file.
export NECTAR_WISDOM=off
pass=0 fail=0 skip=0
failed_names=""
log=$(mktemp)
run_one() { # name, command...
    name=$1; shift
    "$@" >"$log" 2>&1
    rc=$?
    p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log"); s=$(grep -c '^SKIP ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "FAIL $name (exit $rc)" >>"$log"; fi
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
    if [ "$f" -ne 0 ]; then
        echo "== $name"; cat "$log"
        failed_names="$failed_names $name"
    else
        echo "ok   $name ($p passed, $s skipped)"
        grep '^SKIP ' "$log" | sed 's/^/     /'
    fi
}
for t in $(find "$BUILD/tests" -type f -perm -u+x 2>/dev/null | LC_ALL=C sort); do
    run_one "${t#$BUILD/tests/}" "$t"
done
for t in $(find tests -name 'test_*.sh' | LC_ALL=C sort); do
    run_one "$t" sh "$t"
done
rm -f "$log"
[ -n "$failed_names" ] && echo "failed:$failed_names"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
