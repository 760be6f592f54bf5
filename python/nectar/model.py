"""Model: a decoder (generate, stream, chat; create_completion and
create_chat_completion) or an encoder (embed, encode, create_embedding,
fill_mask, classify) opened through the public C API, and NectarError, which
carries the one-line message of the library's nc_error.
"""

from __future__ import annotations

import codecs
import ctypes
import os
import queue
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

from ._chat import logprob_entry
from ._lib import LIB, TOKEN_CALLBACK, NcChatMessage, NcEmbedOptions, NcError
from ._openai import OpenAIMixin

_FINISH = ("eos", "stop", "length", "context", "cancel")  # nc_finish, in order
_SAMPLING = ("temperature", "top_k", "top_p", "min_p", "repeat_penalty", "presence_penalty",
             "frequency_penalty", "truncate")
_CHAT_ADD_GENERATION_PROMPT = 1
_CHAT_NO_THINKING = 2


class NectarError(Exception):
    """A failed library call: str(e) is the library's message; e.code the
    nc_status number, e.status its name ("io", "format", "invalid", ...)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.status = LIB.nc_status_name(code).decode()


def _check(status, err):
    if status != 0:
        raise NectarError(status, err.msg.decode("utf-8", "replace"))


def _options(options):
    """{"threads": 1, "ctx": 512} -> a NULL-terminated char*[] of "key=value"."""
    if not options:
        return None
    items = [("%s=%s" % (k, v)).encode() for k, v in options.items()]
    return (ctypes.c_char_p * (len(items) + 1))(*items, None)


def _take_string(ptr, n):
    """Bytes the library allocated (nc_free'd here) as str."""
    try:
        return ctypes.string_at(ptr, n).decode("utf-8", "replace") if ptr else ""
    finally:
        LIB.nc_free(ptr)


def compile(model_dir: str, out_dir: str, **options: Any) -> None:
    """nc_compile: lowers a model folder to an ANE bundle at out_dir
    (options as in include/nectar.h: threads, ctx, buckets, lm_head, seqs,
    batches); the bundle opens with Model(out_dir, backend="mil")."""
    err = NcError()
    _check(LIB.nc_compile(os.fsencode(model_dir), os.fsencode(out_dir), _options(options),
                          ctypes.byref(err)), err)


def set_bf16_contract(contract: str) -> None:
    """nc_set_bf16_contract: the precision of bf16 weights' products on the
    CPU, for the whole process (the command line's NECTAR_BF16): "accurate"
    (the default), "fast" (activations rounded to bf16, as llama.cpp and
    PyTorch's bf16 autocast; vdpbf16ps where the CPU has it) or "off". Call
    it before opening models."""
    err = NcError()
    _check(LIB.nc_set_bf16_contract(contract.encode(), ctypes.byref(err)), err)


class _Sampling:
    """An nc_sampling from keyword arguments over the model folder's
    generation_config.json defaults (as the command line; greedy where the
    folder has none)."""

    def __init__(self, params, model=None):
        self.h = None
        unknown = set(params) - set(_SAMPLING) - {"seed", "stop"}
        if unknown:
            raise TypeError("unknown sampling parameter(s): " + ", ".join(sorted(unknown)))
        stops = params.get("stop") or []
        stops = [stops] if isinstance(stops, str) else list(stops)
        if params.get("stop") == "" or any(not isinstance(x, str) or x == "" for x in stops):
            raise ValueError("stop: an empty string (or a non-string) cannot end generation; "
                             "give non-empty strings, or None for no stop string")
        self.h = LIB.nc_sampling_new()
        if not self.h:
            raise MemoryError("nc_sampling_new")
        err = NcError()
        try:
            if model:
                _check(LIB.nc_sampling_from_model(self.h, model, ctypes.byref(err)), err)
            for name in _SAMPLING:
                if params.get(name) is not None:
                    _check(LIB.nc_sampling_set(self.h, name.encode(), float(params[name]),
                                               ctypes.byref(err)), err)
            seed = params.get("seed")
            if seed is not None:
                if not 0 <= int(seed) < 2**64:
                    raise ValueError("seed %d is not in [0, 2^64)" % seed)
                LIB.nc_sampling_set_seed(self.h, int(seed))
            for s in stops:
                _check(LIB.nc_sampling_add_stop(self.h, s.encode(), ctypes.byref(err)), err)
        except BaseException:
            self.free()
            raise

    def free(self):
        if self.h:
            LIB.nc_sampling_free(self.h)
            self.h = None

    __del__ = free  # a stream() never iterated never reaches its own free


class Model(OpenAIMixin):
    """A model folder or an ANE bundle (nc_model_open).

    backend: "cpu" (a folder), "mil" (a bundle, the fp16 MIL interpreter) or
    "ane" (a bundle on the Neural Engine; ane_device="fake" elsewhere).
    options: threads=N, ctx=N, kv="f16"|"f32", ane_device="real"|"fake",
    ane_cpu="kernels"|"interp" (what runs a layer the device refuses);
    speculative decoding: draft=DIR (a smaller model of the same tokenizer
    proposes tokens this one checks in one step; greedy output unchanged),
    draft_max=N, draft_min=N, draft_p_min=P, draft_backend="cpu"|"mil"|"ane".

    A decoder keeps one sequence (KV cache): consecutive calls reuse the
    prompt prefix they share, as a chat's turns do. Calls on one Model are
    serialised by a lock; open one Model per thread to run in parallel.
    """

    def __init__(self, path: str, backend: Optional[str] = "cpu", **options: Any) -> None:
        self._h = None
        self._seq = None
        self._lock = threading.Lock()
        h = ctypes.c_void_p()
        err = NcError()
        _check(LIB.nc_model_open(os.fsencode(path), backend.encode() if backend else None,
                                 _options(options), ctypes.byref(h), ctypes.byref(err)), err)
        self._h = h
        self.path = os.fspath(path)
        self._tok = LIB.nc_model_tokenizer(h)
        self.kind = "decoder" if LIB.nc_model_get_kind(h) == 1 else "encoder"
        self.last_finish = None  # why the last generation ended: eos, stop, length, ...
        self.last_n_tokens = 0  # tokens the last generation made

    def close(self) -> None:
        if self._seq:
            LIB.nc_sequence_free(self._seq)
            self._seq = None
        if self._h:
            LIB.nc_model_free(self._h)
            self._h = None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    @property
    def vocab_size(self) -> int:
        return LIB.nc_model_vocab_size(self._h)

    @property
    def embedding_size(self) -> int:
        return LIB.nc_model_embedding_size(self._h)

    @property
    def placement(self) -> str:
        """Where the kernels run, one line: on the ane backend, per layer
        group, the kernels the device took, those on the CPU and why, and
        the bundle's lowering forms (nc_model_placement)."""
        return LIB.nc_model_placement(self._h).decode()

    @property
    def labels(self) -> List[str]:
        """A classifier's label names, in the order of classify's values."""
        return [LIB.nc_model_label(self._h, i).decode()
                for i in range(LIB.nc_model_num_labels(self._h))]

    # ---- tokenizer and chat template -----------------------------------

    def tokenize(self, text: str, add_special: bool = False) -> List[int]:
        data = text.encode("utf-8")
        ids = ctypes.POINTER(ctypes.c_int32)()
        n = ctypes.c_size_t()
        err = NcError()
        _check(LIB.nc_tokenize(self._tok, data, len(data), int(add_special), ctypes.byref(ids),
                               ctypes.byref(n), ctypes.byref(err)), err)
        try:
            return ids[:n.value]
        finally:
            LIB.nc_free(ids)

    def detokenize(self, ids: Sequence[int], skip_special: bool = False) -> str:
        arr = (ctypes.c_int32 * len(ids))(*ids)
        text = ctypes.c_void_p()
        n = ctypes.c_size_t()
        err = NcError()
        _check(LIB.nc_detokenize(self._tok, arr, len(ids), int(skip_special), ctypes.byref(text),
                                 ctypes.byref(n), ctypes.byref(err)), err)
        return _take_string(text.value, n.value)

    def token_id(self, token: str) -> Optional[int]:
        """The id of a token by its text, or None."""
        i = LIB.nc_token_id(self._tok, token.encode())
        return None if i < 0 else i

    def apply_chat_template(self, messages, add_generation_prompt=True, enable_thinking=True):
        """messages: [{"role": ..., "content": ..., "reasoning_content": ...}]
        -> the text of this model's family's chat template (Qwen3, Qwen3.5, Llama 3), as
        transformers' apply_chat_template renders it."""
        enc = lambda s: None if s is None else s.encode("utf-8")  # noqa: E731
        arr = (NcChatMessage * max(len(messages), 1))()
        for i, m in enumerate(messages):
            arr[i] = NcChatMessage(enc(m["role"]), enc(m.get("content", "")),
                                   enc(m.get("reasoning_content")))
        flags = (_CHAT_ADD_GENERATION_PROMPT if add_generation_prompt else 0) | (
            0 if enable_thinking else _CHAT_NO_THINKING)
        out = ctypes.c_void_p()
        err = NcError()
        _check(LIB.nc_chat_apply_template(self._h, arr, len(messages), flags, ctypes.byref(out),
                                          ctypes.byref(err)), err)
        return _take_string(out.value, len(ctypes.string_at(out.value)))

    # ---- generation (decoders) -----------------------------------------

    def _sequence(self):
        """The model's sequence, made at first use (call with the lock held)."""
        if self._seq is None:
            seq = ctypes.c_void_p()
            err = NcError()
            _check(LIB.nc_sequence_new(self._h, 0, ctypes.byref(seq), ctypes.byref(err)), err)
            self._seq = seq
        return self._seq

    def context_size(self) -> int:
        """Tokens the model's sequence holds: prompt and output together."""
        with self._lock:
            return LIB.nc_sequence_context(self._sequence())

    def _generate(self, ids, max_tokens, sampling, on_piece, request=None, top_logprobs=None,
                  on_logprob=None, on_reasoning=None, starts_inside=False):
        """nc_generate_tokens on the model's sequence; on_piece(bytes) gets
        each piece of final text and returns True to cancel. request: a
        _chat.ChatRequest whose constraint applies; top_logprobs (0..20):
        on_logprob(entry) gets each token's OpenAI logprobs entry before
        its text. on_reasoning(bytes): the reasoning is split off by the
        library (nc_sequence_split_reasoning: by token id, the server's
        rule) and goes there, the answer to on_piece; starts_inside: the
        prompt opened the think block."""
        err = NcError()
        with self._lock:
            self._sequence()
            failure = []
            self.last_n_tokens = 0

            def cb(user, token, text, n):
                try:
                    if token >= 0:  # -1: the end, with held-back text
                        self.last_n_tokens += 1
                        if on_logprob is not None:
                            on_logprob(logprob_entry(self._tok, self._seq,
                                                     self.last_n_tokens - 1, top_logprobs))
                    return 1 if n and on_piece(ctypes.string_at(text, n)) else 0
                except BaseException as e:  # raised again below, not lost in ctypes
                    failure.append(e)
                    return 1

            def reasoning_cb(user, token, text, n):
                try:
                    return 1 if n and on_reasoning(ctypes.string_at(text, n)) else 0
                except BaseException as e:
                    failure.append(e)
                    return 1

            c_cb = TOKEN_CALLBACK(cb)
            c_reasoning = TOKEN_CALLBACK(reasoning_cb if on_reasoning is not None else 0)
            arr = (ctypes.c_int32 * len(ids))(*ids)
            finish = ctypes.c_int()
            _check(LIB.nc_sequence_constrain(self._seq, request.h if request else None,
                                             ctypes.byref(err)), err)
            _check(LIB.nc_sequence_split_reasoning(self._seq, c_reasoning, None,
                                                   int(bool(starts_inside)),
                                                   ctypes.byref(err)), err)
            _check(LIB.nc_sequence_set_logprobs(
                self._seq, -1 if top_logprobs is None else int(top_logprobs),
                ctypes.byref(err)), err)
            try:
                st = LIB.nc_generate_tokens(self._seq, arr, len(ids),
                                            -1 if max_tokens is None else int(max_tokens),
                                            sampling.h, c_cb, None, ctypes.byref(finish),
                                            ctypes.byref(err))
            finally:
                LIB.nc_sequence_constrain(self._seq, None, None)
                LIB.nc_sequence_split_reasoning(self._seq, TOKEN_CALLBACK(), None, 0, None)
            if failure:
                raise failure[0]
            _check(st, err)
            self.last_finish = _FINISH[finish.value]

    def generate(self, prompt: str, max_tokens: Optional[int] = 256, **sampling: Any) -> str:
        """The continuation of prompt (raw text, no chat template) as one str.
        Sampling (defaults: the folder's generation_config.json, as the
        command line; greedy without one): temperature, top_k, top_p, min_p,
        repeat_penalty, presence_penalty, frequency_penalty, seed, stop (a
        non-empty str or a list of them); truncate=True drops the oldest prompt tokens when the
        prompt does not fit. max_tokens None: until the context is full."""
        pieces = []
        s = _Sampling(sampling, self._h)
        try:
            self._generate(self.tokenize(prompt), max_tokens, s, pieces.append)
        finally:
            s.free()
        return b"".join(pieces).decode("utf-8", "replace")

    def stream(self, prompt: str, max_tokens: Optional[int] = 256,
               **sampling: Any) -> Iterator[str]:
        """As generate, as an iterator of text pieces while they are made.
        Leaving the loop early cancels the generation."""
        ids = self.tokenize(prompt)
        s = _Sampling(sampling, self._h)  # bad parameters raise here, not at the first next()
        return self._stream(ids, max_tokens, s)

    def _stream(self, ids, max_tokens, s):
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        events = self._events(ids, max_tokens, s)
        try:
            for _, b in events:
                text = dec.decode(b)
                if text:
                    yield text
        finally:
            events.close()  # leaving early cancels the generation now
        tail = dec.decode(b"", final=True)
        if tail:
            yield tail

    def _events(self, ids, max_tokens, s, request=None, top_logprobs=None, split=False,
                starts_inside=False):
        """_generate as an iterator of ("text", bytes), ("logprob", entry)
        and, with split (the reasoning split off: _generate's
        on_reasoning), ("reasoning", bytes) while they are made; s is freed
        at the end. The C call blocks until the end, so it runs in a thread
        (ctypes releases the GIL) and hands its news over through a
        queue."""
        q = queue.Queue()
        cancel = threading.Event()
        end = object()

        def on_piece(b):
            q.put(("text", b))
            return cancel.is_set()

        def on_logprob(e):
            q.put(("logprob", e))

        def on_reasoning(b):
            q.put(("reasoning", b))
            return cancel.is_set()

        def work():
            try:
                self._generate(ids, max_tokens, s, on_piece, request, top_logprobs,
                               None if top_logprobs is None else on_logprob,
                               on_reasoning if split else None, starts_inside)
                q.put(end)
            except BaseException as e:
                q.put(e)
            finally:
                s.free()

        t = threading.Thread(target=work, name="nectar-generate", daemon=True)
        t.start()
        try:
            while True:
                item = q.get()
                if item is end:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            cancel.set()
            t.join()

    def chat(self, messages: List[Dict[str, Any]], max_tokens: Optional[int] = 256,
             enable_thinking: bool = True, **sampling: Any) -> str:
        """The assistant's reply to messages (the chat template with the
        generation prompt, then generate); thinking included when enabled."""
        prompt = self.apply_chat_template(messages, True, enable_thinking)
        return self.generate(prompt, max_tokens, **sampling)

    # ---- encoders --------------------------------------------------------

    def embed(self, text: str) -> Any:
        """The pooled embedding of text: a numpy float32 array where numpy is
        installed, else a list of floats. A sentence-transformers folder's
        pooling and normalization apply."""
        d = self.embedding_size
        buf = (ctypes.c_float * d)()
        err = NcError()
        _check(LIB.nc_embed(self._h, text.encode("utf-8"), buf, d, ctypes.byref(err)), err)
        try:
            import numpy
        except ImportError:
            return list(buf)
        return numpy.frombuffer(buf, dtype=numpy.float32).copy()

    def encode(self, texts: Union[str, Sequence[str]], batch_size: int = 32,
               normalize_embeddings: bool = False, prompt_name: Optional[str] = None,
               prompt: Optional[str] = None, convert_to_numpy: bool = True) -> Any:
        """As sentence-transformers' SentenceTransformer.encode: the
        embeddings of texts, a numpy float32 array [len(texts), D] (a list
        of lists without numpy or with convert_to_numpy=False), or [D] for
        one str. Each batch of batch_size texts (sorted by length) is one
        padded forward pass (nc_embed_batch). The folder's sentence-
        transformers settings apply (pooling, Normalize, max_seq_length, its
        default prompt); prompt_name picks another of its prompts, prompt
        gives the text itself."""
        one = isinstance(texts, str)
        items = [texts] if one else list(texts)
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        d = self.embedding_size
        n = len(items)
        out = (ctypes.c_float * max(n * d, 1))()
        arr = (ctypes.c_char_p * max(n, 1))(*[t.encode("utf-8") for t in items])
        opt = NcEmbedOptions(int(bool(normalize_embeddings)), int(batch_size),
                             None if prompt_name is None else prompt_name.encode(),
                             None if prompt is None else prompt.encode("utf-8"))
        n_tok = ctypes.c_size_t()
        err = NcError()
        _check(LIB.nc_embed_batch(self._h, arr, n, ctypes.byref(opt), out, n * d,
                                  ctypes.byref(n_tok), ctypes.byref(err)), err)
        self.last_n_tokens = n_tok.value
        try:
            import numpy
        except ImportError:
            numpy = None
        if numpy is not None and convert_to_numpy:
            a = numpy.frombuffer(out, dtype=numpy.float32, count=n * d).reshape(n, d).copy()
            return a[0] if one else a
        rows = [list(out[i * d:(i + 1) * d]) for i in range(n)]
        return rows[0] if one else rows

    def fill_mask(self, text: str, k: int = 5) -> List[List[Dict[str, Any]]]:
        """For each mask token in text, in order: the k most likely tokens as
        [{"token": id, "token_str": text, "score": probability}]."""
        max_masks = max(len(self.tokenize(text, add_special=True)), 1)
        ids = (ctypes.c_int32 * (k * max_masks))()
        probs = (ctypes.c_float * (k * max_masks))()
        n = ctypes.c_int()
        err = NcError()
        _check(LIB.nc_fill_mask(self._h, text.encode("utf-8"), k, ids, probs, max_masks,
                                ctypes.byref(n), ctypes.byref(err)), err)
        return [[{"token": ids[i * k + j], "token_str": self.detokenize([ids[i * k + j]]),
                  "score": probs[i * k + j]} for j in range(k)] for i in range(n.value)]

    def classify(self, text: str) -> Dict[str, float]:
        """{label: probability} of a sequence classifier, in label order."""
        labels = self.labels
        probs = (ctypes.c_float * len(labels))()
        err = NcError()
        _check(LIB.nc_classify(self._h, text.encode("utf-8"), probs, len(labels),
                               ctypes.byref(err)), err)
        return dict(zip(labels, probs))
