"""AG-UI events (protocol 1.0): the stream one run of `POST /agui/{id}` sends, made from chainreact's own
events by one `AguiStream` per run, which keeps the protocol's pairing rules:

    started()                       RUN_STARTED {threadId, runId, protocolVersion}
    text(delta)                     TEXT_MESSAGE_START (once per message) then TEXT_MESSAGE_CONTENT
    reasoning(delta)                REASONING_START, REASONING_MESSAGE_START, then REASONING_MESSAGE_CONTENT
    tool_call(id, name, args)       TOOL_CALL_START, TOOL_CALL_ARGS (the arguments' JSON), TOOL_CALL_END
    tool_result(id, content)        TOOL_CALL_RESULT (only for a call started in this run)
    step(name, started)             STEP_STARTED / STEP_FINISHED
    state_snapshot(value), state_delta(ops)   STATE_SNAPSHOT / STATE_DELTA (RFC 6902 operations)
    finished(outcome=, usage=)      RUN_FINISHED; error(message, code) RUN_ERROR

An open text or reasoning message is closed (its END events) before anything else is sent, and the run's
last event closes whatever is still open (messages, steps), so every stream validates whatever the run
did. Tool call ids are unique in a run: an id seen again (two agent nodes of a chain whose models both
said `call_1`) is sent as `<id>~2`, and its result follows it. Every event has a `timestamp` (ms).
Field names and values are those of the official `ag-ui-protocol` package (tests parse what the server
sends with its types); this module writes them itself so that the server needs no extra package.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import orjson

PROTOCOL_VERSION = "1.0"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _json_args(arguments: Any) -> str:
    """A tool call's arguments as JSON text: a model's text as is when it is JSON, else as a JSON string."""
    if not isinstance(arguments, str):
        return orjson.dumps(arguments).decode()
    if not arguments.strip():
        return "{}"
    try:
        orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return orjson.dumps(arguments).decode()
    return arguments


class AguiStream:
    """The AG-UI events of one run (thread `thread_id`, run `run_id` as the client named them)."""

    def __init__(self, thread_id: str, run_id: str):
        self.thread_id, self.run_id = thread_id, run_id
        self._text: str | None = None  # the open text message's id
        self._last_text: str | None = None  # the last text message, parent of the tool calls after it
        self._reasoning: str | None = None
        self._calls: dict[str, str] = {}  # a call id as chainreact knows it -> as this stream sent it
        self._sent_calls: set[str] = set()
        self._steps: dict[str, int] = {}  # open steps by name (re-entrant)
        self.ended = False

    def _ev(self, type_: str, **fields: Any) -> dict[str, Any]:
        return {"type": type_, "timestamp": _now_ms(), **fields}

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{secrets.token_hex(8)}"

    # ------------------------------------------------------------------ the run

    def started(self, metadata: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        ev = self._ev("RUN_STARTED", threadId=self.thread_id, runId=self.run_id,
                      protocolVersion=PROTOCOL_VERSION)
        if metadata:
            ev["metadata"] = metadata
        return [ev]

    def finished(self, *, result: Any = None, outcome: dict[str, Any] | None = None,
                 usage: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        out = self._close_all()
        ev = self._ev("RUN_FINISHED", threadId=self.thread_id, runId=self.run_id)
        if result is not None:
            ev["result"] = result
        if outcome is not None:
            ev["outcome"] = outcome
        if usage:
            ev["usage"] = usage
        self.ended = True
        return [*out, ev]

    def error(self, message: str, code: str | None = None) -> list[dict[str, Any]]:
        out = self._close_all()
        ev = self._ev("RUN_ERROR", message=message or "the run failed")
        if code:
            ev["code"] = code
        self.ended = True
        return [*out, ev]

    # ------------------------------------------------------------------ messages

    def text(self, delta: str) -> list[dict[str, Any]]:
        if not delta:
            return []  # an empty delta carries nothing (the validator warns about them)
        out = self._close_reasoning()
        if self._text is None:
            self._text = self._last_text = self._id("msg")
            out.append(self._ev("TEXT_MESSAGE_START", messageId=self._text, role="assistant"))
        out.append(self._ev("TEXT_MESSAGE_CONTENT", messageId=self._text, delta=delta))
        return out

    def end_text(self) -> list[dict[str, Any]]:
        """Close the open text message (the next text starts a new one: a flow's next message)."""
        if self._text is None:
            return []
        ev = self._ev("TEXT_MESSAGE_END", messageId=self._text)
        self._text = None
        return [ev]

    def reasoning(self, delta: str) -> list[dict[str, Any]]:
        if not delta:
            return []
        out = self.end_text()
        if self._reasoning is None:
            self._reasoning = self._id("reasoning")
            out.append(self._ev("REASONING_START", messageId=self._reasoning))
            out.append(self._ev("REASONING_MESSAGE_START", messageId=self._reasoning, role="reasoning"))
        out.append(self._ev("REASONING_MESSAGE_CONTENT", messageId=self._reasoning, delta=delta))
        return out

    def _close_reasoning(self) -> list[dict[str, Any]]:
        if self._reasoning is None:
            return []
        rid, self._reasoning = self._reasoning, None
        return [self._ev("REASONING_MESSAGE_END", messageId=rid), self._ev("REASONING_END", messageId=rid)]

    # ------------------------------------------------------------------ tools

    def tool_call(self, call_id: str, name: str, arguments: Any) -> list[dict[str, Any]]:
        out = self._close_reasoning()
        parent = self._text or None
        out.extend(self.end_text())
        sent = call_id
        n = 1
        while sent in self._sent_calls:
            n += 1
            sent = f"{call_id}~{n}"
        self._sent_calls.add(sent)
        self._calls[call_id] = sent
        start = self._ev("TOOL_CALL_START", toolCallId=sent, toolCallName=name)
        if parent is not None:
            start["parentMessageId"] = parent
        out += [start, self._ev("TOOL_CALL_ARGS", toolCallId=sent, delta=_json_args(arguments)),
                self._ev("TOOL_CALL_END", toolCallId=sent)]
        return out

    def tool_result(self, call_id: str, content: Any, is_error: bool = False) -> list[dict[str, Any]]:
        sent = self._calls.get(call_id)
        if sent is None:
            return []  # a call of an earlier run (the client's own, or a question answered): it has it
        out = self._close_reasoning() + self.end_text()
        text = content if isinstance(content, str) else orjson.dumps(content).decode()
        ev = self._ev("TOOL_CALL_RESULT", messageId=self._id("result"), toolCallId=sent, content=text,
                      role="tool")
        if is_error:
            ev["metadata"] = {"isError": True}
        out.append(ev)
        return out

    def sent_id(self, call_id: str) -> str | None:
        """The id a call was sent with in this run (None: not sent)."""
        return self._calls.get(call_id)

    # ------------------------------------------------------------------ steps and state

    def step(self, name: str, started: bool) -> list[dict[str, Any]]:
        out = self._close_reasoning() + self.end_text()
        if started:
            self._steps[name] = self._steps.get(name, 0) + 1
            return [*out, self._ev("STEP_STARTED", stepName=name)]
        if not self._steps.get(name):
            return out  # never started here (a trace cut short): nothing to finish
        self._steps[name] -= 1
        if not self._steps[name]:
            del self._steps[name]
        return [*out, self._ev("STEP_FINISHED", stepName=name)]

    def state_snapshot(self, snapshot: Any) -> list[dict[str, Any]]:
        return [self._ev("STATE_SNAPSHOT", snapshot=snapshot)]

    def state_delta(self, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self._ev("STATE_DELTA", delta=ops)] if ops else []

    def _close_all(self) -> list[dict[str, Any]]:
        out = self._close_reasoning() + self.end_text()
        for name, count in list(self._steps.items()):
            out += [self._ev("STEP_FINISHED", stepName=name) for _ in range(count)]
        self._steps.clear()
        return out


def json_patch(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """RFC 6902 operations turning `before` into `after` (objects compared key by key, anything else
    replaced whole)."""
    if before == after:
        return []
    if not isinstance(before, dict) or not isinstance(after, dict):
        return [{"op": "replace", "path": path, "value": after}]
    ops: list[dict[str, Any]] = []
    for key in before:
        if key not in after:
            ops.append({"op": "remove", "path": f"{path}/{_pointer(key)}"})
    for key, value in after.items():
        where = f"{path}/{_pointer(key)}"
        if key not in before:
            ops.append({"op": "add", "path": where, "value": value})
        else:
            ops.extend(json_patch(before[key], value, where))
    return ops


def _pointer(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def token_usage(usage: Any, model: str | None = None) -> list[dict[str, Any]] | None:
    """A chainreact Usage as RUN_FINISHED's `usage` (one entry), or None when nothing was counted."""
    if usage is None or not (usage.prompt_tokens or usage.completion_tokens):
        return None
    entry: dict[str, Any] = {"inputTokens": usage.prompt_tokens, "outputTokens": usage.completion_tokens,
                             "totalTokens": usage.prompt_tokens + usage.completion_tokens}
    cached = getattr(usage, "cached_tokens", 0)
    if cached:
        entry["cachedInputTokens"] = cached
    if model:
        entry["model"] = model
    return [entry]


__all__ = ["PROTOCOL_VERSION", "AguiStream", "json_patch", "token_usage"]
