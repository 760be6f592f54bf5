# Reads MIL text; prints one line per gather/gather_along_axis/gather_nd op:
# "<file>:<line> <op> <indices dtype>", the dtype taken from the declaration
# of the indices variable (a function input or an earlier op's output).
# An independent check of what the lowering emits (no nectar code involved).
FNR == 1 { delete type }
{
    # declarations: "tensor<T, [..]> name = ..." / "T name = ..." and inputs
    line = $0
    while (match(line, /tensor<[a-z0-9]+, \[[^]]*\]> [A-Za-z_][A-Za-z0-9_]*/)) {
        decl = substr(line, RSTART, RLENGTH)
        t = decl; sub(/^tensor</, "", t); sub(/,.*/, "", t)
        n = decl; sub(/.*> /, "", n)
        type[n] = t
        line = substr(line, RSTART + RLENGTH)
    }
}
/= gather(_along_axis|_nd)?\(/ {
    match($0, /= gather(_along_axis|_nd)?\(/)
    op = substr($0, RSTART + 2, RLENGTH - 3)
    ix = $0; sub(/.*indices = /, "", ix); sub(/[,)].*/, "", ix)
    print FILENAME ":" FNR " " op " " (ix in type ? type[ix] : "?")
}
