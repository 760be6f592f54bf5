# Sourced by the tests that run a C test binary again on narrower kernel
# tables than the default: nc_on_tables BIN TABLE... runs BIN once per
# table named (scalar = NECTAR_NO_SIMD=1, any other name is NECTAR_SIMD's
# cap; x86-only names are skipped elsewhere), prefixes its PASS/FAIL/SKIP
# lines with the table's name and keeps its indented detail lines, and
# returns non-zero if any run failed.
nc_on_tables() {
    bin=$1
    shift
    out=$(mktemp)
    status=0
    for t in "$@"; do
        case $t in
        scalar) env=NECTAR_NO_SIMD=1 ;;
        avx2 | avx2-vnni | avx512)
            case $(uname -m) in x86_64 | amd64) ;; *) continue ;; esac
            env=NECTAR_SIMD=$t
            ;;
        *) env=NECTAR_SIMD=$t ;;
        esac
        name=$(echo "$t" | tr - _)
        env "$env" "$bin" >"$out" 2>&1 || status=1
        sed -n -e "s/^PASS /PASS ${name}_/p" -e "s/^FAIL /FAIL ${name}_/p" \
            -e "s/^SKIP /SKIP ${name}_/p" -e "/^  /p" "$out"
    done
    rm -f "$out"
    return $status
}
