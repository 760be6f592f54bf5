#!/bin/sh
# A mutation pass over boundary code (limits, parsers, binders, rules): each
# mutant is a one-line sed edit of one source file, then the one test binary
# that should notice it (and the nectar binary the server tests start) is
# rebuilt and run; the mutant is "killed" when that
# test fails. The source is always restored (also on Ctrl-C). Prints one line
# per mutant and the score; docs/reliability.md records the last run.
#
#   sh tools/hostile_mutants.sh [BUILD]      # from the repository root, after make
#
# Each line below: file, sed expression, test binary under BUILD/tests,
# separated by TABs. The expression must change the file (checked), so a
# stale line shows up, and the mutant must still build (-Werror: a mutant
# that leaves a variable unused keeps it referenced, as in `0 && x`).
set -u
BUILD=${1:-build}
MUTANTS=$(mktemp)
cat >"$MUTANTS" <<'EOF'
src/serve/serve_request.c	s/if (n > SERVE_MAX_STOP) return/if (n >= SERVE_MAX_STOP) return/	serve/test_serve_request
src/serve/serve_request.c	s/if (len > SERVE_MAX_STOP_BYTES)/if (len >= SERVE_MAX_STOP_BYTES)/	serve/test_serve_request
src/serve/serve_request.c	s/    if (!\*param) return nc_fail/    if (0) return nc_fail/	serve/test_serve_request
src/serve/serve_head.c	s/if (n_auth > 1)/if (n_auth > 2)/	serve/test_serve_head_policy
src/serve/serve_head.c	s/for (const char \*q = t; q + 2 < p; q++)/for (const char *q = t; q + 3 < p; q++)/	serve/test_serve_head_policy
src/serve/serve_head.c	s/if (len >= 2 \&\& buf\[0\] == '\\r' \&\& buf\[1\] == '\\n') {/if (0) {/	serve/test_serve_head_policy
src/serve/serve_head.c	s/if (buf\[i\] == '\\n' \&\& (i == 0 || buf\[i - 1\] != '\\r')) return 1;/(void)0;/	serve/test_serve_head_policy
src/serve/serve_head.c	s/if (p - m > 20) return 0;/if (p - m > 21) return 0;/	serve/test_serve_head_policy
src/serve/serve_head.c	s/if (!could_be_field(p, end))/if (0 \&\& !could_be_field(p, end))/	serve/test_serve_head_policy
src/serve/serve_head.c	s/if (n_length > 1) return/if (n_length > 2) return/	serve/test_serve_head_policy
src/serve/serve_head.c	s/if ((unsigned long long)length > lim->max_body_bytes)/if ((unsigned long long)length > lim->max_body_bytes + 1)/	serve/test_serve_head_policy
src/serve/serve_jsonshape.c	s/if (++depth > out->max_depth)/if (++depth >= out->max_depth + 2)/	serve/test_serve_jsonshape
src/serve/serve_jsonshape.c	s/            if (!in_scalar) out->n_values++;/            if (!in_scalar || 1) out->n_values++;/	serve/test_serve_jsonshape
src/serve/serve_jsonshape.c	s/                i++, out->string_bytes++;/                out->string_bytes++;/	serve/test_serve_jsonshape
src/serve/serve_http.c	s/if (shape.n_values > SERVE_MAX_JSON_VALUES)/if (shape.n_values > 4 * SERVE_MAX_JSON_VALUES)/	serve/test_server_hostile
src/serve/serve_http.c	s/        if (used \&\& used + n > s->mem_budget) return -1;/        (void)0;/	serve/test_server_hostile
src/serve/serve_http.c	s/    if (r == 0) return eof_is_gone;/    if (r == 0) return 0 \&\& eof_is_gone;/	serve/test_server_hostile
src/serve/serve_special.c	s/if (s->len\[k\] <= len - i \&\&/if (s->len[k] < len - i \&\&/	serve/test_serve_fake
src/gen/json_schema.c	s/(nd->max_items >= 0 \&\& nd->max_items < nd->min_items))$/(nd->max_items >= 0 \&\& nd->max_items <= nd->min_items))/	gen/test_json_grammar
src/gen/json_schema.c	s/if (json_array_size(en) > JS_MAX_ENUM)/if (json_array_size(en) >= JS_MAX_ENUM)/	gen/test_json_grammar
src/gen/json_schema.c	s/        if (json_is_false(ap))$/        if (0 \&\& json_is_false(ap))/	gen/test_json_grammar
src/gen/json_schema.c	s/    if (!type) return NC_OK;/    return NC_OK;/	gen/test_json_grammar
src/gen/json_schema.c	s/    if (color\[node\] == 1) return node;/    if (color[node] == 1) return -1;/	gen/test_json_grammar
src/gen/json_schema.c	s/    if (json_object_get(props, name)) return 0;/    if (json_object_get(props, name)) return 1;/	gen/test_json_grammar
src/gen/stop.c	s/if (at + m < best_end || at < best_start) {/if (at + m < best_end) {/	gen/test_stop
src/mil/interp_math.c	s/case MIL_KU_ROUND: r = nearbyintf(v);/case MIL_KU_ROUND: r = roundf(v);/	mil/test_interp_program
src/mil/parse.c	s/long long hi = bits >= 64 ? LLONG_MAX : (1LL << (bits - 1)) - 1;/long long hi = bits >= 64 ? LLONG_MAX : (1LL << (bits - 1));/	mil/test_mil_parse_errors
src/mil/parse.c	s/long long lo = bits >= 64 ? LLONG_MIN : -(1LL << (bits - 1));/long long lo = bits >= 64 ? LLONG_MIN : -(1LL << (bits - 1)) - 1;/	mil/test_mil_parse_errors
src/mil/parse.c	s/unsigned long long hi = bits >= 64 ? ULLONG_MAX : (1ULL << bits) - 1;/unsigned long long hi = bits >= 64 ? ULLONG_MAX : (1ULL << bits);/	mil/test_mil_parse_errors
src/io/safetensors.c	s/    if (hlen > size - 8)/    if (hlen > size)/	io/test_safetensors
src/io/safetensors.c	s/    if (hlen < 2 || hlen > ST_MAX_HEADER_BYTES)/    if (hlen < 1 || hlen > ST_MAX_HEADER_BYTES)/	io/test_safetensors
src/models/hf_tensors.c	s/    for (int i = 0; same \&\& i < ndim; i++)/    for (int i = 0; same \&\& i < ndim - 1; i++)/	models/test_hf_tensors
src/ane_host/ane_bind.c	s/if (a->batches != d\[0\] || a->channels != d\[1\] || a->depth != 1/if (a->batches != d[0] || a->depth != 1/	ane/test_ane_attrs
EOF
saved=""
restore() { [ -n "$saved" ] && cp "$saved" "$file" && rm -f "$saved"; saved=""; }
trap 'restore; rm -f "$MUTANTS"; exit 130' INT TERM
n=0 killed=0
TAB=$(printf '\t')
while IFS=$TAB read -r file expr test; do
    [ -z "$file" ] && continue
    n=$((n + 1))
    saved=$(mktemp)
    cp "$file" "$saved"
    sed -i "$expr" "$file"
    if cmp -s "$file" "$saved"; then
        echo "STALE  $file: '$expr' changed nothing"
        restore
        continue
    fi
    if ! make -s "$BUILD/nectar" "$BUILD/tests/$test" >/dev/null 2>&1; then
        echo "BROKEN $file: $expr (does not build: fix the line)"
        n=$((n - 1))
    elif timeout 600 "$BUILD/tests/$test" >/dev/null 2>&1; then
        echo "LIVED  $file: $expr ($test passes)"
    else
        echo "KILLED $file: $expr ($test)"
        killed=$((killed + 1))
    fi
    restore
done <"$MUTANTS"
rm -f "$MUTANTS"
make -s >/dev/null 2>&1 # the restored sources rebuilt
echo "$killed of $n mutants killed"
