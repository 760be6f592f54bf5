"""Writes tests/fixtures/mil_blob/: a weight.bin made by Apple's own MILBlob
StorageWriter (coremltools.libmilstoragepython, the code coremltools uses to
save every mlpackage) holding one small blob of each dtype it can write, and
a text listing of what went in (dtype, element count, returned offset,
values; fp16/fp32 as bit patterns). tests/mil/test_mil_blob.c reads the file
with nectar's reader and writes the same blobs with nectar's writer, which
must produce the identical bytes.

Run: python3 tools/mil_blob_fixtures.py
"""
import os

import numpy as np
from coremltools import libmilstoragepython as milstorage

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "mil_blob")


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261202)
    bin_path = os.path.join(OUT, "coremltools.bin")
    if os.path.exists(bin_path):
        os.remove(bin_path)
    writer = milstorage._BlobStorageWriter(bin_path)
    rows = []

    def add(dtype, method, values, listed):
        offset = getattr(writer, method)(np.ascontiguousarray(values))
        rows.append("%s %d %d %s" % (dtype, len(values), offset, " ".join(str(int(v)) for v in listed)))

    f16 = np.array([1.0, -2.5, 65504.0, 2.0**-24, -0.0, np.inf, 0.1], dtype=np.float16)
    add("fp16", "write_fp16_data", f16.view(np.uint16), f16.view(np.uint16))
    f32 = np.array([3.14159, -1e-30, 1e30, 0.0], dtype=np.float32)
    add("fp32", "write_float_data", f32, f32.view(np.uint32))
    for dtype, method, np_type, lo, hi, n in [
        ("int8", "write_int8_data", np.int8, -128, 128, 9),
        ("uint8", "write_uint8_data", np.uint8, 0, 256, 5),
        ("int16", "write_int16_data", np.int16, -32768, 32768, 3),
        ("uint16", "write_uint16_data", np.uint16, 0, 65536, 4),
        ("int32", "write_int32_data", np.int32, -(2**31), 2**31, 3),
        ("uint32", "write_uint32_data", np.uint32, 0, 2**32, 2),
        ("int4", "write_int4_data", np.int8, -8, 8, 11),
        ("uint1", "write_uint1_data", np.uint8, 0, 2, 13),
        ("uint2", "write_uint2_data", np.uint8, 0, 4, 7),
        ("uint3", "write_uint3_data", np.uint8, 0, 8, 9),
        ("uint4", "write_uint4_data", np.uint8, 0, 16, 5),
        ("uint6", "write_uint6_data", np.uint8, 0, 64, 7),
    ]:
        values = rng.integers(lo, hi, size=n, dtype=np.int64).astype(np_type)
        add(dtype, method, values, values)
    del writer  # flushes and closes the file
    with open(os.path.join(OUT, "coremltools.txt"), "w") as f:
        f.write("# dtype count offset values (fp16/fp32 as bit patterns); written by tools/mil_blob_fixtures.py\n")
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
