# The preamble the shell tests share (sourced first, from the repository
# root as tests/run_tests.sh runs them: . "$(dirname "$0")/../common/sh_test.sh").
# BIN is the nectar under test ($NECTAR_BIN, which run_tests.sh sets);
# TMP a scratch folder, removed on exit; pass NAME and fail NAME WHY print
# the PASS/FAIL lines run_tests.sh counts. A script that printed a FAIL
# line exits 1 (a fail in a pipeline's subshell too: it leaves a mark in
# TMP), whatever its last command; otherwise with its own status.
BIN=${NECTAR_BIN:-build/nectar}
TMP=$(mktemp -d)
sh_test_exit() {
    sh_test_status=$?
    [ -e "$TMP/.sh_test_failed" ] && sh_test_status=1
    rm -rf "$TMP"
    exit $sh_test_status
}
trap sh_test_exit EXIT
pass() { echo "PASS $1"; }
fail() {
    echo "FAIL $1: $2"
    echo "$1" >>"$TMP/.sh_test_failed"
}
