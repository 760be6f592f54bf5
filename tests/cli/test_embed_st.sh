#!/bin/sh
# `nectar embed` on sentence-transformers folders as they are saved
# (tests/fixtures/st, tools/make_st_fixtures.py) against
# SentenceTransformer(dir).encode's vectors (ref.json): st_mean has a
# default prompt ("query: ") that encode puts before every text, st_cls a
# max_seq_length of 16 that truncates the long text; each pooling mode's
# folder too. Before, embed applied neither and only said so.
BIN=${NECTAR_BIN:-build/nectar}
T=$(mktemp -d "${TMPDIR:-/tmp}/nc_embed_st.XXXXXX")
trap 'rm -rf "$T"' EXIT
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP embed_st: no python3"; exit 0; fi
rc=0
for name in st_mean st_cls st_max st_last st_wmean; do
    dir=tests/fixtures/st/$name
    python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["texts"]))' \
        "$dir/ref.json" >"$T/texts"
    if ! "$BIN" embed -t 1 -m "$dir" -f "$T/texts" -o "$T/out.json" 2>"$T/err"; then
        echo "FAIL embed_${name}_equals_sentence_transformers: $(tail -1 "$T/err")"
        rc=1
        continue
    fi
    python3 - "$dir/ref.json" "$T/out.json" "embed_${name}_equals_sentence_transformers" <<'PY' || rc=1
import json, sys
want = json.load(open(sys.argv[1]))["embeddings"]
got = json.load(open(sys.argv[2]))["embeddings"]
worst = max(abs(a - b) for w, g in zip(want, got) for a, b in zip(w, g))
ok = len(got) == len(want) and all(len(g) == len(w) for w, g in zip(want, got)) and worst < 1e-4
print(("PASS %s" if ok else "FAIL %s: largest difference %g") % ((sys.argv[3],) + (() if ok else (worst,))))
sys.exit(0 if ok else 1)
PY
done
exit $rc
