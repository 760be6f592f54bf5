"""The OpenAI-shaped calls of Model, as llama-cpp-python's Llama has them:
create_completion, create_chat_completion and create_embedding return the
dicts (or, streaming, the chunks) the OpenAI API and `nectar serve` send.
Sampling defaults come from the model folder's generation_config.json, as on
the command line and in the server. Tools, tool_choice, response_format and
logprobs run on the server's own code, through nc_chat_request (_chat.py).
"""

from __future__ import annotations

import codecs
import os
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from ._chat import ChatRequest, legacy_logprobs

# nc_finish -> OpenAI's finish_reason
_FINISH_REASON = {"eos": "stop", "stop": "stop", "length": "length", "context": "length",
                  "cancel": "stop"}
# create_* keyword -> generate's sampling keyword
_SAMPLING_KEYS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k",
                  "min_p": "min_p", "presence_penalty": "presence_penalty",
                  "frequency_penalty": "frequency_penalty", "repeat_penalty": "repeat_penalty",
                  "seed": "seed", "stop": "stop"}
_MAX_TOP_LOGPROBS = 20  # chat; completions allow 5, as the server
_CHAT_ADD_GENERATION_PROMPT = 1
_CHAT_NO_THINKING = 2


def _sampling(args: Dict[str, Any]) -> Dict[str, Any]:
    """generate's sampling keywords among a create_* call's arguments."""
    return {_SAMPLING_KEYS[k]: v for k, v in args.items() if k in _SAMPLING_KEYS and v is not None}


def _top(logprobs: Any, top_logprobs: Optional[int], most: int) -> Optional[int]:
    """The number of alternatives per token, None when logprobs are off."""
    if isinstance(logprobs, bool) or logprobs is None:
        if top_logprobs and not logprobs:
            raise ValueError("top_logprobs requires logprobs=True")
        k = (top_logprobs or 0) if logprobs else None
    else:  # completions: logprobs=N, the number of alternatives
        k = int(logprobs)
    if k is not None and not 0 <= k <= most:
        raise ValueError("top_logprobs %d is not in 0..%d" % (k, most))
    return k


def _call_chunks(calls: List[Dict[str, Any]], first: int) -> List[List[Dict[str, Any]]]:
    """Each call as the server streams it: a delta with its index, id, type
    and name (arguments ""), then one with the arguments."""
    out = []
    for i, c in enumerate(calls):
        f = c["function"]
        out.append([{"index": first + i, "id": c["id"], "type": c["type"],
                     "function": {"name": f["name"], "arguments": ""}}])
        out.append([{"index": first + i, "function": {"arguments": f["arguments"]}}])
    return out


def _is_blank(s: str) -> bool:
    return all(ch in " \n\r\t" for ch in s)


class OpenAIMixin:
    """create_completion, create_chat_completion, create_embedding (Model)."""

    @property
    def model_name(self) -> str:
        """The name the dicts carry: the folder's name."""
        return os.path.basename(os.path.normpath(self.path))

    def _usage(self, n_prompt: int, n_completion: int) -> Dict[str, Any]:
        """OpenAI's usage, with the prompt tokens the sequence's cache
        held (prompt_tokens_details.cached_tokens), as the server's."""
        from ._lib import LIB
        cached = int(LIB.nc_sequence_stat(self._seq, 1)) if self._seq else 0  # PROMPT_CACHED
        return {"prompt_tokens": n_prompt, "completion_tokens": n_completion,
                "total_tokens": n_prompt + n_completion,
                "prompt_tokens_details": {"cached_tokens": cached}}

    def _head(self, prefix: str, obj: str, model: Optional[str]) -> Dict[str, Any]:
        return {"id": prefix + uuid.uuid4().hex, "object": obj, "created": int(time.time()),
                "model": model or self.model_name, "system_fingerprint": "nectar"}

    def _room(self, n_prompt: int, max_tokens: Optional[int]) -> int:
        """max_tokens within what the context leaves after the prompt, as
        the server sizes it (None: all of it)."""
        room = self.context_size() - n_prompt
        if room < 1:
            raise ValueError("the prompt has %d tokens but the context holds %d (at least one "
                             "must be left to generate)" % (n_prompt, self.context_size()))
        return room if max_tokens is None or max_tokens < 0 or max_tokens > room else max_tokens

    def _run(self, prompt: str, max_tokens, kw, request=None, top=None, starts_inside=None):
        """(text bytes, logprob entries, reasoning bytes) of one generation;
        the reasoning is split off (by the library, as the server splits
        it) unless starts_inside is None."""
        from .model import _Sampling
        pieces: List[bytes] = []
        thought: List[bytes] = []
        entries: List[Dict[str, Any]] = []
        s = _Sampling(kw, self._h)
        try:
            self._generate(self.tokenize(prompt), max_tokens, s, pieces.append, request, top,
                           None if top is None else entries.append,
                           None if starts_inside is None else thought.append, starts_inside)
        finally:
            s.free()
        return b"".join(pieces), entries, b"".join(thought)

    def create_completion(self, prompt: str, max_tokens: Optional[int] = 16,
                          temperature: Optional[float] = None, top_p: Optional[float] = None,
                          top_k: Optional[int] = None, min_p: Optional[float] = None,
                          presence_penalty: Optional[float] = None,
                          frequency_penalty: Optional[float] = None,
                          repeat_penalty: Optional[float] = None, seed: Optional[int] = None,
                          stop: Union[str, List[str], None] = None, stream: bool = False,
                          logprobs: Optional[int] = None,
                          model: Optional[str] = None) -> Any:
        """OpenAI's text completion of prompt (raw text, no template):
        {"id", "object": "text_completion", "created", "model", "choices":
        [{"text", "index", "logprobs", "finish_reason"}], "usage"}; with
        stream=True an iterator of such chunks, the last with the
        finish_reason. max_tokens beyond the context: what it leaves, as
        the server. logprobs=N (0..5): the chosen tokens' logprobs and N
        alternatives, as OpenAI's legacy arrays (tokens, token_logprobs,
        top_logprobs, text_offset). max_tokens None: until the context is
        full."""
        kw = _sampling(locals())
        top = None if logprobs is None else _top(int(logprobs), None, 5)
        head = self._head("cmpl-", "text_completion", model)
        n_prompt = len(self.tokenize(prompt))
        max_tokens = self._room(n_prompt, max_tokens)
        if stream:
            return self._completion_chunks(head, prompt, max_tokens, kw, top)
        raw, entries, _ = self._run(prompt, max_tokens, kw, None, top)
        return dict(head, choices=[{"text": raw.decode("utf-8", "replace"), "index": 0,
                                    "logprobs": None if top is None else legacy_logprobs(entries),
                                    "finish_reason": _FINISH_REASON[self.last_finish]}],
                    usage=self._usage(n_prompt, self.last_n_tokens))

    def _completion_chunks(self, head, prompt, max_tokens, kw, top) -> Iterator[Dict[str, Any]]:
        from .model import _Sampling
        s = _Sampling(kw, self._h)
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        entries: List[Dict[str, Any]] = []
        events = self._events(self.tokenize(prompt), max_tokens, s, None, top)
        try:
            for kind, value in events:
                if kind == "logprob":
                    entries.append(value)
                    continue
                text = dec.decode(value)
                if text:
                    lp = None if top is None else legacy_logprobs(entries)
                    entries = []
                    yield dict(head, choices=[{"text": text, "index": 0, "logprobs": lp,
                                               "finish_reason": None}])
        finally:
            events.close()
        tail = dec.decode(b"", final=True)
        yield dict(head, choices=[{"text": tail, "index": 0,
                                   "logprobs": None if top is None else legacy_logprobs(entries),
                                   "finish_reason": _FINISH_REASON[self.last_finish]}])

    def create_chat_completion(self, messages: List[Dict[str, Any]],
                               max_tokens: Optional[int] = None,
                               temperature: Optional[float] = None, top_p: Optional[float] = None,
                               top_k: Optional[int] = None, min_p: Optional[float] = None,
                               presence_penalty: Optional[float] = None,
                               frequency_penalty: Optional[float] = None,
                               repeat_penalty: Optional[float] = None, seed: Optional[int] = None,
                               stop: Union[str, List[str], None] = None, stream: bool = False,
                               tools: Optional[List[Dict[str, Any]]] = None,
                               tool_choice: Any = None,
                               response_format: Optional[Dict[str, Any]] = None,
                               logprobs: Optional[bool] = None,
                               top_logprobs: Optional[int] = None,
                               enable_thinking: bool = True,
                               model: Optional[str] = None) -> Any:
        """OpenAI's chat completion, as `nectar serve` answers it: the
        model's chat template over messages (with tools, and the tool_calls
        of earlier assistant turns), then generation; {"id", "object":
        "chat.completion", "created", "model", "choices": [{"index",
        "message": {"role": "assistant", "content", "reasoning_content",
        "tool_calls"}, "logprobs", "finish_reason"}], "usage"}.

        tools / tool_choice ("auto", "none", "required" or {"type":
        "function", "function": {"name"}}): calls are parsed out of the
        output into message["tool_calls"] (finish_reason "tool_calls");
        "required" or a named function constrains sampling to a call.
        response_format {"type": "json_object"} or {"type": "json_schema",
        "json_schema": {"schema": {...}}} constrains it to JSON (valid
        against the schema). Constrained output starts at once, thinking
        off. logprobs=True, top_logprobs=K (0..20): {"content": [{"token",
        "logprob", "bytes", "top_logprobs"}]}. stream=True: an iterator of
        "chat.completion.chunk" dicts (role, then reasoning_content /
        content / tool_calls deltas, then the finish_reason)."""
        kw = _sampling(locals())
        top = _top(logprobs, top_logprobs, _MAX_TOP_LOGPROBS)
        req = ChatRequest(self._h, tools, tool_choice, response_format)
        flags = _CHAT_ADD_GENERATION_PROMPT | (0 if enable_thinking else _CHAT_NO_THINKING)
        prompt = req.render(messages, flags)
        starts_inside = prompt.rstrip().endswith("<think>")
        head = self._head("chatcmpl-", "chat.completion", model)
        n_prompt = len(self.tokenize(prompt))
        max_tokens = self._room(n_prompt, max_tokens)
        if stream:
            return self._chat_chunks(dict(head, object="chat.completion.chunk"), prompt,
                                     max_tokens, kw, req, top, starts_inside)
        try:
            raw, entries, thought = self._run(prompt, max_tokens, kw, req, top, starts_inside)
            reasoning = thought.decode("utf-8", "replace")
            content = raw.decode("utf-8", "replace")
            calls: List[Dict[str, Any]] = []
            if req.uses_tools:
                content, calls = req.scan(content.encode("utf-8"), True)
        finally:
            req.free()
        message: Dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
            if _is_blank(content):
                message["content"] = None
        if reasoning:
            message["reasoning_content"] = reasoning
        return dict(head, choices=[{"index": 0, "message": message,
                                    "logprobs": None if top is None else {"content": entries},
                                    "finish_reason": self._finish(calls)}],
                    usage=self._usage(n_prompt, self.last_n_tokens))

    def _finish(self, calls) -> str:
        f = _FINISH_REASON[self.last_finish]
        return "tool_calls" if calls and f == "stop" else f

    def _chat_chunks(self, head, prompt, max_tokens, kw, req, top,
                     starts_inside) -> Iterator[Dict[str, Any]]:
        from .model import _Sampling

        def chunk(delta, lp=None, finish=None):
            return dict(head, choices=[{"index": 0, "delta": delta, "logprobs": lp,
                                        "finish_reason": finish}])

        try:
            s = _Sampling(kw, self._h)
            yield chunk({"role": "assistant", "content": ""})
            raw = thought = b""  # the answer's and the reasoning's bytes so far
            sent_r = sent_c = 0  # reasoning and content characters sent
            n_calls = 0
            entries: List[Dict[str, Any]] = []
            events = self._events(self.tokenize(prompt), max_tokens, s, req, top, True,
                                  starts_inside)
            done = False
            while not done:
                item = next(events, None)
                done = item is None
                if item is not None and item[0] == "logprob":
                    entries.append(item[1])
                    continue
                if item is not None and item[0] == "reasoning":
                    thought += item[1]
                elif item is not None:
                    raw += item[1]
                errors = "ignore" if not done else "replace"
                reasoning = thought.decode("utf-8", errors)
                content = raw.decode("utf-8", errors)
                delta: Dict[str, Any] = {}
                if reasoning and len(reasoning) > sent_r:
                    delta["reasoning_content"] = reasoning[sent_r:]
                    sent_r = len(reasoning)
                call_deltas: List[List[Dict[str, Any]]] = []
                if req.uses_tools:
                    shown, calls = req.scan(content.encode("utf-8"), done)
                    if shown:
                        delta["content"] = shown
                    call_deltas = _call_chunks(calls, n_calls)
                    n_calls += len(calls)
                elif len(content) > sent_c:
                    delta["content"] = content[sent_c:]
                    sent_c = len(content)
                if delta or entries:
                    yield chunk(delta, None if top is None else {"content": entries})
                    entries = []
                for cd in call_deltas:
                    yield chunk({"tool_calls": cd})
            events.close()
            yield chunk({}, None, self._finish([None] * n_calls))
        finally:
            req.free()

    def create_embedding(self, input: Union[str, Sequence[str]],
                         model: Optional[str] = None) -> Dict[str, Any]:
        """OpenAI's embeddings of a str or a list of them (one padded pass
        per batch, the folder's sentence-transformers settings): {"object":
        "list", "data": [{"object": "embedding", "embedding": [floats],
        "index"}], "model", "usage": {"prompt_tokens", "total_tokens"}}."""
        items = [input] if isinstance(input, str) else list(input)
        rows = self.encode(items, convert_to_numpy=False)
        n = self.last_n_tokens
        return {"object": "list",
                "data": [{"object": "embedding", "embedding": [float(x) for x in r], "index": i}
                         for i, r in enumerate(rows)],
                "model": model or self.model_name,
                "usage": {"prompt_tokens": n, "total_tokens": n}}
