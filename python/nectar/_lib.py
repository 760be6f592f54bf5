"""Finding libnectar and declaring the C functions of include/nectar.h.

The library is, in this order: the file $NECTAR_LIBRARY names; the copy that
`pip install` put inside this package; a system one (`make install`), found
by ctypes.util.find_library. Its major version must be the package's.
"""

import ctypes
import ctypes.util
import os
import sys

MAJOR = 0  # NECTAR_VERSION_MAJOR this package is written for
MIN_NUMBER = 301  # and the oldest it runs on: 0.3.1, nc_sequence_split_reasoning


class NcError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512)]


class NcChatMessage(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p),
                ("reasoning_content", ctypes.c_char_p)]


class NcEmbedOptions(ctypes.Structure):
    _fields_ = [("normalize", ctypes.c_int), ("batch_size", ctypes.c_int),
                ("prompt_name", ctypes.c_char_p), ("prompt", ctypes.c_char_p)]


class NcLogprob(ctypes.Structure):
    _fields_ = [("token", ctypes.c_int32), ("logprob", ctypes.c_float)]


# int (*)(void *user, int32_t token, const char *text, size_t len)
TOKEN_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                                  ctypes.c_size_t)

_p = ctypes.c_void_p
_s = ctypes.c_char_p
_i = ctypes.c_int
_st = ctypes.c_int  # nc_status
_err = ctypes.POINTER(NcError)
_i32p = ctypes.POINTER(ctypes.c_int32)
_fp = ctypes.POINTER(ctypes.c_float)
_sz = ctypes.c_size_t

# name: (result, argument types)
_SIGNATURES = {
    "nc_version": (_s, []),
    "nc_version_number": (_i, []),
    "nc_status_name": (_s, [_st]),
    "nc_free": (None, [_p]),
    "nc_tokenize": (_st, [_p, _p, _sz, _i, ctypes.POINTER(_i32p), ctypes.POINTER(_sz), _err]),
    "nc_detokenize": (_st, [_p, _i32p, _sz, _i, ctypes.POINTER(_p), ctypes.POINTER(_sz), _err]),
    "nc_token_id": (ctypes.c_int32, [_p, _s]),
    "nc_chat_apply_template": (_st, [_p, ctypes.POINTER(NcChatMessage), _sz, ctypes.c_uint,
                                     ctypes.POINTER(_p), _err]),
    "nc_model_open": (_st, [_s, _s, ctypes.POINTER(_s), ctypes.POINTER(_p), _err]),
    "nc_model_free": (None, [_p]),
    "nc_set_bf16_contract": (_st, [_s, _err]),
    "nc_model_get_kind": (_i, [_p]),
    "nc_model_tokenizer": (_p, [_p]),
    "nc_model_vocab_size": (_i, [_p]),
    "nc_model_embedding_size": (_i, [_p]),
    "nc_model_num_labels": (_i, [_p]),
    "nc_model_label": (_s, [_p, _i]),
    "nc_model_placement": (_s, [_p]),
    "nc_sampling_new": (_p, []),
    "nc_sampling_free": (None, [_p]),
    "nc_sampling_set": (_st, [_p, _s, ctypes.c_double, _err]),
    "nc_sampling_add_stop": (_st, [_p, _s, _err]),
    "nc_sampling_set_seed": (None, [_p, ctypes.c_uint64]),
    "nc_sequence_new": (_st, [_p, _i, ctypes.POINTER(_p), _err]),
    "nc_sequence_free": (None, [_p]),
    "nc_sequence_reset": (None, [_p]),
    "nc_sequence_context": (_i, [_p]),
    "nc_generate_tokens": (_st, [_p, _i32p, _sz, _i, _p, TOKEN_CALLBACK, _p, ctypes.POINTER(_i),
                                 _err]),
    "nc_embed": (_st, [_p, _s, _fp, _sz, _err]),
    "nc_embed_batch": (_st, [_p, ctypes.POINTER(_s), _sz, ctypes.POINTER(NcEmbedOptions), _fp,
                             _sz, ctypes.POINTER(_sz), _err]),
    "nc_sampling_from_model": (_st, [_p, _p, _err]),
    "nc_fill_mask": (_st, [_p, _s, _i, _i32p, _fp, _i, ctypes.POINTER(_i), _err]),
    "nc_classify": (_st, [_p, _s, _fp, _sz, _err]),
    "nc_compile": (_st, [_s, _s, ctypes.POINTER(_s), _err]),
    # tools, structured output and logprobs (0.3.0)
    "nc_chat_request_new": (_st, [_p, _s, ctypes.POINTER(_p), _err]),
    "nc_chat_request_free": (None, [_p]),
    "nc_chat_request_is_constrained": (_i, [_p]),
    "nc_chat_request_uses_tools": (_i, [_p]),
    "nc_chat_request_render": (_st, [_p, ctypes.POINTER(NcChatMessage), _sz, ctypes.POINTER(_s),
                                     ctypes.c_uint, ctypes.POINTER(_p), _err]),
    "nc_chat_request_scan": (_st, [_p, _p, _sz, _i, ctypes.POINTER(_p), ctypes.POINTER(_p),
                                   _err]),
    "nc_chat_request_restart": (None, [_p]),
    "nc_sequence_constrain": (_st, [_p, _p, _err]),
    "nc_sequence_set_logprobs": (_st, [_p, _i, _err]),
    "nc_sequence_logprob": (_i, [_p, _sz, ctypes.POINTER(NcLogprob), ctypes.POINTER(NcLogprob),
                                 _i]),
    "nc_token_bytes": (_p, [_p, ctypes.c_int32, ctypes.POINTER(_sz)]),
    "nc_sequence_stat": (ctypes.c_double, [_p, _i]),
    # the reasoning split (0.3.1)
    "nc_sequence_split_reasoning": (_st, [_p, TOKEN_CALLBACK, _p, _i, _err]),
}


def _candidates():
    env = os.environ.get("NECTAR_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    name = ("libnectar.%d.dylib" % MAJOR) if sys.platform == "darwin" else (
        "libnectar.so.%d" % MAJOR)
    out = [os.path.join(here, name)]
    found = ctypes.util.find_library("nectar")
    if found:
        out.append(found)
    return out


def load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        number = lib.nc_version_number()
        if number // 10000 != MAJOR or number < MIN_NUMBER:
            raise ImportError("nectar: %s is libnectar %s; this package needs major version %d, "
                              "at least %d.%d" % (path, lib.nc_version().decode(), MAJOR,
                                                  MIN_NUMBER // 10000, MIN_NUMBER // 100 % 100))
        return lib
    raise ImportError("nectar: no libnectar found: " + "; ".join(tried) +
                      " (pip install ./python from a checkout, or set NECTAR_LIBRARY)")


LIB = load()
