#!/usr/bin/env python3
"""Op count and sequential depth of each function of a MIL text file.

Depth is the longest chain of non-const ops from an input to an output
(each op one step, whatever its size): how many ops of a function must
run one after the other. docs/qwen35.md compares the two forms of the
Qwen3.5 prefill with it:

    python3 tools/mil_depth.py BUNDLE/layer_00/model.mil [--prefix prefill]
"""
import argparse
import re
import sys

FUNC = re.compile(r"\s*func (\w+)<")
OP = re.compile(r"\s*\S.*?\s(\w+) = (\w+)\((.*)\)\[name")
ARG = re.compile(r"=\s*(\w+)")


def functions(path):
    cur, out = None, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = FUNC.match(line)
            if m:
                cur = m.group(1)
                out[cur] = []
            elif cur:
                out[cur].append(line)
    return out


def depth_of(lines):
    depth, n_ops = {}, 0
    for line in lines:
        m = OP.match(line)
        if not m:
            continue
        name, op, args = m.groups()
        if op == "const":
            depth[name] = 0
            continue
        n_ops += 1
        depth[name] = 1 + max([depth.get(a, 0) for a in ARG.findall(args)] + [0])
    return n_ops, max(depth.values(), default=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mil", nargs="+")
    ap.add_argument("--prefix", default="", help="only functions whose name starts so")
    args = ap.parse_args()
    for path in args.mil:
        for fn, lines in functions(path).items():
            if fn.startswith(args.prefix):
                n_ops, depth = depth_of(lines)
                print(f"{path}: {fn}: {n_ops} ops, depth {depth}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
