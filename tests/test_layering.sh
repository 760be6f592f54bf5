#!/bin/sh
# The include graph points one way: every `#include "..."` in include/, src/
# and tools/nectar/ names a header in its own layer or a lower one. The layer
# order is the row order of the table in docs/architecture.md (written once,
# there): a folder missing from the table, an include that resolves to no
# file, or an arrow to a later row fails, naming the file and line.
# Usage: sh tests/test_layering.sh [ROOT]  (default: the current directory)
ROOT=${1:-.}
cd "$ROOT" || exit 1
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# the table's first cells, in order: include/nectar.h, src/base/, ..., tools/nectar/
layers=$(sed -n 's/^| `\([^`]*\)` |.*/\1/p' docs/architecture.md | grep -v '\*' | grep -v '^tests/$')
if [ -z "$layers" ]; then
    fail layering_table_found "no layer table in docs/architecture.md"
    exit 0
fi

files=$(find include src tools/nectar -name '*.[ch]' | LC_ALL=C sort)
bad=$(mktemp)
trap 'rm -f "$bad"' EXIT
# one awk pass: the table, the list of files (to resolve names the way the
# compiler does for quoted includes: the including file's folder first, then
# -Iinclude -Isrc), then every include line as FILE:LINE:TEXT
{
    echo "$layers" | sed 's/^/L /'
    echo "$files" | sed 's/^/F /'
    # shellcheck disable=SC2086
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files /dev/null | sed 's/^/I /'
} | awk '
    function layer_of(p,   i) {
        for (i = 1; i <= nl; i++)
            if ((substr(L[i], length(L[i])) == "/" && index(p, L[i]) == 1) || p == L[i]) return i
        return 0
    }
    function norm(p,   n, a, out, i, k) { # folds "x/../" and "./"
        n = split(p, a, "/"); k = 0
        for (i = 1; i <= n; i++) {
            if (a[i] == "." || a[i] == "") continue
            if (a[i] == ".." && k > 0) { k--; continue }
            st[++k] = a[i]
        }
        out = st[1]; for (i = 2; i <= k; i++) out = out "/" st[i]
        return out
    }
    $1 == "L" { L[++nl] = $2; next }
    $1 == "F" { F[$2] = 1; if (!layer_of($2)) print $2 ": its folder has no row in the layer table"; next }
    $1 == "I" {
        rest = substr($0, 3)
        f = substr(rest, 1, index(rest, ":") - 1); rest = substr(rest, length(f) + 2)
        line = substr(rest, 1, index(rest, ":") - 1)
        inc = rest; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
        from = layer_of(f); if (!from) next
        dir = f; sub(/\/[^\/]*$/, "", dir)
        t = norm(dir "/" inc)
        if (!(t in F)) t = norm("include/" inc)
        if (!(t in F)) t = norm("src/" inc)
        if (!(t in F)) { print f ":" line ": \"" inc "\" resolves to no file"; next }
        to = layer_of(t)
        if (!to) print f ":" line ": \"" inc "\" (" t ") is in no layer of the table"
        else if (to > from) print f ":" line ": \"" inc "\" points up to " L[to] " (from " L[from] ")"
    }' >"$bad"

n=$(echo "$files" | wc -l)
if [ -s "$bad" ]; then
    fail include_graph_points_down "$(wc -l <"$bad") upward or unknown includes:"
    sed 's/^/  /' "$bad"
else
    pass "include_graph_points_down ($n files)"
fi
