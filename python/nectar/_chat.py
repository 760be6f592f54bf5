"""nc_chat_request from Python: a chat request's tools, tool_choice and
response_format run by the code `nectar serve` runs (the template's tool
parts, the constrained sampler, the tool-call scanner); and logprob entries
in OpenAI's shape, as the server writes them.
"""

from __future__ import annotations

import ctypes
import json
from typing import Any, Dict, List, Optional, Tuple

from ._lib import LIB, NcChatMessage, NcError, NcLogprob


def _check(status, err):
    if status != 0:
        from .model import NectarError
        raise NectarError(status, err.msg.decode("utf-8", "replace"))


def _take(ptr) -> str:
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace") if ptr else ""
    finally:
        LIB.nc_free(ptr)


class ChatRequest:
    """One nc_chat_request: new per create_chat_completion call."""

    def __init__(self, model_h, tools=None, tool_choice=None, response_format=None):
        self.h = None
        body = {}
        if tools is not None:
            body["tools"] = tools
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        if response_format is not None:
            body["response_format"] = response_format
        h = ctypes.c_void_p()
        err = NcError()
        _check(LIB.nc_chat_request_new(model_h, json.dumps(body).encode(), ctypes.byref(h),
                                       ctypes.byref(err)), err)
        self.h = h
        self.is_constrained = bool(LIB.nc_chat_request_is_constrained(h))
        self.uses_tools = bool(LIB.nc_chat_request_uses_tools(h))

    def render(self, messages: List[Dict[str, Any]], flags: int) -> str:
        """The prompt: the template with the tools and each assistant
        message's tool_calls."""
        def enc(s):
            return None if s is None else s.encode("utf-8")
        n = len(messages)
        arr = (NcChatMessage * max(n, 1))()
        calls = (ctypes.c_char_p * max(n, 1))()
        for i, m in enumerate(messages):
            content = m.get("content")
            if isinstance(content, list):  # OpenAI's text parts
                content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
            role = "system" if m["role"] == "developer" else m["role"]
            arr[i] = NcChatMessage(enc(role), enc(content or ""), enc(m.get("reasoning_content")))
            if m.get("tool_calls"):
                calls[i] = json.dumps(m["tool_calls"]).encode("utf-8")
        out = ctypes.c_void_p()
        err = NcError()
        _check(LIB.nc_chat_request_render(self.h, arr, n, calls, flags, ctypes.byref(out),
                                          ctypes.byref(err)), err)
        return _take(out.value)

    def scan(self, content: bytes, is_final: bool) -> Tuple[str, List[Dict[str, Any]]]:
        """What is new in the content so far: (text to show, tool calls)."""
        text = ctypes.c_void_p()
        calls = ctypes.c_void_p()
        err = NcError()
        buf = ctypes.create_string_buffer(content, len(content))
        _check(LIB.nc_chat_request_scan(self.h, buf, len(content), int(is_final),
                                        ctypes.byref(text), ctypes.byref(calls),
                                        ctypes.byref(err)), err)
        return _take(text.value), json.loads(_take(calls.value))

    def free(self):
        if self.h:
            LIB.nc_chat_request_free(self.h)
            self.h = None

    __del__ = free


def token_entry(tok_h, token: int, logprob: float) -> Dict[str, Any]:
    """{"token", "logprob", "bytes"} as the server writes one."""
    n = ctypes.c_size_t()
    p = LIB.nc_token_bytes(tok_h, token, ctypes.byref(n))
    b = ctypes.string_at(p, n.value) if p else b""
    return {"token": b.decode("utf-8", "replace"), "logprob": float(logprob), "bytes": list(b)}


def logprob_entry(tok_h, seq, i: int, k: int) -> Optional[Dict[str, Any]]:
    """Generated token i's chat logprobs entry, with k alternatives."""
    chosen = NcLogprob()
    top = (NcLogprob * max(k, 1))()
    n = LIB.nc_sequence_logprob(seq, i, ctypes.byref(chosen), top, k)
    if n < 0:
        return None
    e = token_entry(tok_h, chosen.token, chosen.logprob)
    e["top_logprobs"] = [token_entry(tok_h, top[j].token, top[j].logprob) for j in range(n)]
    return e


def legacy_logprobs(entries: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Completions' parallel arrays from chat-shaped entries, as the server
    makes them: tokens, token_logprobs, top_logprobs ({token: logprob}),
    text_offset."""
    offsets, off = [], 0
    for e in entries:
        offsets.append(off)
        off += len(e["token"].encode("utf-8"))  # bytes, as jansson counts
    return {"tokens": [e["token"] for e in entries],
            "token_logprobs": [e["logprob"] for e in entries],
            "top_logprobs": [{a["token"]: a["logprob"] for a in e["top_logprobs"]}
                             for e in entries],
            "text_offset": offsets}
