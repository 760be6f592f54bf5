"""Writes tests/fixtures/mil_ops/signatures.txt: the signature of each op in
nectar's op table at opsets iOS15 to iOS18, as coremltools' op registry
defines it (the definitions coremlc's MIL front end mirrors). Each line is

    op  opset  arg:flags:domain:dtypes  arg:...

where flags holds o (optional), c (must be constant), t (tuple of values)
or '-'; domain is the type-variable name or '-'; dtypes the allowed dtypes
joined by ',' ('*' when any). An op missing at that opset is written with
'absent'. tests/mil/test_mil_ops.c compares nectar's table row by row.

Run: python3 tools/mil_op_fixtures.py
"""
import os

import coremltools as ct
from coremltools.converters.mil.mil import types
from coremltools.converters.mil.mil.input_type import TupleInputType
from coremltools.converters.mil.mil.ops.registry import SSAOpRegistry

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "mil_ops")
OPSETS = [(15, ct.target.iOS15), (16, ct.target.iOS16), (17, ct.target.iOS17), (18, ct.target.iOS18)]

OPS = """const relu sigmoid tanh exp exp2 sqrt silu erf abs sign square log floor ceil round sin cos
atan relu6 softsign softplus logical_not rsqrt inverse clip leaky_relu gelu softmax band_part
layer_norm add sub mul real_div pow maximum minimum floor_div mod equal not_equal less less_equal
greater greater_equal logical_and logical_or logical_xor select conv matmul linear
scaled_dot_product_attention reduce_sum reduce_mean reduce_max reduce_min reduce_prod
reduce_l2_norm reduce_log_sum_exp reduce_sum_square reduce_l1_norm reduce_log_sum reduce_argmax
reduce_argmin transpose reshape expand_dims squeeze slice_by_index slice_by_size concat split tile
pad fill cast shape gather gather_along_axis scatter scatter_along_axis scatter_nd slice_update
read_state constexpr_affine_dequantize constexpr_lut_to_dense constexpr_blockwise_shift_scale
quantize dequantize""".split()


def dtype_names(domain, type_domains):
    if isinstance(domain, str):
        domain = type_domains.get(domain, ())
    if not isinstance(domain, (tuple, list)):
        domain = (domain,)
    names = set()
    for t in domain:
        try:
            names.add(types.builtin_to_string(t))
        except Exception:
            names.add(str(t))
    return ",".join(sorted(n for n in names if n)) or "*"


def main():
    os.makedirs(OUT, exist_ok=True)
    lines = []
    for op in OPS:
        for version, target in OPSETS:
            cls = SSAOpRegistry.core_ops.get(op, {}).get(target)
            if cls is None:
                lines.append("%s %d absent" % (op, version))
                continue
            fields = []
            for name, it in cls.input_spec.input_types.items():
                flags = ("o" if it.optional else "") + ("c" if it.const else "")
                flags += "t" if isinstance(it, TupleInputType) else ""
                # a type variable ("T") is resolved through the class's type_domains
                domain_id = getattr(it, "_type_domain_id", None)
                td = getattr(it, "_type_domain", None)
                if domain_id:
                    td = (getattr(cls, "type_domains", {}) or {}).get(domain_id, ())
                domain = domain_id or "-"
                dts = dtype_names(td, {}) if td else "*"
                fields.append("%s:%s:%s:%s" % (name, flags or "-", domain, dts))
            lines.append("%s %d %s" % (op, version, " ".join(fields)))
    with open(os.path.join(OUT, "signatures.txt"), "w") as f:
        f.write("# op opset arg:flags:domain:dtypes ... (coremltools %s op registry); "
                "tools/mil_op_fixtures.py\n" % ct.__version__)
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
