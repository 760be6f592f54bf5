"""Decision models (docs/decision.md) from Python: nc_decision_open / nc_decide.

    d = nectar.Decision("tests/fixtures/decision/dm_multi")
    out = d.decide(["Which city? <m1> Paris <m2> Berlin <m3> Rome <m4> Tokyo"])
    out["marker_probs"], out["calibrated"], out["action_probs"], out["actions"]

The arrays are numpy float32 [n, K] / [n, A] where numpy is installed, lists
of lists otherwise.
"""

import ctypes
import os
from typing import Any, Dict, Optional, Sequence, Union

from ._lib import LIB, NcError
from .model import _check, _options

_p = ctypes.c_void_p
_fp = ctypes.POINTER(ctypes.c_float)
_i32p = ctypes.POINTER(ctypes.c_int32)
_err = ctypes.POINTER(NcError)

# this module's calls of include/nectar.h (declared here, beside their use)
for _name, _res, _args in (
        ("nc_decision_open", ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p,
                                            ctypes.POINTER(ctypes.c_char_p),
                                            ctypes.POINTER(_p), _err]),
        ("nc_decision_free", None, [_p]),
        ("nc_decision_num_markers", ctypes.c_int, [_p]),
        ("nc_decision_num_actions", ctypes.c_int, [_p]),
        ("nc_decision_action_label", ctypes.c_char_p, [_p, ctypes.c_int]),
        ("nc_decide", ctypes.c_int, [_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, _fp,
                                     _fp, _fp, _err]),
        ("nc_decide_tokens", ctypes.c_int, [_p, ctypes.POINTER(_i32p),
                                            ctypes.POINTER(ctypes.c_size_t), _i32p,
                                            ctypes.c_size_t, _fp, _fp, _fp, _err])):
    _fn = getattr(LIB, _name)
    _fn.restype = _res
    _fn.argtypes = _args


def _arrays(flat, n, width):
    try:
        import numpy
    except ImportError:
        return [list(flat[i * width:(i + 1) * width]) for i in range(n)]
    return numpy.frombuffer(flat, dtype=numpy.float32).reshape(n, width).copy()


class Decision:
    """A decision folder (backend "cpu") or a bundle compiled from one
    (backend "mil": the NE region in the MIL interpreter's fp16 mode; "ane":
    on the device ane_device names, "fake" off macOS). options: threads=N,
    ane_device="real"|"fake"."""

    def __init__(self, path: str, backend: Optional[str] = "cpu", **options: Any) -> None:
        self._h = None
        h = ctypes.c_void_p()
        err = NcError()
        _check(LIB.nc_decision_open(os.fsencode(path), backend.encode() if backend else None,
                                    _options(options), ctypes.byref(h), ctypes.byref(err)), err)
        self._h = h
        self.path = os.fspath(path)
        self.num_markers = LIB.nc_decision_num_markers(h)
        self.num_actions = LIB.nc_decision_num_actions(h)
        labels = [LIB.nc_decision_action_label(h, i) for i in range(self.num_actions)]
        self.action_labels = [x.decode() for x in labels] if all(labels) else None

    def close(self) -> None:
        if self._h:
            LIB.nc_decision_free(self._h)
            self._h = None

    def __enter__(self) -> "Decision":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def decide(self, inputs: Union[str, Sequence[Any]],
               markers: Optional[Sequence[Sequence[int]]] = None) -> Dict[str, Any]:
        """inputs: a text, a list of texts (tokenized with the special
        tokens) or a list of token-id lists (special tokens included; markers
        then optionally gives each row's K positions). One padded batch.
        Returns marker_probs [n, K] (softmax of the marker logits),
        calibrated [n, K] (softmax of logits / T), action_probs [n, A] and
        actions (the most likely action's label, or index, per row)."""
        if isinstance(inputs, str):
            inputs = [inputs]
        n = len(inputs)
        if n == 0:
            raise ValueError("decide: no inputs")
        K, A = self.num_markers, self.num_actions
        probs, cal, act = ((ctypes.c_float * (n * w))() for w in (K, K, A))
        err = NcError()
        if all(isinstance(x, str) for x in inputs):
            if markers is not None:
                raise ValueError("decide: markers go with token ids, not texts")
            texts = (ctypes.c_char_p * n)(*[x.encode() for x in inputs])
            st = LIB.nc_decide(self._h, texts, n, probs, cal, act, ctypes.byref(err))
        else:
            rows = [(ctypes.c_int32 * len(r))(*r) for r in inputs]
            ptrs = (_i32p * n)(*[ctypes.cast(r, _i32p) for r in rows])
            lens = (ctypes.c_size_t * n)(*[len(r) for r in inputs])
            mk = None
            if markers is not None:
                if len(markers) != n or any(len(m) != K for m in markers):
                    raise ValueError("decide: markers needs %d positions for each of %d rows"
                                     % (K, n))
                mk = (ctypes.c_int32 * (n * K))(*[p for m in markers for p in m])
            st = LIB.nc_decide_tokens(self._h, ptrs, lens, mk, n, probs, cal, act,
                                      ctypes.byref(err))
        _check(st, err)
        best = [max(range(A), key=lambda a, r=r: act[r * A + a]) for r in range(n)]
        return {"marker_probs": _arrays(probs, n, K), "calibrated": _arrays(cal, n, K),
                "action_probs": _arrays(act, n, A),
                "actions": [self.action_labels[b] if self.action_labels else b for b in best]}
