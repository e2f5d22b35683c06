"""Turning provider responses into chainreact's message types.

One code path for every "OpenAI-compatible" dialect we know of: `reasoning_content` / `reasoning` /
`reasoning_details` / Mistral thinking parts, content as a string or as a list of parts, tool-call deltas
with or without `index`, ids repeated on every fragment, arguments as one string or as an object, usage in
the last chunk, in a usage-only chunk or in Groq's `x_groq`, and `{"error": ...}` objects inside a 200.
Only choice 0 is read (the agent never asks for n > 1).
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from chainreact.errors import EmptyResponseError, MalformedResponseError, ModelError
from chainreact.types import (
    Message,
    ModelResponse,
    ReasoningChunk,
    StreamItem,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    Usage,
)

_MAX_ERROR_BODY = 4000  # characters of a provider error body kept in ModelError.body


def retryable_status(code: int | None) -> bool:
    """Whether an HTTP status (or a provider's numeric error code) is worth retrying and failing over:
    every 5xx, 408 (timeout) and 429 (rate limit), as the spec says ("429/5xx"). A 501 or 505 from one
    endpoint says nothing about a backup, so they fail over too; the retries cost little."""
    return code is not None and (500 <= code <= 599 or code == 408 or code == 429)


def _new_call_id() -> str:
    # Providers that omit ids still need unique ones: the tool result must name its call.
    return "call_" + os.urandom(8).hex()


def _args_str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()  # some servers send the arguments as a JSON object


def _reasoning_of(d: dict[str, Any]) -> str:
    """The reasoning text of a message or delta: reasoning_content, else reasoning, else the text of
    reasoning_details (one field per delta: providers that send several carry the same text in each)."""
    r = d.get("reasoning_content")
    if isinstance(r, str) and r:
        return r
    r = d.get("reasoning")
    if isinstance(r, str) and r:
        return r
    details = d.get("reasoning_details")
    if isinstance(details, list) and details:
        return "".join(x["text"] for x in details if isinstance(x, dict) and isinstance(x.get("text"), str))
    return ""


def _parts(parts: list[Any]) -> tuple[str, str]:
    """(text, reasoning) of list-form content: `text` parts and Mistral-style `thinking` parts."""
    text: list[str] = []
    thinking: list[str] = []
    for p in parts:
        if isinstance(p, str):
            text.append(p)
            continue
        if not isinstance(p, dict):
            continue
        kind = p.get("type")
        if kind == "text" and isinstance(p.get("text"), str):
            text.append(p["text"])
        elif kind == "thinking":
            inner = p.get("thinking")
            if isinstance(inner, str):
                thinking.append(inner)
            elif isinstance(inner, list):
                t, _ = _parts(inner)
                thinking.append(t)
    return "".join(text), "".join(thinking)


def error_message(payload: Any) -> str | None:
    """The human message of a provider error object, whatever its shape; None if it is not an error."""
    if isinstance(payload, list) and payload:  # Gemini wraps errors in a one-element list
        payload = payload[0]
    if not isinstance(payload, dict):
        return None
    err = payload.get("error")
    if err is None:
        if "choices" not in payload and isinstance(payload.get("detail"), str | list):
            return str(payload["detail"])  # FastAPI-style servers (vLLM, TGI)
        if "choices" not in payload and isinstance(payload.get("message"), str) and "object" not in payload:
            return str(payload["message"])
        return None
    if isinstance(err, str):
        return err or "unknown error"
    if isinstance(err, dict):
        msg = err.get("message") or err.get("msg") or err.get("detail")
        meta = err.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("raw"), str) and meta["raw"] not in str(msg):
            msg = f"{msg} ({meta['raw']})"  # OpenRouter puts the upstream's message here
        return str(msg) if msg else orjson.dumps(err).decode()
    return str(err)


def _error_code(payload: dict[str, Any]) -> int | None:
    err = payload.get("error")
    if isinstance(err, dict):
        for key in ("code", "status"):
            code = err.get(key)
            if isinstance(code, int):
                return code
            if isinstance(code, str) and code.isdigit():
                return int(code)
    return None


def stream_error(payload: dict[str, Any], endpoint: str) -> ModelError:
    """A ModelError for an error object received inside a 200 response (status None)."""
    msg = error_message(payload) or "unknown error"
    code = _error_code(payload)
    return ModelError(
        f"{endpoint}: the endpoint reported an error inside the response: {msg}",
        status=None,
        endpoint=endpoint,
        retryable=retryable_status(code),
        body=orjson.dumps(payload).decode()[:_MAX_ERROR_BODY],
    )


def _typename(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(v), type(v).__name__)


def shape_error(endpoint: str, path: str, value: Any, expected: str) -> MalformedResponseError:
    """The response has the wrong shape at `path`: retryable (another attempt or a backup may answer
    properly), with the offending value shown."""
    shown = orjson.dumps(value, default=str).decode()
    if len(shown) > 200:
        shown = shown[:200] + "…"
    return MalformedResponseError(
        f"{endpoint}: the response is not a valid chat completion: {path} is {_typename(value)} ({shown}), "
        f"expected {expected}",
        endpoint=endpoint, retryable=True, body=shown,
    )


def as_malformed(exc: Exception, endpoint: str) -> MalformedResponseError:
    """Safety net: a shape the checks missed that broke the parser is still a typed, retryable error."""
    err = MalformedResponseError(
        f"{endpoint}: the response is not a valid chat completion (the parser failed: "
        f"{type(exc).__name__}: {exc})", endpoint=endpoint, retryable=True,
    )
    err.__cause__ = exc
    return err


class _Call:
    __slots__ = ("args", "id", "key", "name", "pos")

    def __init__(self, key: int, pos: int, id: str | None, name: str | None) -> None:
        self.key = key
        self.pos = pos
        self.id = id
        self.name = name
        self.args: list[str] = []


class StreamAssembler:
    """Merges chat.completion.chunk objects into stream items and, at the end, one ModelResponse.

    `feed(obj, out)` appends the items to emit for one chunk to `out` (no per-chunk list allocation);
    `finish()` returns the complete response or raises EmptyResponseError when no finish_reason came.
    ToolCallChunk.index is the call's position in the final tool_calls list (order of first appearance).
    """

    __slots__ = ("_by_key", "_calls", "_content", "_endpoint", "_finish", "_model", "_reasoning",
                 "_refusal", "_usage", "chunks")

    def __init__(self, endpoint: str = "") -> None:
        self._endpoint = endpoint
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._calls: list[_Call] = []
        self._by_key: dict[int, _Call] = {}
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self._model: str | None = None
        self.chunks = 0

    def feed(self, obj: Any, out: list[StreamItem]) -> None:
        if not isinstance(obj, dict):
            raise shape_error(self._endpoint, "a stream event", obj, "an object")
        self.chunks += 1
        if obj.get("error") is not None:
            raise stream_error(obj, self._endpoint)
        if self._model is None:
            model = obj.get("model")
            if isinstance(model, str):
                self._model = model
        usage = obj.get("usage")
        if usage:
            if type(usage) is not dict:
                raise shape_error(self._endpoint, "usage", usage, "an object")
            self._usage = usage  # cumulative where repeated (Perplexity): the last one wins
        else:
            xg = obj.get("x_groq")
            if xg and isinstance(xg, dict) and xg.get("usage"):
                if type(xg["usage"]) is not dict:
                    raise shape_error(self._endpoint, "x_groq.usage", xg["usage"], "an object")
                self._usage = xg["usage"]
        choices = obj.get("choices")
        if choices is None:
            return
        if type(choices) is not list:
            raise shape_error(self._endpoint, "choices", choices, "a list")
        for i, choice in enumerate(choices):
            if type(choice) is not dict:
                raise shape_error(self._endpoint, f"choices[{i}]", choice, "an object")
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            where = "delta"
            if not delta:
                m = choice.get("message")
                if m is not None:
                    delta, where = m, "message"
            if delta is not None:
                if type(delta) is not dict:
                    raise shape_error(self._endpoint, f"choices[{i}].{where}", delta, "an object")
                if delta:
                    self._delta(delta, out, i, where)
            fr = choice.get("finish_reason")
            if fr:
                if type(fr) is not str:
                    raise shape_error(self._endpoint, f"choices[{i}].finish_reason", fr, "a string")
                self._finish = fr

    def _delta(self, d: dict[str, Any], out: list[StreamItem], i: int, where: str) -> None:
        content = d.get("content")
        if content:
            if type(content) is str:
                self._content.append(content)
                out.append(TextChunk(content))
            elif type(content) is list:
                text, thinking = _parts(content)
                if thinking:
                    self._reasoning.append(thinking)
                    out.append(ReasoningChunk(thinking))
                if text:
                    self._content.append(text)
                    out.append(TextChunk(text))
            else:
                raise shape_error(self._endpoint, f"choices[{i}].{where}.content", content,
                                  "a string or a list of parts")
        if "reasoning_content" in d or "reasoning" in d or "reasoning_details" in d:
            r = _reasoning_of(d)
            if r:
                self._reasoning.append(r)
                out.append(ReasoningChunk(r))
        refusal = d.get("refusal")
        if refusal and isinstance(refusal, str):
            self._refusal.append(refusal)
        calls = d.get("tool_calls")
        if calls:
            if type(calls) is not list:
                raise shape_error(self._endpoint, f"choices[{i}].{where}.tool_calls", calls, "a list")
            for j, frag in enumerate(calls):
                if type(frag) is not dict:
                    raise shape_error(self._endpoint, f"choices[{i}].{where}.tool_calls[{j}]", frag,
                                      "an object")
                self._tool_fragment(frag, out, f"choices[{i}].{where}.tool_calls[{j}]")

    def _tool_fragment(self, frag: dict[str, Any], out: list[StreamItem], path: str) -> None:
        fn, fid, name = _call_fields(frag, self._endpoint, path)
        args = _args_str(fn.get("arguments"))
        key = frag.get("index")
        call: _Call | None
        if isinstance(key, int):
            call = self._by_key.get(key)
            if call is not None and fid and call.id and fid != call.id:
                # Same index, new id: a provider numbering every parallel call 0. Start a new call.
                call = None
                key = -1 - len(self._calls)
        else:
            # No index: an id we know continues that call; a new id starts one; no id continues the last.
            call = None
            if fid:
                for c in self._calls:
                    if c.id == fid:
                        call = c
                        break
            elif self._calls:
                call = self._calls[-1]
            key = call.key if call is not None else -1 - len(self._calls)
        is_new = call is None
        if call is None:
            call = _Call(key, len(self._calls), fid, name)
            self._calls.append(call)
            self._by_key[key] = call
        else:
            if fid and not call.id:
                call.id = fid
            if name and not call.name:
                call.name = name
        if args:
            call.args.append(args)
        if is_new or args:
            out.append(ToolCallChunk(call.pos, fid if is_new else None, name if is_new else None, args))

    def finish(self) -> ModelResponse:
        if self._finish is None:
            got = f"{self.chunks} chunk(s)" if self.chunks else "no chunks"
            raise EmptyResponseError(
                f"{self._endpoint}: the stream ended without a finish_reason ({got}); the answer is "
                "incomplete (connection cut or provider failure)",
                endpoint=self._endpoint, retryable=True,
            )
        return self.response()

    def response(self) -> ModelResponse:
        """What has been assembled so far, as a response (finish_reason may be None)."""
        tool_calls = None
        if self._calls:
            ordered = sorted(self._calls, key=_call_order)
            tool_calls = [ToolCall(c.id or _new_call_id(), c.name or "", "".join(c.args) or "{}")
                          for c in ordered]
        reasoning = "".join(self._reasoning)
        msg = Message("assistant", "".join(self._content), tool_calls, reasoning=reasoning or None)
        extra: dict[str, Any] = {}
        if self._refusal:
            extra["refusal"] = "".join(self._refusal)
        try:
            usage = Usage.from_openai(self._usage)
        except (TypeError, ValueError, AttributeError) as e:  # e.g. "prompt_tokens": "many"
            raise as_malformed(e, self._endpoint) from e
        return ModelResponse(msg, self._finish, usage, self._model, self._endpoint, extra)


def _call_fields(tc: dict[str, Any], endpoint: str, path: str
                 ) -> tuple[dict[str, Any], str | None, str | None]:
    """(function object, id, name) of one tool call or fragment, type-checked."""
    fn = tc.get("function")
    if fn is None:
        fn = {}
    elif type(fn) is not dict:
        raise shape_error(endpoint, f"{path}.function", fn, "an object")
    fid = tc.get("id") or None
    if fid is not None and type(fid) is not str:
        raise shape_error(endpoint, f"{path}.id", fid, "a string")
    name = fn.get("name") or None
    if name is not None and type(name) is not str:
        raise shape_error(endpoint, f"{path}.function.name", name, "a string")
    return fn, fid, name


def _call_order(c: _Call) -> tuple[int, int]:
    # Provider indices first (in index order); calls keyed by appearance (negative keys) after, in order.
    return (0, c.key) if c.key >= 0 else (1, -c.key)


def parse_completion(obj: Any, endpoint: str = "") -> ModelResponse:
    """Parse a non-streaming chat.completion object (raises ModelError for an error object, and
    MalformedResponseError, retryable, for anything that is not a completion)."""
    try:
        return _parse_completion(obj, endpoint)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as e:
        raise as_malformed(e, endpoint) from e


def _parse_completion(obj: Any, endpoint: str) -> ModelResponse:
    if not isinstance(obj, dict):
        raise MalformedResponseError(
            f"{endpoint}: expected a chat.completion JSON object, got {type(obj).__name__}",
            endpoint=endpoint, retryable=True,
        )
    if obj.get("error") is not None:
        raise stream_error(obj, endpoint)
    choices = obj.get("choices")
    if choices is not None and type(choices) is not list:
        raise shape_error(endpoint, "choices", choices, "a list")
    if not choices:
        raise MalformedResponseError(
            f"{endpoint}: the response has no choices: {orjson.dumps(obj).decode()[:300]}",
            endpoint=endpoint, retryable=True, body=orjson.dumps(obj).decode()[:_MAX_ERROR_BODY],
        )
    for i, c in enumerate(choices):
        if type(c) is not dict:
            raise shape_error(endpoint, f"choices[{i}]", c, "an object")
    ci = next((i for i, c in enumerate(choices) if c.get("index", 0) == 0), 0)
    choice = choices[ci]
    m = choice.get("message")
    where = "message"
    if not m and choice.get("delta") is not None:
        m, where = choice["delta"], "delta"
    if m is None:
        m = {}
    if type(m) is not dict:
        raise shape_error(endpoint, f"choices[{ci}].{where}", m, "an object")
    content = m.get("content")
    reasoning = _reasoning_of(m)
    if isinstance(content, list):
        text, thinking = _parts(content)
        content = text
        reasoning = reasoning or thinking
    elif content is None:
        content = ""
        if isinstance(choice.get("text"), str):
            content = choice["text"]  # legacy completions shape, still sent by some servers
    elif not isinstance(content, str):
        raise shape_error(endpoint, f"choices[{ci}].{where}.content", content, "a string or a list of parts")
    tool_calls = None
    raw_calls = m.get("tool_calls")
    if raw_calls:
        if type(raw_calls) is not list:
            raise shape_error(endpoint, f"choices[{ci}].{where}.tool_calls", raw_calls, "a list")
        tool_calls = []
        for j, tc in enumerate(raw_calls):
            path = f"choices[{ci}].{where}.tool_calls[{j}]"
            if type(tc) is not dict:
                raise shape_error(endpoint, path, tc, "an object")
            fn, fid, name = _call_fields(tc, endpoint, path)
            args = _args_str(fn.get("arguments")) or "{}"
            tool_calls.append(ToolCall(fid or _new_call_id(), name or "", args))
    extra: dict[str, Any] = {}
    refusal = m.get("refusal")
    if isinstance(refusal, str) and refusal:
        extra["refusal"] = refusal
    usage = obj.get("usage")
    where = "usage"
    if not usage and isinstance(obj.get("x_groq"), dict):
        usage, where = obj["x_groq"].get("usage"), "x_groq.usage"
    if usage and type(usage) is not dict:
        raise shape_error(endpoint, where, usage, "an object")
    msg = Message("assistant", content, tool_calls, reasoning=reasoning or None)
    finish = choice.get("finish_reason")
    if finish is not None and type(finish) is not str:
        raise shape_error(endpoint, f"choices[{ci}].finish_reason", finish, "a string")
    model = obj.get("model")
    if finish is None:
        # A complete non-streamed answer without finish_reason (some local servers): call it by content.
        finish = "tool_calls" if tool_calls else "stop"
    return ModelResponse(msg, finish, Usage.from_openai(usage), model if isinstance(model, str) else None,
                         endpoint, extra)


def loads(data: bytes, endpoint: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        raise MalformedResponseError(
            f"{endpoint}: invalid JSON from the endpoint: {data[:200].decode('utf-8', 'replace')!r}",
            endpoint=endpoint, retryable=True, body=data[:_MAX_ERROR_BODY].decode("utf-8", "replace"),
        ) from None
