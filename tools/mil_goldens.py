#!/usr/bin/env python3
"""Op-level goldens for the MIL interpreter, computed with numpy.

Writes tests/fixtures/mil/ops/<case>/model.mil (a one-op program, sometimes
with weights/weight.bin), the inputs as .npy and the expected outputs:
  <out>.f32.npy  numpy's float64 result rounded once to fp32 (fp32 mode)
  <out>.f16.npy  the same result rounded once to fp16 (fp16 mode: one
                 rounding per op, see docs/mil-interpreter.md)
  <out>.npy      integer and bool outputs (exact in both modes)
and tests/fixtures/mil/ops/cases.json listing every case with its tolerances.
Also writes tests/fixtures/mil/attention/ (inputs and numpy attention for the
corpus program joshuaswarren__mil-hwx-compiler__tests__fixtures__attention.mil)
and tests/fixtures/mil/programs/rmsnorm_{naive,scaled}/ (two RMSNorm programs
in the ANE layout with numpy's float64 RMSNorm).

Usage: python3 tools/mil_goldens.py   (from the repo root)
The numpy code below is written from the op definitions (coremltools op
docs, docs/ane-rules.md), independently of the C interpreter.
"""
import json
import math
import os
import shutil
import struct

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "mil")
rng = np.random.default_rng(20261202)

NP_OF = {"fp16": np.float16, "fp32": np.float32, "int32": np.int32, "bool": np.bool_,
         "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
         "uint32": np.uint32}

# fp16 specials used across cases
F16_MAX = 65504.0
F16_SUB = 2.0 ** -24          # smallest subnormal
F16_MIN_NORMAL = 2.0 ** -14
EDGE = [0.0, -0.0, 1.0, -1.5, F16_MAX, -F16_MAX, F16_SUB, -3 * F16_SUB, F16_MIN_NORMAL,
        np.inf, -np.inf, np.nan, 1000.0, 0.33325, 60000.0, 2e-5]


# ---- MIL text -------------------------------------------------------------

def fmt_float(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    h = v.hex()  # C99 %a spelling, trailing zeros dropped: 0x1.8p+1
    mant, exp = h.split("p")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return mant + "p" + exp


def fmt_elem(v, dt):
    if dt == "string":
        return '"%s"' % v
    if dt == "bool":
        return "true" if v else "false"
    if dt in ("fp16", "fp32"):
        return fmt_float(v)
    return str(int(v))


def ttype(dt, shape):
    if len(shape) == 0:
        return dt
    return "tensor<%s, [%s]>" % (dt, ", ".join(str(int(d)) for d in shape))


def literal(dt, arr):
    arr = np.asarray(arr)
    if arr.ndim == 0:
        return "%s(%s)" % (dt, fmt_elem(arr.item(), dt))
    flat = ", ".join(fmt_elem(v, dt) for v in arr.reshape(-1).tolist())
    return "%s([%s])" % (ttype(dt, arr.shape), flat)


def mil_dtype_of(arr):
    return {np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32",
            np.dtype(np.int32): "int32", np.dtype(np.bool_): "bool",
            np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8",
            np.dtype(np.int16): "int16", np.dtype(np.uint16): "uint16",
            np.dtype(np.uint32): "uint32"}[arr.dtype]


class In:
    """A function input: the array as the program receives it."""
    def __init__(self, arr):
        self.arr = np.asarray(arr)


class Const:
    """A const op feeding the argument."""
    def __init__(self, arr, dt=None):
        self.arr = np.asarray(arr)
        self.dt = dt or mil_dtype_of(self.arr)


class Tup:
    """A tuple argument (concat values): list of In/Const."""
    def __init__(self, items):
        self.items = items


def program(inputs, body, outputs, opset="ios18"):
    params = ", ".join("%s %s" % (t, n) for n, t in inputs)
    lines = ["program(1.3)", '[buildInfo = dict<string, string>({})]', "{",
             "    func main<%s>(%s) {" % (opset, params)]
    lines += ["        " + b for b in body]
    lines += ["    } -> (%s);" % ", ".join(outputs), "}", ""]
    return "\n".join(lines)


def const_stmt(name, dt, arr):
    arr = np.asarray(arr)
    return '%s %s = const()[name = string("%s"), val = %s];' % (
        ttype(dt, arr.shape), name, name, literal(dt, arr))


# ---- cases ----------------------------------------------------------------

CASES = []
TOL16 = {"abs": F16_SUB, "rel": 2.0 ** -10}   # one fp16 ulp (double rounding of fp32 math)
TOL32 = {"abs": 1e-6, "rel": 1e-5}


def f16(a):
    return np.asarray(a, dtype=np.float16)


def randn16(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def add_case(name, op, args, ref, out_dtypes=None, tol16=None, tol32=None, opset="ios18",
             n_outputs=1, attrs_form=False):
    """One op whose arguments are `args` (name -> In/Const/Tup/scalar const);
    ref(**float64 numpy values) returns the output array(s)."""
    inputs, body, feed, vals = [], [], {}, {}
    attr_items = []
    for an, a in args.items():
        if isinstance(a, In):
            dt = mil_dtype_of(a.arr)
            inputs.append((an, ttype(dt, a.arr.shape)))
            feed[an] = a.arr
            vals[an] = a.arr
        elif isinstance(a, Const):
            if attrs_form:
                attr_items.append("%s = %s" % (an, literal(a.dt, a.arr)))
            else:
                body.append(const_stmt("c_" + an, a.dt, a.arr))
            vals[an] = a.arr
        elif isinstance(a, Tup):
            names = []
            for k, it in enumerate(a.items):
                nm = "%s_%d" % (an, k)
                if isinstance(it, In):
                    inputs.append((nm, ttype(mil_dtype_of(it.arr), it.arr.shape)))
                    feed[nm] = it.arr
                else:
                    body.append(const_stmt(nm, it.dt, it.arr))
                names.append(nm)
            vals[an] = [it.arr for it in a.items]
        else:
            raise ValueError(an)
    with np.errstate(all="ignore"):
        outs = ref(**{k: widen(v) for k, v in vals.items()})
    if not isinstance(outs, (list, tuple)):
        outs = [outs]
    float_dt = "fp16"
    for a in args.values():
        if isinstance(a, In) and a.arr.dtype == np.float32:
            float_dt = "fp32"
    outs_typed = []
    for k, o in enumerate(outs):
        o = np.asarray(o)
        dt = (out_dtypes[k] if out_dtypes else
              ("bool" if o.dtype == np.bool_ else
               "int32" if np.issubdtype(o.dtype, np.integer) else float_dt))
        outs_typed.append((o, dt))
    out_names = ["z"] if len(outs) == 1 else ["z%d" % k for k in range(len(outs))]
    decl = ", ".join("%s %s" % (ttype(dt, o.shape), n) for (o, dt), n in zip(outs_typed, out_names))
    argtxt = []
    for an, a in args.items():
        if isinstance(a, In):
            argtxt.append("%s = %s" % (an, an))
        elif isinstance(a, Const):
            if not attrs_form:
                argtxt.append("%s = c_%s" % (an, an))
        else:
            argtxt.append("%s = (%s)" % (an, ", ".join("%s_%d" % (an, k)
                                                      for k in range(len(a.items)))))
    attrs = ['name = string("op")'] + attr_items
    body.append("%s = %s(%s)[%s];" % (decl, op, ", ".join(argtxt), ", ".join(attrs)))
    text = program(inputs, body, out_names, opset)
    CASES.append(dict(name=name, mil=text, feed=feed,
                      outs=list(zip(out_names, outs_typed)),
                      tol16=tol16 or TOL16, tol32=tol32 or TOL32, files={}))


def add_raw_case(name, mil, feed, outs, tol16=None, tol32=None, files=None):
    """A hand-written program; outs: list of (name, array, dtype)."""
    CASES.append(dict(name=name, mil=mil, feed=feed,
                      outs=[(n, (a if isinstance(a, tuple) else np.asarray(a), dt))
                            for n, a, dt in outs],
                      tol16=tol16 or TOL16, tol32=tol32 or TOL32, files=files or {}))


def widen(v):
    if isinstance(v, list):
        return [widen(x) for x in v]
    v = np.asarray(v)
    if v.dtype in (np.float16, np.float32):
        return v.astype(np.float64)
    if v.dtype == np.bool_ or v.dtype.kind == "U":
        return v
    return v.astype(np.int64)


def scal(v, dt):
    return Const(np.array(v, dtype=NP_OF[dt]), dt)


# elementwise binary ---------------------------------------------------------

def binary_cases():
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "real_div": np.divide,
           "maximum": np.maximum, "minimum": np.minimum}
    for op, fn in ops.items():
        add_case(op + "_bcast", op, {"x": In(randn16(2, 1, 5)), "y": In(randn16(3, 1))},
                 lambda x, y, fn=fn: fn(x, y))
    # fp16 edge values against each other (overflow to inf, NaN, subnormals)
    ex = f16(EDGE)
    ey = f16([1.0, 2.0, -F16_SUB, 3.0, F16_MAX, -100.0, F16_SUB, 0.5, -F16_MIN_NORMAL,
              -np.inf, np.nan, 1.0, 1000.0, 3.0, 60000.0, 1e-3])
    for op in ("add", "sub", "mul", "real_div"):
        add_case(op + "_edges", op, {"x": In(ex), "y": In(ey)}, lambda x, y, fn=ops[op]: fn(x, y))
    add_case("real_div_by_zero", "real_div", {"x": In(f16([1, -1, 0, np.inf])),
                                              "y": In(f16([0, 0, 0, 0]))},
             lambda x, y: x / y)
    add_case("mul_underflow", "mul", {"x": In(f16([1e-4, -1e-4, 3e-3, 1e-2])),
                                      "y": In(f16([1e-4, 1e-4, 2e-5, 1e-3]))},
             lambda x, y: x * y)
    add_case("add_scalar_const", "add", {"x": In(randn16(3, 4)), "y": scal(0.5, "fp16")},
             lambda x, y: x + y)
    add_case("mul_rank0_bcast_left", "mul", {"x": scal(-2.0, "fp16"), "y": In(randn16(2, 3, 1, 5))},
             lambda x, y: x * y)
    add_case("pow_cases", "pow", {"x": In(f16([2, -2, 0, 4, -8, 0.5, 10, -1.5])),
                                  "y": In(f16([3, 2, -1, 0.5, 1.0 / 3, -2, 5, 0.5]))},
             lambda x, y: np.power(x, y))
    add_case("pow_scalar_exp_neg_half", "pow", {"x": In(f16([1, 4, 0.25, 1e-4, 65504])),
                                                "y": scal(-0.5, "fp16")},
             lambda x, y: np.power(x, y))
    a = rng.integers(-50, 50, size=(2, 3)).astype(np.int32)
    b = rng.integers(1, 9, size=(3,)).astype(np.int32)
    add_case("add_int32", "add", {"x": In(a), "y": In(b)}, lambda x, y: x + y)
    add_case("mul_int32", "mul", {"x": In(a), "y": In(b)}, lambda x, y: x * y)
    add_case("floor_div_int32", "floor_div", {"x": In(a), "y": In(b)}, lambda x, y: x // y)
    add_case("mod_int32", "mod", {"x": In(a), "y": In(-b)}, lambda x, y: np.mod(x, y))
    x32 = (rng.standard_normal((4, 3)) * 1e5).astype(np.float32)
    add_case("add_fp32_program", "add", {"x": In(x32), "y": In(np.float32([1e-3, 7e4, -3e5]))},
             lambda x, y: x + y)
    # comparisons give bool
    cx = f16([1, 2, np.nan, -0.0, np.inf, 3])
    cy = f16([1, 1, np.nan, 0.0, np.inf, 4])
    for op, fn in (("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
                   ("less_equal", np.less_equal), ("greater", np.greater),
                   ("greater_equal", np.greater_equal)):
        add_case(op, op, {"x": In(cx), "y": In(cy)}, lambda x, y, fn=fn: fn(x, y))
    add_case("greater_bcast", "greater", {"x": In(randn16(3, 1, 4)), "y": In(randn16(2, 1))},
             lambda x, y: x > y)
    add_case("logical_and", "logical_and", {"x": In(np.array([1, 1, 0, 0], bool)),
                                            "y": In(np.array([1, 0, 1, 0], bool))},
             lambda x, y: np.logical_and(x, y))


# elementwise unary ----------------------------------------------------------

def erf(v):
    return np.vectorize(math.erf)(v)


def unary_cases():
    wide = f16(list(np.linspace(-12, 12, 25)) + [np.inf, -np.inf, np.nan, -0.0, F16_SUB, 1e-3])
    refs = {
        "exp": np.exp, "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
        "silu": lambda v: v / (1 + np.exp(-v)), "relu": lambda v: np.where(np.isnan(v), v, np.maximum(v, 0)),
        "abs": np.abs, "square": np.square, "erf": erf, "atan": np.arctan,
        "softsign": lambda v: v / (1 + np.abs(v)),
    }
    for op, fn in refs.items():
        add_case(op, op, {"x": In(wide)}, lambda x, fn=fn: fn(x))
    pos = f16([0, F16_SUB, 1e-6, 2e-5, 0.25, 1, 2, 3, 1000, F16_MAX, np.inf, -1, np.nan])
    add_case("sqrt", "sqrt", {"x": In(pos)}, lambda x: np.sqrt(x))
    add_case("rsqrt_eps", "rsqrt", {"x": In(pos), "epsilon": scal(1e-3, "fp16")},
             lambda x, epsilon: 1 / np.sqrt(x + epsilon))
    add_case("rsqrt_default_eps", "rsqrt", {"x": In(f16([1e-4, 0.25, 4, 100]))},
             lambda x: 1 / np.sqrt(x + 1e-12))
    add_case("exp_2d", "exp", {"x": In(randn16(3, 7, scale=4))}, lambda x: np.exp(x))
    g = f16(list(np.linspace(-10, 10, 41)) + [np.inf, -np.inf, 300.0, -300.0])
    add_case("gelu_exact", "gelu", {"x": In(g), "mode": Const(np.array("EXACT"), "string")},
             lambda x, mode: 0.5 * x * (1 + erf(x / math.sqrt(2))))
    add_case("gelu_default_mode", "gelu", {"x": In(randn16(2, 9, scale=3))},
             lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))))

    def gelu_tanh(x, mode):
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    add_case("gelu_tanh", "gelu", {"x": In(g[:-2]), "mode": Const(np.array("TANH_APPROXIMATION"),
                                                                    "string")}, gelu_tanh)
    add_case("clip", "clip", {"x": In(wide), "alpha": scal(-2.5, "fp16"), "beta": scal(6, "fp16")},
             lambda x, alpha, beta: np.where(np.isnan(x), x, np.minimum(np.maximum(x, alpha), beta)))
    add_case("exp_fp32_program", "exp", {"x": In(np.float32([-100, -10, 0, 10, 20, 88]))},
             lambda x: np.exp(x))


def unary_rest_cases():
    """The unary ops the first set left without a golden. Fixed inputs (no
    rng draw), so adding them changes no other case."""
    wide = f16(list(np.linspace(-12, 12, 25)) + [np.inf, -np.inf, np.nan, -0.0, F16_SUB, 1e-3,
                                                 -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5])
    refs = {
        "exp2": np.exp2, "sin": np.sin, "cos": np.cos, "sign": np.sign, "ceil": np.ceil,
        "floor": np.floor, "round": np.round,   # numpy rounds halves to even
        "relu6": lambda v: np.where(np.isnan(v), v, np.minimum(np.maximum(v, 0), 6)),
        "softplus": lambda v: np.log1p(np.exp(v)),
    }
    for op, fn in refs.items():
        add_case(op, op, {"x": In(wide)}, lambda x, fn=fn: fn(x))
    pos = f16([0, F16_SUB, 1e-6, 2e-5, 0.25, 1, 2, 3, 1000, F16_MAX, np.inf, -1, np.nan])
    add_case("log_eps", "log", {"x": In(pos), "epsilon": scal(1e-3, "fp16")},
             lambda x, epsilon: np.log(x + epsilon))
    add_case("log_default_eps", "log", {"x": In(f16([1e-4, 0.25, 1, 4, 100, 60000]))},
             lambda x: np.log(x + 1e-45))
    add_case("inverse_eps", "inverse", {"x": In(f16([-4, -0.5, 0.25, 1, 3, 1000])),
                                        "epsilon": scal(0.5, "fp16")},
             lambda x, epsilon: 1 / (x + epsilon))
    add_case("inverse_default_eps", "inverse", {"x": In(f16([-4, -0.5, 0.25, 1, 3, 1000]))},
             lambda x: 1 / (x + 1e-4))
    add_case("leaky_relu", "leaky_relu", {"x": In(wide), "alpha": scal(0.2, "fp16")},
             lambda x, alpha: np.where(x >= 0, x, alpha * x))


# reductions, softmax, layer_norm ---------------------------------------------

def reduce_cases():
    x = randn16(2, 3, 5, 4)
    reds = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max,
            "reduce_min": np.min, "reduce_prod": np.prod,
            "reduce_sum_square": lambda v, axis, keepdims: np.sum(v * v, axis=axis, keepdims=keepdims),
            "reduce_l2_norm": lambda v, axis, keepdims: np.sqrt(np.sum(v * v, axis=axis, keepdims=keepdims)),
            "reduce_log_sum_exp": lambda v, axis, keepdims: np.log(np.sum(np.exp(v), axis=axis, keepdims=keepdims))}
    add_case("reduce_log_sum", "reduce_log_sum",
             {"x": In(np.abs(x) + f16(0.5)), "axes": Const(np.int32([2])), "keep_dims": scal(False, "bool")},
             lambda x, axes, keep_dims: np.log(np.sum(x, axis=2)),
             tol16={"abs": 2e-3, "rel": 2.0 ** -10}, tol32={"abs": 1e-5, "rel": 1e-5})
    tol_sum16 = {"abs": 2e-3, "rel": 2.0 ** -10}
    tol_sum32 = {"abs": 1e-5, "rel": 1e-5}
    for op, fn in reds.items():
        add_case(op + "_axes_neg_keep", op,
                 {"x": In(x), "axes": Const(np.int32([-1, 1])), "keep_dims": scal(True, "bool")},
                 lambda x, axes, keep_dims, fn=fn: fn(x, axis=(3, 1), keepdims=True),
                 tol16=tol_sum16, tol32=tol_sum32)
    add_case("reduce_sum_axis1_drop", "reduce_sum",
             {"x": In(x), "axes": Const(np.int32([1])), "keep_dims": scal(False, "bool")},
             lambda x, axes, keep_dims: np.sum(x, axis=1), tol16=tol_sum16, tol32=tol_sum32)
    add_case("reduce_mean_all_axes", "reduce_mean", {"x": In(x)},
             lambda x: np.mean(x), tol16=tol_sum16, tol32=tol_sum32)
    add_case("reduce_max_nonadjacent", "reduce_max",
             {"x": In(x), "axes": Const(np.int32([0, 2])), "keep_dims": scal(False, "bool")},
             lambda x, axes, keep_dims: np.max(x, axis=(0, 2)))
    big = f16([[40000, 40000, 30000], [-F16_MAX, -F16_MAX, 1]])
    add_case("reduce_sum_overflow", "reduce_sum",
             {"x": In(big), "axes": Const(np.int32([-1])), "keep_dims": scal(False, "bool")},
             lambda x, axes, keep_dims: np.sum(x, axis=-1))
    add_case("reduce_mean_fp32_accumulation", "reduce_mean",
             {"x": In(big), "axes": Const(np.int32([-1])), "keep_dims": scal(True, "bool")},
             lambda x, axes, keep_dims: np.mean(x, axis=-1, keepdims=True))
    add_case("reduce_max_nan_inf", "reduce_max",
             {"x": In(f16([[1, np.nan, 3], [-np.inf, -np.inf, -np.inf], [np.inf, 2, 1]])),
              "axes": Const(np.int32([1])), "keep_dims": scal(False, "bool")},
             lambda x, axes, keep_dims: np.max(x, axis=1))
    add_case("reduce_argmax", "reduce_argmax",
             {"x": In(f16([[1, 5, 5, 2], [-1, -3, -0.5, -7], [0, 0, 0, 0]])),
              "axis": scal(-1, "int32"), "keep_dims": scal(False, "bool")},
             lambda x, axis, keep_dims: np.argmax(x, axis=-1).astype(np.int32))
    # softmax
    s = randn16(2, 3, 7, scale=3)
    for ax in (-1, 1, 0):
        add_case("softmax_axis%d" % ax, "softmax", {"x": In(s), "axis": scal(ax, "int32")},
                 lambda x, axis: softmax(x, int(axis)))
    add_case("softmax_default_axis", "softmax", {"x": In(randn16(4, 33, scale=5))},
             lambda x: softmax(x, -1))
    edge = f16([[60000, 50000, -60000, 0], [-np.inf, 0, 1, -np.inf], [-1e4, -1e4, -1e4, 2],
                [F16_MAX, F16_MAX, 0, 0]])
    add_case("softmax_edges", "softmax", {"x": In(edge), "axis": scal(-1, "int32")},
             lambda x, axis: softmax(x, -1))
    add_case("softmax_key_axis_bc1s", "softmax",
             {"x": In(randn16(1, 12, 1, 10, scale=4)), "axis": scal(1, "int32")},
             lambda x, axis: softmax(x, 1))
    # layer_norm
    ln_x = randn16(2, 5, 6, scale=2) + f16(3)
    gam = randn16(6)
    bet = randn16(6)
    tol_ln16 = {"abs": 4e-3, "rel": 2.0 ** -9}
    tol_ln32 = {"abs": 2e-5, "rel": 2e-5}
    add_case("layer_norm_last_axis", "layer_norm",
             {"x": In(ln_x), "axes": Const(np.int32([-1])), "gamma": Const(gam), "beta": Const(bet),
              "epsilon": scal(1e-5, "fp16")},
             lambda x, axes, gamma, beta, epsilon: layer_norm(x, (2,), gamma, beta, epsilon),
             tol16=tol_ln16, tol32=tol_ln32)
    ch = randn16(1, 8, 1, 5, scale=100)
    add_case("layer_norm_channels_bc1s_big", "layer_norm",
             {"x": In(ch), "axes": Const(np.int32([1])), "epsilon": scal(1e-5, "fp16")},
             lambda x, axes, epsilon: layer_norm(x, (1,), None, None, epsilon),
             tol16=tol_ln16, tol32=tol_ln32)
    g2 = randn16(5, 6)
    add_case("layer_norm_two_axes", "layer_norm",
             {"x": In(ln_x), "axes": Const(np.int32([1, 2])), "gamma": Const(g2),
              "epsilon": scal(1e-3, "fp16")},
             lambda x, axes, gamma, epsilon: layer_norm(x, (1, 2), gamma, None, epsilon),
             tol16=tol_ln16, tol32=tol_ln32)


def softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def layer_norm(x, axes, gamma, beta, eps):
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    nshape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    if gamma is not None:
        y = y * np.reshape(gamma, nshape)
    if beta is not None:
        y = y + np.reshape(beta, nshape)
    return y


# matmul, linear, conv ---------------------------------------------------------

def linalg_cases():
    tol16 = {"abs": 2e-3, "rel": 2.0 ** -10}
    tol32 = {"abs": 1e-5, "rel": 1e-5}
    for tx in (False, True):
        for ty in (False, True):
            a = randn16(3, 5) if not tx else randn16(5, 3)
            b = randn16(5, 4) if not ty else randn16(4, 5)
            add_case("matmul_tx%d_ty%d" % (tx, ty), "matmul",
                     {"x": In(a), "y": In(b), "transpose_x": scal(tx, "bool"),
                      "transpose_y": scal(ty, "bool")},
                     lambda x, y, transpose_x, transpose_y: np.matmul(
                         x.T if transpose_x else x, y.T if transpose_y else y),
                     tol16=tol16, tol32=tol32)
    add_case("matmul_batch_bcast", "matmul", {"x": In(randn16(2, 1, 3, 6)), "y": In(randn16(4, 6, 5))},
             lambda x, y: np.matmul(x, y), tol16=tol16, tol32=tol32)
    add_case("matmul_batch_ty", "matmul",
             {"x": In(randn16(1, 4, 7, 8)), "y": In(randn16(1, 4, 9, 8)),
              "transpose_x": scal(False, "bool"), "transpose_y": scal(True, "bool")},
             lambda x, y, transpose_x, transpose_y: np.matmul(x, np.swapaxes(y, -1, -2)),
             tol16=tol16, tol32=tol32)
    add_case("matmul_vec_left", "matmul", {"x": In(randn16(6)), "y": In(randn16(2, 6, 3))},
             lambda x, y: np.matmul(x, y), tol16=tol16, tol32=tol32)
    add_case("matmul_vec_right", "matmul", {"x": In(randn16(3, 6)), "y": In(randn16(6))},
             lambda x, y: np.matmul(x, y), tol16=tol16, tol32=tol32)
    add_case("matmul_const_weight", "matmul", {"x": In(randn16(2, 7)), "y": Const(randn16(7, 3))},
             lambda x, y: x @ y, tol16=tol16, tol32=tol32)
    def sdpa(query, key, value, attn_mask=None):
        s = np.matmul(query, np.swapaxes(key, -1, -2)) / math.sqrt(query.shape[-1])
        if attn_mask is not None:
            s = s + (np.where(attn_mask, 0.0, -np.inf) if attn_mask.dtype == np.bool_ else attn_mask)
        return np.matmul(softmax(s, -1), value)
    add_case("sdpa_float_mask", "scaled_dot_product_attention",
             {"query": In(randn16(1, 2, 3, 4)), "key": In(randn16(1, 2, 5, 4)), "value": In(randn16(1, 2, 5, 6)),
              "attn_mask": In(f16(np.triu(np.full((3, 5), -1e4), 3)))},
             sdpa, tol16=tol16, tol32=tol32)
    add_case("sdpa_bool_mask_bcast", "scaled_dot_product_attention",
             {"query": In(randn16(2, 3, 4)), "key": In(randn16(2, 5, 4)), "value": In(randn16(2, 5, 2)),
              "attn_mask": In(np.array([[True, True, False, True, False]]))},
             sdpa, tol16=tol16, tol32=tol32)
    big = f16(np.full((2, 4), 200.0))
    add_case("matmul_overflow_fp32_acc", "matmul", {"x": In(big), "y": In(f16(np.full((4, 3), 100.0)))},
             lambda x, y: x @ y)
    add_case("linear_bias", "linear",
             {"x": In(randn16(2, 3, 6)), "weight": Const(randn16(5, 6)), "bias": Const(randn16(5))},
             lambda x, weight, bias: x @ weight.T + bias, tol16=tol16, tol32=tol32)
    add_case("linear_no_bias_1d", "linear", {"x": In(randn16(6)), "weight": Const(randn16(4, 6))},
             lambda x, weight: x @ weight.T, tol16=tol16, tol32=tol32)

    def conv(x, weight, bias=None, strides=None, pad_type="valid", pad=None, dilations=None, groups=1):
        ns = x.ndim - 2
        strides = [1] * ns if strides is None else list(strides)
        dil = [1] * ns if dilations is None else list(dilations)
        k = weight.shape[2:]
        if pad_type in ("same", "same_lower"):
            pads = []
            for i in range(ns):
                out = -(-x.shape[2 + i] // strides[i])
                tot = max((out - 1) * strides[i] + (k[i] - 1) * dil[i] + 1 - x.shape[2 + i], 0)
                lo = tot // 2 if pad_type == "same" else tot - tot // 2
                pads.append((lo, tot - lo))
        elif pad_type == "custom":
            pads = [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(ns)]
        else:
            pads = [(0, 0)] * ns
        xp = np.pad(x, [(0, 0), (0, 0)] + pads)
        n, cin = x.shape[:2]
        cout = weight.shape[0]
        g = int(groups)
        cig, cog = cin // g, cout // g
        osz = [(xp.shape[2 + i] - dil[i] * (k[i] - 1) - 1) // strides[i] + 1 for i in range(ns)]
        out = np.zeros((n, cout) + tuple(osz))
        for o in np.ndindex(*osz):
            sl = tuple(slice(o[i] * strides[i], o[i] * strides[i] + dil[i] * (k[i] - 1) + 1, dil[i])
                       for i in range(ns))
            for gi in range(g):
                patch = xp[(slice(None), slice(gi * cig, (gi + 1) * cig)) + sl]
                w = weight[gi * cog:(gi + 1) * cog]
                out[(slice(None), slice(gi * cog, (gi + 1) * cog)) + o] = np.tensordot(
                    patch, w, axes=(list(range(1, ns + 2)), list(range(1, ns + 2))))
        if bias is not None:
            out += bias.reshape((1, cout) + (1,) * ns)
        return out

    add_case("conv_1x1_bc1s", "conv",
             {"x": In(randn16(1, 6, 1, 7)), "weight": Const(randn16(5, 6, 1, 1)),
              "bias": Const(randn16(5))},
             lambda x, weight, bias: conv(x, weight, bias), tol16=tol16, tol32=tol32)
    add_case("conv_3x3_stride_pad_custom", "conv",
             {"x": In(randn16(2, 3, 7, 6)), "weight": Const(randn16(4, 3, 3, 2)),
              "strides": Const(np.int32([2, 1])), "pad_type": Const(np.array("custom"), "string"),
              "pad": Const(np.int32([1, 2, 0, 1])), "dilations": Const(np.int32([1, 2])),
              "groups": scal(1, "int32")},
             lambda x, weight, strides, pad_type, pad, dilations, groups: conv(
                 x, weight, None, strides, "custom", pad, dilations, groups),
             tol16=tol16, tol32=tol32)
    add_case("conv_groups_same", "conv",
             {"x": In(randn16(1, 4, 5, 5)), "weight": Const(randn16(6, 2, 3, 3)),
              "bias": Const(randn16(6)), "pad_type": Const(np.array("same"), "string"),
              "strides": Const(np.int32([2, 2])), "groups": scal(2, "int32")},
             lambda x, weight, bias, pad_type, strides, groups: conv(
                 x, weight, bias, strides, "same", None, None, 2),
             tol16=tol16, tol32=tol32)
    add_case("conv_depthwise_1d_same_lower", "conv",
             {"x": In(randn16(1, 3, 9)), "weight": Const(randn16(3, 1, 4)),
              "pad_type": Const(np.array("same_lower"), "string"), "groups": scal(3, "int32")},
             lambda x, weight, pad_type, groups: conv(x, weight, None, None, "same_lower", None, None, 3),
             tol16=tol16, tol32=tol32)


# layout ops --------------------------------------------------------------------

def layout_cases():
    x = randn16(2, 3, 4, 5)
    add_case("transpose_neg_perm", "transpose", {"x": In(x), "perm": Const(np.int32([0, 2, -3, -1]))},
             lambda x, perm: np.transpose(x, (0, 2, 1, 3)))
    add_case("transpose_full", "transpose", {"x": In(x), "perm": Const(np.int32([3, 1, 0, 2]))},
             lambda x, perm: np.transpose(x, (3, 1, 0, 2)))
    add_case("reshape_minus1", "reshape", {"x": In(x), "shape": Const(np.int32([6, -1, 2]))},
             lambda x, shape: x.reshape(6, -1, 2))
    add_case("reshape_zero_copies", "reshape", {"x": In(x), "shape": Const(np.int32([0, 0, -1, 1]))},
             lambda x, shape: x.reshape(2, 3, 20, 1))
    add_case("expand_dims_neg", "expand_dims", {"x": In(randn16(3, 4)), "axes": Const(np.int32([0, -1]))},
             lambda x, axes: x.reshape(1, 3, 4, 1))
    add_case("squeeze_all", "squeeze", {"x": In(randn16(1, 3, 1, 4, 1))},
             lambda x: np.squeeze(x))
    add_case("squeeze_axes", "squeeze", {"x": In(randn16(1, 3, 1, 4, 1)), "axes": Const(np.int32([-1, 0]))},
             lambda x, axes: x.reshape(3, 1, 4))
    y = randn16(4, 7, 6)
    add_case("slice_by_index_basic", "slice_by_index",
             {"x": In(y), "begin": Const(np.int32([1, -5, 0])), "end": Const(np.int32([3, 6, 6])),
              "stride": Const(np.int32([1, 2, 1]))},
             lambda x, begin, end, stride: x[1:3, -5:6:2, 0:6])
    add_case("slice_by_index_masks", "slice_by_index",
             {"x": In(y), "begin": Const(np.int32([2, 0, 1])), "end": Const(np.int32([0, 4, 0])),
              "stride": Const(np.int32([1, 1, 2])),
              "begin_mask": Const(np.array([False, True, False])),
              "end_mask": Const(np.array([True, False, True])),
              "squeeze_mask": Const(np.array([False, False, False]))},
             lambda x, begin, end, stride, begin_mask, end_mask, squeeze_mask: x[2:, :4, 1::2])
    add_case("slice_by_index_squeeze_negstride", "slice_by_index",
             {"x": In(y), "begin": Const(np.int32([1, 5, 0])), "end": Const(np.int32([2, 1, 0])),
              "stride": Const(np.int32([1, -2, 1])),
              "begin_mask": Const(np.array([False, False, True])),
              "end_mask": Const(np.array([False, False, True])),
              "squeeze_mask": Const(np.array([True, False, False]))},
             lambda x, begin, end, stride, begin_mask, end_mask, squeeze_mask: x[1, 5:1:-2, :])
    add_case("slice_by_size", "slice_by_size",
             {"x": In(y), "begin": Const(np.int32([1, 2, 0])), "size": Const(np.int32([2, -1, 3]))},
             lambda x, begin, size: x[1:3, 2:, 0:3])
    a, b, c = randn16(2, 3, 4), randn16(2, 1, 4), randn16(2, 2, 4)
    add_case("concat_axis1", "concat",
             {"values": Tup([In(a), In(b), Const(c)]), "axis": scal(-2, "int32"),
              "interleave": scal(False, "bool")},
             lambda values, axis, interleave: np.concatenate(values, axis=1))
    p, q = randn16(2, 3, 2), randn16(2, 3, 2)
    add_case("concat_interleave", "concat",
             {"values": Tup([In(p), In(q)]), "axis": scal(1, "int32"), "interleave": scal(True, "bool")},
             lambda values, axis, interleave: np.stack(values, axis=2).reshape(2, 6, 2))
    add_case("split_num", "split",
             {"x": In(randn16(2, 6, 3)), "num_splits": scal(3, "int32"), "axis": scal(1, "int32")},
             lambda x, num_splits, axis: np.split(x, 3, axis=1))
    add_case("split_sizes_neg_axis", "split",
             {"x": In(randn16(2, 3, 7)), "split_sizes": Const(np.int32([2, 4, 1])), "axis": scal(-1, "int32")},
             lambda x, split_sizes, axis: np.split(x, [2, 6], axis=-1))
    table = randn16(7, 5)
    idx = np.int32([[3, 0, -1], [6, 2, 2]])
    add_case("gather_axis0_negidx", "gather",
             {"x": In(table), "indices": In(idx), "axis": scal(0, "int32")},
             lambda x, indices, axis: x[np.where(indices < 0, indices + 7, indices)])
    add_case("gather_axis_neg1", "gather",
             {"x": In(randn16(2, 3, 5)), "indices": Const(np.int32([4, 0])), "axis": scal(-1, "int32")},
             lambda x, indices, axis: np.take(x, [4, 0], axis=-1))
    add_case("gather_batch_dims", "gather",
             {"x": In(randn16(2, 5, 3)), "indices": In(np.int32([[1, 4], [0, 0]])),
              "axis": scal(1, "int32"), "batch_dims": scal(1, "int32")},
             lambda x, indices, axis, batch_dims: np.stack([x[i][indices[i]] for i in range(2)]))
    gx = randn16(3, 4)
    gi = np.int32([[0, 3, -1, 1], [2, 2, 2, 0], [-4, 1, 3, 3]])
    add_case("gather_along_axis1", "gather_along_axis",
             {"x": In(gx), "indices": In(gi[:, :3]), "axis": scal(1, "int32")},
             lambda x, indices, axis: np.take_along_axis(x, np.where(indices < 0, indices + 4, indices), 1))
    add_case("gather_along_axis0", "gather_along_axis",
             {"x": In(gx), "indices": In(np.int32([[2, 0, 1, 1], [0, 0, 2, 1]])), "axis": scal(0, "int32")},
             lambda x, indices, axis: np.take_along_axis(x, indices, 0))
    cond = np.array([[True], [False], [True]])
    add_case("select_bcast", "select",
             {"cond": In(cond), "a": In(randn16(3, 4)), "b": scal(-np.inf, "fp16")},
             lambda cond, a, b: np.where(cond, a, b))
    add_case("select_kv_cache", "select",
             {"cond": Const(np.array([[False, False, True, False]])),
              "a": In(randn16(3, 4)), "b": In(randn16(3, 4))},
             lambda cond, a, b: np.where(cond, a, b))
    add_case("cast_fp16_to_int32", "cast",
             {"x": In(f16([1.5, -1.5, 2.7, -2.7, 0, 1000, -0.0])), "dtype": Const(np.array("int32"), "string")},
             lambda x, dtype: np.trunc(x).astype(np.int32))
    add_case("cast_int32_to_fp16", "cast",
             {"x": In(np.int32([1, 2049, 2051, 70000, -70000, 65519, 65520])),
              "dtype": Const(np.array("fp16"), "string")},
             lambda x, dtype: x.astype(np.float64), out_dtypes=["fp16"])
    add_case("cast_fp32_to_fp16", "cast",
             {"x": In(np.float32([1e-8, 3e-6, 1.0000001, 65519, 65520, 1e5, -1e9, np.nan])),
              "dtype": Const(np.array("fp16"), "string")},
             lambda x, dtype: x, out_dtypes=["fp16"])
    add_case("cast_fp16_to_fp32", "cast",
             {"x": In(f16([F16_SUB, F16_MAX, -np.inf, 0.1])), "dtype": Const(np.array("fp32"), "string")},
             lambda x, dtype: x, out_dtypes=["fp32"])
    add_case("cast_fp16_to_bool", "cast",
             {"x": In(f16([0, -0.0, 1e-7, -2, np.nan])), "dtype": Const(np.array("bool"), "string")},
             lambda x, dtype: x != 0)
    add_case("fill", "fill", {"shape": Const(np.int32([2, 3])), "value": scal(1.5, "fp16")},
             lambda shape, value: np.full((2, 3), 1.5), out_dtypes=["fp16"])
    bp = randn16(2, 4, 5)
    add_case("band_part_causal", "band_part",
             {"x": In(bp), "lower": scal(-1, "int32"), "upper": scal(0, "int32")},
             lambda x, lower, upper: x * np.tril(np.ones((4, 5))))
    add_case("band_part_window", "band_part",
             {"x": In(bp), "lower": scal(1, "int32"), "upper": scal(2, "int32")},
             lambda x, lower, upper: x * (np.tril(np.ones((4, 5)), 2) * np.triu(np.ones((4, 5)), -1)))
    px = randn16(2, 3, 4)
    add_case("pad_constant_last2", "pad",
             {"x": In(px), "pad": Const(np.int32([1, 0, 2, 3])), "mode": Const(np.array("constant"), "string"),
              "constant_val": scal(-7, "fp16")},
             lambda x, pad, mode, constant_val: np.pad(x, [(0, 0), (1, 0), (2, 3)], constant_values=-7))
    add_case("pad_reflect", "pad",
             {"x": In(px), "pad": Const(np.int32([2, 3])), "mode": Const(np.array("reflect"), "string")},
             lambda x, pad, mode: np.pad(x, [(0, 0), (0, 0), (2, 3)], mode="reflect"))
    add_case("pad_replicate", "pad",
             {"x": In(px), "pad": Const(np.int32([0, 0, 1, 2, 2, 1])), "mode": Const(np.array("replicate"), "string")},
             lambda x, pad, mode: np.pad(x, [(0, 0), (1, 2), (2, 1)], mode="edge"))
    add_case("tile", "tile", {"x": In(randn16(2, 1, 3)), "reps": Const(np.int32([1, 3, 2]))},
             lambda x, reps: np.tile(x, (1, 3, 2)))
    # scatter family
    data = randn16(5, 3)
    for mode in ("update", "add", "mul", "max"):
        def ref(data, indices, updates, axis, mode, m=mode):
            out = data.copy()
            for k, i in enumerate(indices):
                u = updates[k]
                out[i] = {"update": u, "add": out[i] + u, "mul": out[i] * u,
                          "max": np.maximum(out[i], u)}[m]
            return out
        add_case("scatter_" + mode, "scatter",
                 {"data": In(data), "indices": In(np.int32([4, 1])), "updates": In(randn16(2, 3)),
                  "axis": scal(0, "int32"), "mode": Const(np.array(mode), "string")}, ref)

    def sca(data, indices, updates, axis, mode):
        out = data.copy()
        for i in range(indices.shape[0]):
            for j in range(indices.shape[1]):
                out[i, indices[i, j]] += updates[i, j]
        return out
    add_case("scatter_along_axis_add", "scatter_along_axis",
             {"data": In(randn16(2, 4)), "indices": In(np.int32([[0, 3, 3], [1, 1, 2]])),
              "updates": In(randn16(2, 3)), "axis": scal(1, "int32"), "mode": Const(np.array("add"), "string")}, sca)

    def snd(data, indices, updates, mode):
        out = data.copy()
        for t in range(indices.shape[0]):
            out[tuple(indices[t])] += updates[t]
        return out
    add_case("scatter_nd_add", "scatter_nd",
             {"data": In(randn16(3, 4, 2)), "indices": In(np.int32([[0, 1], [2, 3], [0, 1]])),
              "updates": In(randn16(3, 2)), "mode": Const(np.array("add"), "string")}, snd)

    def su(x, update, begin, end):
        out = x.copy()
        out[:, 1:3, 2:5] = update
        return out
    add_case("slice_update", "slice_update",
             {"x": In(randn16(2, 4, 6)), "update": In(randn16(2, 2, 3)),
              "begin": Const(np.int32([0, 1, 2])), "end": Const(np.int32([2, 3, 5]))}, su)


# constexpr (weights compressed at compile time) ---------------------------------

def constexpr_cases():
    q = rng.integers(-128, 127, size=(4, 3)).astype(np.int8)
    scale = f16([0.5, 0.25, 0.125, 2.0])
    zp = np.int8([-1, 0, 3, 10])
    x = randn16(4, 3)

    def deq(x):
        return x + scale.astype(np.float64)[:, None] * (q.astype(np.float64) - zp[:, None])
    body = ['tensor<fp16, [4, 3]> w = constexpr_affine_dequantize()[axis = int32(0), name = string("w"), '
            'quantized_data = %s, scale = %s, zero_point = %s];' % (literal("int8", q), literal("fp16", scale),
                                                                    literal("int8", zp)),
            'tensor<fp16, [4, 3]> z = add(x = x, y = w)[name = string("op")];']
    add_raw_case("constexpr_affine_dequantize_ios16", program([("x", "tensor<fp16, [4, 3]>")], body, ["z"], "ios16"),
                 {"x": x}, [("z", deq(x.astype(np.float64)), "fp16")])
    # iOS16 LUT: 2-bit indices packed LSB first into uint8 bytes, shape [3, 5]
    lut = f16([-1.5, 0.25, 2.0, 7.0])
    ind = rng.integers(0, 4, size=15)
    packed = pack_bits(ind, 2)
    w16 = lut[ind].reshape(3, 5).astype(np.float64)
    x2 = randn16(3, 5)
    body = ['tensor<fp16, [3, 5]> w = constexpr_lut_to_dense()[indices = %s, lut = %s, name = string("w"), '
            'shape = %s];' % (literal("uint8", packed), literal("fp16", lut), literal("uint32", np.uint32([3, 5]))),
            'tensor<fp16, [3, 5]> z = mul(x = x, y = w)[name = string("op")];']
    add_raw_case("constexpr_lut_to_dense_ios16", program([("x", "tensor<fp16, [3, 5]>")], body, ["z"], "ios16"),
                 {"x": x2}, [("z", x2.astype(np.float64) * w16, "fp16")])
    # iOS18 LUT from weight.bin: uint4 indices [4, 6] (output shape), per-row-group
    # LUTs [2, 1, 16, 1] (2 groups of 2 rows), conv weight from the same blob file.
    ind18 = rng.integers(0, 16, size=(4, 6))
    lut18 = randn16(2, 1, 16, 1)
    dense = np.empty((4, 6))
    for i in range(4):
        for j in range(6):
            dense[i, j] = lut18[i // 2, 0, ind18[i, j], 0]
    wconv = randn16(3, 4, 1, 1)
    blobs = [("uint4", pack_bits(ind18.reshape(-1), 4).tobytes()), ("fp16", lut18.tobytes()),
             ("fp16", wconv.tobytes())]
    wbin, offs = weight_bin(blobs)
    xin = randn16(2, 6)
    bf = 'BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(%d))'
    body = ['tensor<fp16, [4, 6]> w = constexpr_lut_to_dense(indices = tensor<uint4, [4, 6]>(%s), '
            'lut = tensor<fp16, [2, 1, 16, 1]>(%s))[name = string("w")];' % (bf % offs[0], bf % offs[1]),
            'tensor<fp16, [2, 4]> z = linear(weight = w, x = x)[name = string("op")];',
            'tensor<fp16, [3, 4, 1, 1]> cw = const()[name = string("cw"), val = tensor<fp16, [3, 4, 1, 1]>(%s)];'
            % (bf % offs[2]),
            'tensor<int32, [4]> shp = const()[name = string("shp"), val = tensor<int32, [4]>([1, 4, 1, 2])];',
            'tensor<fp16, [1, 4, 1, 2]> z4 = reshape(shape = shp, x = z)[name = string("r")];',
            'tensor<fp16, [1, 3, 1, 2]> y = conv(weight = cw, x = z4)[name = string("c")];']
    mil = program([("x", "tensor<fp16, [2, 6]>")], body, ["z", "y"], "ios18")
    z = xin.astype(np.float64) @ dense.T
    z16 = z.astype(np.float16).astype(np.float64)      # the fp16 program rounds z before the conv
    y = np.einsum("oi,ij->oj", wconv[:, :, 0, 0].astype(np.float64), z.reshape(4, 2)).reshape(1, 3, 1, 2)
    y16 = np.einsum("oi,ij->oj", wconv[:, :, 0, 0].astype(np.float64), z16.reshape(4, 2)).reshape(1, 3, 1, 2)
    add_raw_case("constexpr_lut_to_dense_ios18_blob", mil, {"x": xin},
                 [("z", z, "fp16"), ("y", (y, y16), "fp16")],
                 tol16={"abs": 2e-3, "rel": 2.0 ** -10}, tol32={"abs": 1e-5, "rel": 1e-5},
                 files={"weights/weight.bin": wbin})


def quantize_cases():
    # W8A8-style activation round trip: quantize to int8, dequantize back
    x = f16(np.concatenate([rng.standard_normal(8) * 3, [10.0, -10.0]]).reshape(2, 5))
    sc = f16(0.05)
    body = ['fp16 s = const()[name = string("s"), val = %s];' % literal("fp16", sc),
            'int8 zp = const()[name = string("zp"), val = int8(3)];',
            'string dt = const()[name = string("dt"), val = string("int8")];',
            'tensor<int8, [2, 5]> q = quantize(input = x, output_dtype = dt, scale = s, zero_point = zp)'
            '[name = string("q")];',
            'tensor<fp16, [2, 5]> y = dequantize(input = q, scale = s, zero_point = zp)[name = string("dq")];']
    s64 = float(sc)
    q = np.clip(np.round(x.astype(np.float64) / s64) + 3, -128, 127)
    add_raw_case("quantize_dequantize_int8", program([("x", "tensor<fp16, [2, 5]>")], body, ["y"]),
                 {"x": x}, [("y", (q - 3) * s64, "fp16")])


def stateful_cases():
    # KV-cache style state: read, add the new value, write back, read again.
    s0 = randn16(1, 4)
    x = randn16(1, 4)
    body = ['tensor<fp16, [1, 4]> old = read_state(input = cache)[name = string("rd")];',
            'tensor<fp16, [1, 4]> upd = add(x = old, y = x)[name = string("op")];',
            'write_state(data = upd, input = cache)[name = string("wr_write_state")];',
            'tensor<fp16, [1, 4]> z = read_state(input = cache)[name = string("rd2")];']
    mil = program([("cache", "state<tensor<fp16, [1, 4]>>"), ("x", "tensor<fp16, [1, 4]>")], body, ["z"])
    add_raw_case("read_write_state", mil, {"cache": s0, "x": x},
                 [("z", s0.astype(np.float64) + x.astype(np.float64), "fp16")])


def pack_bits(vals, bits):
    """Packs unsigned ints LSB first (element i at bit i*bits)."""
    vals = np.asarray(vals).reshape(-1)
    nbytes = (len(vals) * bits + 7) // 8
    out = np.zeros(nbytes, dtype=np.uint8)
    for i, v in enumerate(vals):
        for b in range(bits):
            if (int(v) >> b) & 1:
                bit = i * bits + b
                out[bit // 8] |= np.uint8(1 << (bit % 8))
    return out


BLOB_CODE = {"fp16": 1, "fp32": 2, "uint8": 3, "int8": 4, "uint4": 11, "uint6": 13}


def weight_bin(blobs):
    """MIL blob storage v2: 64-byte header, then per blob a 64-byte record
    (0xDEADBEEF, dtype code, size, data offset) at a 64-aligned offset."""
    out = bytearray(struct.pack("<II", len(blobs), 2) + bytes(56))
    offs = []
    for dt, data in blobs:
        while len(out) % 64:
            out.append(0)
        rec = len(out)
        offs.append(rec)
        pad_bits = 0
        out += struct.pack("<IIQQQ", 0xDEADBEEF, BLOB_CODE[dt], len(data), rec + 64, pad_bits) + bytes(32)
        out += data
    return bytes(out), offs


def palettized_cases():
    """What `nectar compile --palettize` emits: a conv whose weight
    [O, I, 1, 1] is constexpr_lut_to_dense of uint6/uint8 indices (blob
    dtype codes 13 and 3) and per-output-channel-group fp16 tables
    [O/G, 1, 1, 1, 2^bits, 1]. Its own generator, so adding it moved no
    other case's data."""
    prng = np.random.default_rng(18)
    bf = 'BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(%d))'
    for bits, out_ch, in_ch, group in ((6, 8, 16, 2), (8, 4, 32, 4)):
        k = 1 << bits
        ind = prng.integers(0, k, size=(out_ch, in_ch))
        lut = (prng.standard_normal((out_ch // group, 1, 1, 1, k, 1)) * 0.5).astype(np.float16)
        dense = np.empty((out_ch, in_ch))
        for o in range(out_ch):
            dense[o] = lut[o // group, 0, 0, 0, ind[o], 0]
        idt = "uint%d" % bits
        wbin, offs = weight_bin([(idt, pack_bits(ind, bits).tobytes()), ("fp16", lut.tobytes())])
        lt = "tensor<fp16, [%d, 1, 1, 1, %d, 1]>" % (out_ch // group, k)
        body = ['tensor<%s, [%d, %d, 1, 1]> wi = const()[name = string("wi"), val = tensor<%s, [%d, %d, 1, 1]>(%s)];'
                % (idt, out_ch, in_ch, idt, out_ch, in_ch, bf % offs[0]),
                '%s wl = const()[name = string("wl"), val = %s(%s)];' % (lt, lt, bf % offs[1]),
                'tensor<fp16, [%d, %d, 1, 1]> w = constexpr_lut_to_dense(indices = wi, lut = wl)[name = string("w")];'
                % (out_ch, in_ch),
                'tensor<fp16, [1, %d, 1, 4]> y = conv(weight = w, x = x)[name = string("op")];' % out_ch]
        x = (prng.standard_normal((1, in_ch, 1, 4))).astype(np.float16)
        y = np.einsum("oi,bij->boj", dense, x[:, :, 0, :].astype(np.float64)).reshape(1, out_ch, 1, 4)
        add_raw_case("constexpr_lut_to_dense_%s_conv" % idt,
                     program([("x", "tensor<fp16, [1, %d, 1, 4]>" % in_ch)], body, ["y"], "ios18"),
                     {"x": x}, [("y", y, "fp16")], files={"weights/weight.bin": wbin})


# ---- attention program from the corpus ---------------------------------------

def attention_golden():
    """numpy attention for joshuaswarren__mil-hwx-compiler__tests__fixtures__attention.mil:
    x [1, 64, 4, 192] holds Q, K, V side by side on the last axis."""
    x = randn16(1, 64, 4, 192)
    xd = x.astype(np.float64)
    Q0, K0, V0 = xd[..., 0:64], xd[..., 64:128], xd[..., 128:192]

    def run(r, acc):
        Q = np.transpose(Q0, (0, 2, 3, 1))
        K = np.transpose(K0, (0, 2, 1, 3))
        V = np.transpose(V0, (0, 2, 3, 1))
        s = r(np.matmul(Q.astype(acc), K.astype(acc)).astype(np.float64))
        s = r(s * 0.125)
        m = np.max(s, axis=-1, keepdims=True)
        e = np.exp((s - m).astype(acc)).astype(np.float64)
        p = r(e / np.sum(e, axis=-1, keepdims=True))
        c = r(np.matmul(p.astype(acc), V.astype(acc)).astype(np.float64))
        return np.transpose(c, (0, 3, 1, 2)).reshape(1, 64, 4, 64)
    exact = run(lambda a: a, np.float64)
    # the fp16 model: each op rounded to fp16, accumulation in fp32
    sim16 = run(lambda a: a.astype(np.float16).astype(np.float64), np.float32)
    d = os.path.join(OUT, "attention")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.f32.npy"), exact.astype(np.float32))
    np.save(os.path.join(d, "y.f16.npy"), sim16.astype(np.float16))


# ---- RMSNorm in fp16: naive vs rescaled (docs/ane-rules.md) --------------------------

def rmsnorm_programs():
    """Two RMSNorm programs in the ANE layout [1, C, 1, S] over channels, for
    activations of magnitude ~300: the naive one squares x (overflows fp16
    above 256), the rescaled one squares x/128 and multiplies back. numpy's
    float64 RMSNorm is the reference for both."""
    c, s = 64, 32
    x = randn16(1, c, 1, s, scale=300.0)
    gain = (1.0 + 0.1 * rng.standard_normal((1, c, 1, 1))).astype(np.float16)
    eps = 1e-5
    xd = x.astype(np.float64)
    ref = xd / np.sqrt(np.mean(xd * xd, axis=1, keepdims=True) + eps) * gain.astype(np.float64)
    consts = [const_stmt("ax", "int32", np.int32([1])),
              'bool kd = const()[name = string("kd"), val = bool(true)];',
              const_stmt("g", "fp16", gain)]
    naive = consts + [
        'tensor<fp16, [1, 64, 1, 32]> sq = mul(x = x, y = x)[name = string("sq")];',
        'tensor<fp16, [1, 1, 1, 32]> ss = reduce_sum(axes = ax, keep_dims = kd, x = sq)[name = string("ss")];',
        'fp16 inv_c = const()[name = string("inv_c"), val = fp16(%s)];' % fmt_float(1.0 / c),
        'tensor<fp16, [1, 1, 1, 32]> ms = mul(x = ss, y = inv_c)[name = string("ms")];',
        'fp16 eps = const()[name = string("eps"), val = fp16(%s)];' % fmt_float(float(np.float16(eps))),
        'tensor<fp16, [1, 1, 1, 32]> r = rsqrt(epsilon = eps, x = ms)[name = string("r")];',
        'tensor<fp16, [1, 64, 1, 32]> xn = mul(x = x, y = r)[name = string("xn")];',
        'tensor<fp16, [1, 64, 1, 32]> y = mul(x = xn, y = g)[name = string("y")];']
    # x/128 keeps sum((x/128)^2) = mean(x^2)/256 in range; rms(x) = 16 * sqrt(that)
    scaled = consts + [
        'fp16 k = const()[name = string("k"), val = fp16(0x1p-7)];',
        'tensor<fp16, [1, 64, 1, 32]> xs = mul(x = x, y = k)[name = string("xs")];',
        'tensor<fp16, [1, 64, 1, 32]> sq = mul(x = xs, y = xs)[name = string("sq")];',
        'tensor<fp16, [1, 1, 1, 32]> ss = reduce_sum(axes = ax, keep_dims = kd, x = sq)[name = string("ss")];',
        'fp16 eps = const()[name = string("eps"), val = fp16(%s)];' % fmt_float(float(np.float16(eps / 256))),
        'tensor<fp16, [1, 1, 1, 32]> r = rsqrt(epsilon = eps, x = ss)[name = string("r")];',
        'fp16 eight = const()[name = string("eight"), val = fp16(0x1p+3)];',
        'tensor<fp16, [1, 1, 1, 32]> r8 = mul(x = r, y = eight)[name = string("r8")];',
        'tensor<fp16, [1, 64, 1, 32]> xn = mul(x = xs, y = r8)[name = string("xn")];',
        'tensor<fp16, [1, 64, 1, 32]> y = mul(x = xn, y = g)[name = string("y")];']
    for name, body in (("rmsnorm_naive", naive), ("rmsnorm_scaled", scaled)):
        d = os.path.join(OUT, "programs", name)
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        with open(os.path.join(d, "model.mil"), "w") as f:
            f.write(program([("x", "tensor<fp16, [1, 64, 1, 32]>")], body, ["y"]))
        np.save(os.path.join(d, "x.npy"), x)
        np.save(os.path.join(d, "y.f32.npy"), ref.astype(np.float32))


# ---- output ---------------------------------------------------------------------

def write_all():
    ops_dir = os.path.join(OUT, "ops")
    if os.path.isdir(ops_dir):
        shutil.rmtree(ops_dir)
    os.makedirs(ops_dir)
    manifest = []
    for c in CASES:
        d = os.path.join(ops_dir, c["name"])
        os.makedirs(d)
        with open(os.path.join(d, "model.mil"), "w") as f:
            f.write(c["mil"])
        for rel, data in c["files"].items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data)
        ins = {}
        for n, a in c["feed"].items():
            np.save(os.path.join(d, n + ".npy"), a)
            ins[n] = n + ".npy"
        outs = {}
        for n, (a, dt) in c["outs"]:
            if dt in ("fp16", "fp32"):
                exact, r16 = (a if isinstance(a, tuple) else (a, a))
                np.save(os.path.join(d, n + ".f32.npy"), np.asarray(exact, np.float64).astype(np.float32))
                with np.errstate(over="ignore"):
                    e16 = np.asarray(r16, np.float64).astype(np.float16 if dt == "fp16" else np.float32)
                np.save(os.path.join(d, n + ".f16.npy"), e16)
                outs[n] = {"dtype": dt, "fp32": n + ".f32.npy", "fp16": n + ".f16.npy"}
            else:
                np.save(os.path.join(d, n + ".npy"), np.asarray(a).astype(NP_OF[dt]))
                outs[n] = {"dtype": dt, "exact": n + ".npy"}
        manifest.append({"name": c["name"], "inputs": ins, "outputs": outs,
                         "tol_fp16": c["tol16"], "tol_fp32": c["tol32"]})
    with open(os.path.join(ops_dir, "cases.json"), "w") as f:
        json.dump({"cases": manifest}, f, indent=1)
    return len(manifest)


def main():
    binary_cases()
    unary_cases()
    reduce_cases()
    linalg_cases()
    layout_cases()
    constexpr_cases()
    quantize_cases()
    stateful_cases()
    palettized_cases()
    unary_rest_cases()
    n = write_all()
    attention_golden()
    rmsnorm_programs()
    total = 0
    for dp, _, fs in os.walk(OUT):
        total += sum(os.path.getsize(os.path.join(dp, f)) for f in fs)
    print("wrote %d op cases + attention, %d bytes under %s" % (n, total, OUT))


if __name__ == "__main__":
    main()
