"""Writes tests/fixtures/mil_infer/cases.txt: output types of single MIL ops
as computed by coremltools' own type inference (pymil, the code that decides
the types coremlc later prints), for the awkward cases nectar's op table must
get right: conv padding/stride/dilation/groups, matmul broadcasting and
transposes, reshape 0/-1, negative axes and strides, split, gather with
batch_dims, and ops that must be rejected.

Left out on purpose, where coremltools itself goes wrong and nectar keeps
NumPy's rules: a 1-D matmul operand with batch dims on the other side
(coremltools returns [1, N] or crashes on a 1-D y), select whose cond broadcasts beyond
a and b (coremltools ignores cond's shape), and a transpose perm that is not a
permutation (coremltools accepts it). tests/mil/test_mil_infer.c covers those
by hand.

Each line is: opset TAB inputs TAB op-expression (MIL text) TAB expected,
where expected is the output types joined by " ; ", or "!" when coremltools
raises. tests/mil/test_mil_infer.c parses each case and compares.

Run: python3 tools/mil_infer_fixtures.py
"""
import os

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import Function, types

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "mil_infer")
OPSETS = {"ios15": ct.target.iOS15, "ios16": ct.target.iOS16, "ios17": ct.target.iOS17, "ios18": ct.target.iOS18}
DTYPES = {"fp16": types.fp16, "fp32": types.fp32, "int32": types.int32, "bool": types.bool,
          "int16": types.int16, "int8": types.int8}


class V:
    """A reference to a function input by name."""

    def __init__(self, name):
        self.name = name


def f16(x):
    return np.float16(x)


def mil_float(x, dtype):
    return float(x).hex() if np.isfinite(x) else ("inf" if x > 0 else "-inf")


def mil_literal(v):
    """The MIL text of a Python/NumPy constant."""
    if isinstance(v, V):
        return v.name
    if isinstance(v, tuple):
        return "(" + ", ".join(mil_literal(x) for x in v) + ")"
    if isinstance(v, (bool, np.bool_)):
        return "bool(%s)" % ("true" if v else "false")
    if isinstance(v, np.float16):
        return "fp16(%s)" % mil_float(v, "fp16")
    if isinstance(v, (float, np.float32)):
        return "fp32(%s)" % mil_float(v, "fp32")
    if isinstance(v, (int, np.integer)):
        return "int32(%d)" % v
    if isinstance(v, str):
        return 'string("%s")' % v
    if isinstance(v, list):
        v = np.array(v, dtype=np.bool_ if all(isinstance(x, bool) for x in v) else np.int32)
    if isinstance(v, np.ndarray):
        name = {np.dtype(np.int32): "int32", np.dtype(np.bool_): "bool", np.dtype(np.float16): "fp16",
                np.dtype(np.float32): "fp32", np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8"}[v.dtype]
        flat = v.flatten()
        if name == "bool":
            items = ["true" if x else "false" for x in flat]
        elif name in ("fp16", "fp32"):
            items = [mil_float(x, name) for x in flat]
        else:
            items = [str(int(x)) for x in flat]
        return "tensor<%s, [%s]>([%s])" % (name, ", ".join(str(d) for d in v.shape), ", ".join(items))
    raise TypeError(v)


def pymil_value(v, env):
    if isinstance(v, V):
        return env[v.name]
    if isinstance(v, tuple):
        return tuple(pymil_value(x, env) for x in v)
    if isinstance(v, list):
        return np.array(v, dtype=np.bool_ if all(isinstance(x, bool) for x in v) else np.int32)
    return v


def type_str(var):
    dt = types.builtin_to_string(var.dtype)
    if var.rank == 0:
        return dt
    return "tensor<%s, [%s]>" % (dt, ", ".join(str(int(d)) for d in var.shape))


def run(opset, inputs, op, kwargs):
    """Expected output types (or '!'), plus the MIL text of the case."""
    decl = ", ".join("tensor<%s, [%s]> %s" % (dt, ", ".join(str(d) for d in shape), name)
                     if shape else "%s %s" % (dt, name) for name, (shape, dt) in inputs.items())
    expr = "%s(%s)" % (op, ", ".join("%s = %s" % (k, mil_literal(v)) for k, v in kwargs.items()))
    placeholders = {name: mb.placeholder(shape=shape, dtype=DTYPES[dt]) for name, (shape, dt) in inputs.items()}
    try:
        with Function(placeholders, opset_version=OPSETS[opset]) as fn:
            env = dict(fn.inputs)
            out = getattr(mb, op)(**{k: pymil_value(v, env) for k, v in kwargs.items()})
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            expected = " ; ".join(type_str(o) for o in outs)
    except Exception:  # coremltools rejects the op: nectar must too
        expected = "!"
    return "\t".join([opset, decl, expr, expected])


X = lambda shape, dt="fp16": (shape, dt)

CASES = [
    # conv: padding, stride, dilation, groups, 1-D, 1x1, same/same_lower
    ("ios18", {"x": X((1, 3, 32, 32)), "w": X((8, 3, 3, 3))}, "conv",
     dict(x=V("x"), weight=V("w"), strides=[2, 2], pad_type="custom", pad=[1, 1, 1, 1])),
    ("ios18", {"x": X((1, 4, 10, 10))}, "conv",  # dilations need a constant weight
     dict(x=V("x"), weight=np.zeros((6, 2, 3, 3), dtype=np.float16), dilations=[2, 2], groups=2)),
    ("ios18", {"x": X((1, 4, 1, 33)), "w": X((4, 4, 1, 3))}, "conv",
     dict(x=V("x"), weight=V("w"), strides=[1, 2], pad_type="same")),
    ("ios18", {"x": X((1, 4, 7, 9)), "w": X((4, 4, 2, 4))}, "conv",
     dict(x=V("x"), weight=V("w"), strides=[3, 2], pad_type="same_lower")),
    ("ios18", {"x": X((1, 64, 1, 32)), "w": X((128, 64, 1, 1))}, "conv", dict(x=V("x"), weight=V("w"))),
    ("ios18", {"x": X((1, 4, 10)), "w": X((2, 4, 3))}, "conv", dict(x=V("x"), weight=V("w"), strides=[2])),
    ("ios18", {"x": X((1, 4, 5, 5)), "w": X((6, 4, 3, 3))}, "conv",
     dict(x=V("x"), weight=V("w"), pad_type="custom", pad=[0, 2, 1, 0], strides=[2, 1])),
    ("ios18", {"x": X((1, 4, 1, 8)), "w": X((4, 3, 1, 1))}, "conv", dict(x=V("x"), weight=V("w"))),
    # matmul and linear
    ("ios18", {"a": X((2, 1, 3, 4)), "b": X((5, 4, 6))}, "matmul", dict(x=V("a"), y=V("b"))),
    ("ios18", {"a": X((1, 4, 64, 16)), "b": X((1, 4, 32, 16))}, "matmul", dict(x=V("a"), y=V("b"), transpose_y=True)),
    ("ios18", {"a": X((1, 4, 16, 64)), "b": X((1, 4, 32, 16))}, "matmul",
     dict(x=V("a"), y=V("b"), transpose_x=True, transpose_y=True)),
    ("ios18", {"a": X((4,), "fp32"), "b": X((4, 6), "fp32")}, "matmul", dict(x=V("a"), y=V("b"))),
    ("ios18", {"a": X((3, 4)), "b": X((5, 4))}, "matmul", dict(x=V("a"), y=V("b"))),
    ("ios18", {"a": X((2, 3, 4)), "b": X((3, 4, 5))}, "matmul", dict(x=V("a"), y=V("b"))),
    ("ios18", {"x": X((1, 2, 4))}, "linear",
     dict(x=V("x"), weight=np.arange(12, dtype=np.float16).reshape(3, 4), bias=np.ones(3, dtype=np.float16))),
    # elementwise broadcasting and comparisons
    ("ios18", {"a": X((2, 1, 4)), "b": X((3, 1))}, "add", dict(x=V("a"), y=V("b"))),
    ("ios18", {"a": X((2, 3), "int32")}, "mul", dict(x=V("a"), y=5)),
    ("ios18", {"a": X((2, 3)), "b": X((3,))}, "greater", dict(x=V("a"), y=V("b"))),
    ("ios18", {"a": X((2, 3)), "b": X((4,))}, "sub", dict(x=V("a"), y=V("b"))),
    ("ios18", {"c": X((3, 4), "bool"), "a": X((3, 4)), "b": X((1, 4))}, "select", dict(cond=V("c"), a=V("a"), b=V("b"))),
    # softmax, reductions
    ("ios18", {"x": X((2, 3, 4))}, "softmax", dict(x=V("x"), axis=-2)),
    ("ios18", {"x": X((2, 3, 4, 5))}, "reduce_sum", dict(x=V("x"), axes=[1, -1], keep_dims=True)),
    ("ios18", {"x": X((2, 3, 4))}, "reduce_mean", dict(x=V("x"))),
    ("ios18", {"x": X((2, 3, 4))}, "reduce_max", dict(x=V("x"), axes=[0])),
    ("ios18", {"x": X((2, 3, 4), "fp32")}, "reduce_argmax", dict(x=V("x"), axis=1, keep_dims=True)),
    ("ios18", {"x": X((1, 8, 1, 16))}, "layer_norm",
     dict(x=V("x"), axes=[-1], gamma=np.ones(16, dtype=np.float16), beta=np.zeros(16, dtype=np.float16), epsilon=f16(1e-5))),
    ("ios18", {"x": X((1, 8))}, "rsqrt", dict(x=V("x"), epsilon=f16(1e-6))),
    ("ios18", {"x": X((1, 8))}, "gelu", dict(x=V("x"), mode="TANH_APPROXIMATION")),
    # shapes
    ("ios18", {"x": X((1, 2, 3, 4))}, "transpose", dict(x=V("x"), perm=[0, 2, -3, -1])),
    ("ios18", {"x": X((2, 3, 4))}, "reshape", dict(x=V("x"), shape=[0, -1])),
    ("ios18", {"x": X((2, 3, 4))}, "reshape", dict(x=V("x"), shape=[4, 0, 0, 0])),
    ("ios15", {"x": X((2, 3, 4))}, "reshape", dict(x=V("x"), shape=[0, 0, -1])),
    ("ios18", {"x": X((2, 3, 4))}, "reshape", dict(x=V("x"), shape=[4, -1])),
    ("ios18", {"x": X((2, 3))}, "reshape", dict(x=V("x"), shape=[4, 2])),
    ("ios18", {"x": X((3, 4))}, "expand_dims", dict(x=V("x"), axes=[-1, 0])),
    ("ios18", {"x": X((1, 4, 1, 5))}, "squeeze", dict(x=V("x"))),
    ("ios18", {"x": X((1, 4, 1, 5))}, "squeeze", dict(x=V("x"), axes=[-2])),
    ("ios18", {"x": X((10,))}, "slice_by_index", dict(x=V("x"), begin=[8], end=[2], stride=[-2])),
    ("ios18", {"x": X((4, 5, 6))}, "slice_by_index",
     dict(x=V("x"), begin=[1, 0, 2], end=[3, 5, 100], begin_mask=[False, True, False], end_mask=[True, False, False])),
    ("ios18", {"x": X((4, 5))}, "slice_by_index",
     dict(x=V("x"), begin=[1, 0], end=[2, 5], squeeze_mask=[True, False])),
    ("ios18", {"x": X((4, 5))}, "slice_by_index", dict(x=V("x"), begin=[-3, 7], end=[100, 9])),
    ("ios18", {"x": X((4, 6))}, "slice_by_size", dict(x=V("x"), begin=[1, 2], size=[-1, 3])),
    ("ios18", {"a": X((1, 4, 1, 8)), "b": X((1, 4, 1, 24))}, "concat", dict(values=(V("a"), V("b"), V("a")), axis=-1)),
    ("ios18", {"a": X((1, 4)), "b": X((1, 4, 1))}, "concat", dict(values=(V("a"), V("b")), axis=0)),
    ("ios18", {"x": X((1, 4, 32, 16))}, "split", dict(x=V("x"), num_splits=4, axis=2)),
    ("ios18", {"x": X((1, 4, 32, 16))}, "split", dict(x=V("x"), split_sizes=[30, 2], axis=-2)),
    ("ios18", {"x": X((1, 10))}, "split", dict(x=V("x"), num_splits=3, axis=1)),
    ("ios18", {"x": X((2, 3))}, "tile", dict(x=V("x"), reps=[2, 3])),
    ("ios18", {"x": X((1, 3, 4))}, "pad", dict(x=V("x"), pad=[1, 2])),
    ("ios18", {"x": X((1, 3, 4))}, "pad", dict(x=V("x"), pad=[0, 0, 1, 1, 2, 3], mode="constant", constant_val=f16(0))),
    ("ios18", {"x": X((4, 4))}, "band_part", dict(x=V("x"), lower=1, upper=0)),
    ("ios18", {"x": X((1,))}, "fill", dict(shape=[2, 1, 5], value=f16(1))),
    ("ios18", {"x": X((2, 3))}, "cast", dict(x=V("x"), dtype="fp32")),
    ("ios18", {"x": X((2, 3))}, "cast", dict(x=V("x"), dtype="int32")),
    # gathers and scatters
    ("ios18", {"x": X((10, 5, 7)), "i": X((2, 3), "int32")}, "gather", dict(x=V("x"), indices=V("i"), axis=1)),
    ("ios18", {"x": X((4, 10, 7)), "i": X((4, 3), "int32")}, "gather",
     dict(x=V("x"), indices=V("i"), axis=1, batch_dims=1)),
    ("ios18", {"x": X((32, 8)), "i": X((1, 64), "int16")}, "gather", dict(x=V("x"), indices=V("i"), axis=0)),
    ("ios18", {"x": X((4, 10)), "i": X((4, 2), "int32")}, "gather_along_axis", dict(x=V("x"), indices=V("i"), axis=-1)),
    ("ios18", {"d": X((4, 5)), "i": X((2,), "int32"), "u": X((2, 5))}, "scatter",
     dict(data=V("d"), indices=V("i"), updates=V("u"), axis=0, mode="update")),
    ("ios18", {"x": X((1, 4, 8)), "u": X((1, 4, 1))}, "slice_update",
     dict(x=V("x"), update=V("u"), begin=[0, 0, 3], end=[1, 4, 4])),
    # attention
    ("ios18", {"q": X((1, 2, 8, 4)), "k": X((1, 2, 6, 4)), "v": X((1, 2, 6, 5))}, "scaled_dot_product_attention",
     dict(query=V("q"), key=V("k"), value=V("v"))),
]


def main():
    os.makedirs(OUT, exist_ok=True)
    lines = [run(*c) for c in CASES]
    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write("# opset\\tinputs\\top\\texpected (coremltools %s type inference); tools/mil_infer_fixtures.py\n" % ct.__version__)
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
