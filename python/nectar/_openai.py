"""The OpenAI-shaped calls of Model, as llama-cpp-python's Llama has them:
create_completion, create_chat_completion and create_embedding return the
dicts (or, streaming, the chunks) the OpenAI API and `nectar serve` send.
Sampling defaults come from the model folder's generation_config.json, as on
the command line and in the server.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

# nc_finish -> OpenAI's finish_reason
_FINISH_REASON = {"eos": "stop", "stop": "stop", "length": "length", "context": "length",
                  "cancel": "stop"}
# create_* keyword -> generate's sampling keyword
_SAMPLING_KEYS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k",
                  "min_p": "min_p", "presence_penalty": "presence_penalty",
                  "frequency_penalty": "frequency_penalty", "repeat_penalty": "repeat_penalty",
                  "seed": "seed", "stop": "stop"}


def _sampling(args: Dict[str, Any]) -> Dict[str, Any]:
    """generate's sampling keywords among a create_* call's arguments."""
    return {_SAMPLING_KEYS[k]: v for k, v in args.items() if k in _SAMPLING_KEYS and v is not None}


def _unsupported(**given: Any) -> None:
    for name, value in given.items():
        if value not in (None, False, [], {}):
            raise NotImplementedError(
                "%s: not in the Python binding yet (nectar serve has it: tools, tool_choice, "
                "response_format and logprobs on /v1/chat/completions)" % name)


def _split_thinking(text: str, starts_inside: bool):
    """(reasoning, content) of a Qwen3 reply: the text up to </think>."""
    body = text
    if not starts_inside:
        stripped = body.lstrip()
        if not stripped.startswith("<think>"):
            return None, text
        body = stripped[len("<think>"):]
    end = body.find("</think>")
    if end < 0:
        return body.strip("\n"), ""
    return body[:end].strip("\n"), body[end + len("</think>"):].lstrip("\n")


class OpenAIMixin:
    """create_completion, create_chat_completion, create_embedding (Model)."""

    @property
    def model_name(self) -> str:
        """The name the dicts carry: the folder's name."""
        return os.path.basename(os.path.normpath(self.path))

    def _usage(self, n_prompt: int, n_completion: int) -> Dict[str, int]:
        return {"prompt_tokens": n_prompt, "completion_tokens": n_completion,
                "total_tokens": n_prompt + n_completion}

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
        finish_reason. max_tokens None: until the context is full."""
        _unsupported(logprobs=logprobs)
        kw = _sampling(locals())
        head = {"id": "cmpl-" + uuid.uuid4().hex, "object": "text_completion",
                "created": int(time.time()), "model": model or self.model_name}
        n_prompt = len(self.tokenize(prompt))
        if stream:
            return self._completion_chunks(head, prompt, max_tokens, kw)
        text = self.generate(prompt, max_tokens, **kw)
        return dict(head, choices=[{"text": text, "index": 0, "logprobs": None,
                                    "finish_reason": _FINISH_REASON[self.last_finish]}],
                    usage=self._usage(n_prompt, self.last_n_tokens))

    def _completion_chunks(self, head, prompt, max_tokens, kw) -> Iterator[Dict[str, Any]]:
        for piece in self.stream(prompt, max_tokens, **kw):
            yield dict(head, choices=[{"text": piece, "index": 0, "logprobs": None,
                                       "finish_reason": None}])
        yield dict(head, choices=[{"text": "", "index": 0, "logprobs": None,
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
                               enable_thinking: bool = True,
                               model: Optional[str] = None) -> Any:
        """OpenAI's chat completion: the model's chat template over messages,
        then generation; {"id", "object": "chat.completion", "created",
        "model", "choices": [{"index", "message": {"role": "assistant",
        "content", "reasoning_content"}, "finish_reason"}], "usage"}, the
        think block in reasoning_content as nectar serve splits it; with
        stream=True an iterator of "chat.completion.chunk" dicts (role,
        then content deltas, then the finish_reason)."""
        _unsupported(tools=tools, tool_choice=tool_choice, response_format=response_format,
                     logprobs=logprobs)
        kw = _sampling(locals())
        prompt = self.apply_chat_template(messages, True, enable_thinking)
        starts_inside = prompt.rstrip().endswith("<think>")
        head = {"id": "chatcmpl-" + uuid.uuid4().hex, "object": "chat.completion",
                "created": int(time.time()), "model": model or self.model_name}
        n_prompt = len(self.tokenize(prompt))
        if stream:
            return self._chat_chunks(head, prompt, max_tokens, kw)
        text = self.generate(prompt, max_tokens, **kw)
        reasoning, content = _split_thinking(text, starts_inside)
        message: Dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        return dict(head, choices=[{"index": 0, "message": message, "logprobs": None,
                                    "finish_reason": _FINISH_REASON[self.last_finish]}],
                    usage=self._usage(n_prompt, self.last_n_tokens))

    def _chat_chunks(self, head, prompt, max_tokens, kw) -> Iterator[Dict[str, Any]]:
        head = dict(head, object="chat.completion.chunk")
        yield dict(head, choices=[{"index": 0, "delta": {"role": "assistant"},
                                   "logprobs": None, "finish_reason": None}])
        for piece in self.stream(prompt, max_tokens, **kw):
            yield dict(head, choices=[{"index": 0, "delta": {"content": piece}, "logprobs": None,
                                       "finish_reason": None}])
        yield dict(head, choices=[{"index": 0, "delta": {}, "logprobs": None,
                                   "finish_reason": _FINISH_REASON[self.last_finish]}])

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
