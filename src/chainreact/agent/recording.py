"""Recording a run's I/O: every model request and response and every tool call and result, as JSON records.

    rec = IORecorder()
    with plan_hook(rec):                 # plan.py: every plan made in this context goes through it
        result = await agent.run("2 + 3?")
    rec.take()                           # the records, in order

Every agent planned while the recorder is installed gets a *slot*: the run itself, a sub-agent it calls as a
tool (its `parent` is the calling slot and tool call), a rule chain's agent nodes, a flow turn's agent
nodes. The state store keeps the records in the run's event log as `io` events (state/runs.py, the
server's runs); `chainreact runs export` makes a cassette of them (chainreact.replay). The records:

    {"kind": "run", "agent", "document": {"id", "name", "source", "hash"}, "input"}     who recorded it
    {"kind": "slot", "slot", "agent", "parent": [slot, call id] | null, "model", "endpoint", "params"}
    {"kind": "model", "slot", "step", "request": {"keep", "messages", "tools"?, "stream"},
                                      "response": {"message", "finish_reason", "usage", "model"} | "error"}
    {"kind": "tool", "slot", "step", "id", "name", "arguments", "content", "is_error"}

A request's `messages` are those after the first `keep` of the slot's previous request (a run resends its
whole history at every step; the log stores each message once), and `tools` is left out when unchanged.

Keys and secrets never get in: the endpoints' keys (and the document's, `note_run`) are replaced by
`[redacted]` in every string, as are strings shaped like API keys (`sk-...`, `Bearer ...`), and endpoint URLs
lose their user info and query string. Nothing is recorded without an installed recorder.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import AsyncGenerator, Callable, Iterable
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import Message, ModelResponse, ToolCall
from .plan import RunPlan

REDACTED = "[redacted]"
_KEYLIKE = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}|\bBearer\s+[A-Za-z0-9._~+/=\-]{12,}")

# The (slot, tool call id) whose tool is running in this context: a plan made inside it is a nested agent.
current_call: ContextVar[tuple[str, str] | None] = ContextVar("chainreact_recording_call", default=None)

Record = dict[str, Any]
IO_EVENT = "io"  # a record's event type in a run's log: the recording, never shown to the run's readers


def redact(value: Any, known: Iterable[str] = ()) -> Any:
    """`value` (JSON) with every known secret and every key-shaped string replaced by [redacted]."""
    words = sorted({s for s in known if isinstance(s, str) and len(s) >= 4}, key=len, reverse=True)
    if not _may_hold(value, words):
        return value

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            for w in words:
                if w in v:
                    v = v.replace(w, REDACTED)
            return _KEYLIKE.sub(REDACTED, v) if ("sk-" in v or "Bearer" in v) else v
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    return walk(value)


def _may_hold(value: Any, words: list[str]) -> bool:
    """Whether `value` may hold a secret: one search of its JSON text (orjson) instead of a walk over every
    string, which cost a recorded run 10% more CPU. A word JSON would escape is always walked for."""
    try:
        blob = orjson.dumps(value)
    except TypeError:
        return True
    if b"sk-" in blob or b"Bearer" in blob:
        return True
    return any(not w.isprintable() or '"' in w or "\\" in w or w.encode() in blob for w in words)


def safe_url(url: str | None) -> str | None:
    """An endpoint URL without user info and query string (where keys sometimes hide)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def client_secrets(client: Any) -> list[str]:
    """The keys of a model client's endpoints (primary and backups)."""
    return [str(e.key) for e in getattr(client, "endpoints", ()) or () if getattr(e, "key", None)]


def message_dict(m: Message) -> dict[str, Any]:
    """A message as sent (OpenAI's form), with the reasoning kept beside it when there is one."""
    d = m.to_openai()
    if m.reasoning:
        d["reasoning_content"] = m.reasoning
    return d


def response_dict(r: ModelResponse) -> dict[str, Any]:
    return {"message": message_dict(r.message), "finish_reason": r.finish_reason,
            "usage": r.usage.to_dict() if r.usage is not None else None, "model": r.model}


def jsonable_input(data: Any) -> Any:
    """A run's input as JSON: text, or `{"messages": [...]}` for messages."""
    if isinstance(data, Message):
        return {"messages": [message_dict(data)]}
    if isinstance(data, list) and any(isinstance(m, Message) for m in data):
        return {"messages": [message_dict(m) if isinstance(m, Message) else m for m in data]}
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return {**data, "messages": [message_dict(m) if isinstance(m, Message) else m
                                     for m in data["messages"]]}
    try:
        orjson.dumps(data)
    except TypeError:
        return str(data)
    return data


def document_identity(agent: Any) -> dict[str, Any]:
    """Which document an agent was built from: its id, name, file and a hash of the file (or, for an agent
    made in Python, of its configuration without its endpoints and keys)."""
    source = getattr(agent, "source", None)
    digest = None
    if source:
        try:
            with open(source, "rb") as f:
                digest = "sha256:" + hashlib.sha256(f.read()).hexdigest()
        except OSError:
            digest = None
    if digest is None:
        cfg = getattr(agent, "config", None)
        data = cfg.model_dump(mode="json", exclude={"url", "key", "failover"}) if cfg is not None else {}
        digest = "sha256:" + hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return {"id": getattr(agent, "agent_id", None), "name": getattr(agent, "name", None), "source": source,
            "hash": digest}


# The records, built here for every recorder: the in-process one below and a durable run's activities
# (durable/recording.py), so both write the same shapes.


def agent_secrets(agent: Any) -> list[str]:
    """The keys an agent's document holds (its endpoint's and its failover endpoints')."""
    cfg = getattr(agent, "config", None)
    if cfg is None:
        return []
    return [k for k in (cfg.key, *(f.key for f in cfg.failover)) if k]


def run_record(agent: Any, data: Any) -> Record:
    """Who is recorded: the agent's document and the run's input (the first record of a run)."""
    return {"kind": "run", "agent": getattr(agent, "name", None), "document": document_identity(agent),
            "input": jsonable_input(data)}


def slot_record(slot: str, agent: str, client: Any, parent: tuple[str, str] | None) -> Record:
    """A planned agent's slot: its model (the client's first endpoint) and where it was called from."""
    spec = (getattr(client, "endpoints", None) or [None])[0]
    params = spec.params.model_dump(mode="json", exclude_unset=True) if spec is not None else {}
    return {"kind": "slot", "slot": slot, "agent": agent, "parent": parent,
            "model": getattr(spec, "model", None), "endpoint": safe_url(getattr(spec, "url", None)),
            "params": params}


def model_record(slot: str, step: int, request: dict[str, Any], response: ModelResponse | None = None
                 ) -> Record:
    rec: Record = {"kind": "model", "slot": slot, "step": step, "request": request}
    if response is not None:
        rec["response"] = response_dict(response)
    return rec


def tool_record(slot: str, step: int, call: ToolCall, out: ToolOutput) -> Record:
    """A tool call and its result. A tool that stopped to ask has no result yet: its record holds the
    question (`interrupt`), so that a replay stops where the run stopped; when it runs again with the
    answer, its later record (the same call) is the one a replay of the whole run uses."""
    rec: Record = {"kind": "tool", "slot": slot, "step": step, "id": call.id, "name": call.name,
                   "arguments": call.arguments, "content": out.content, "is_error": out.is_error}
    if _is_interrupt(out):
        ask = out.data
        rec["interrupt"] = {"question": ask.question, "kind": ask.kind, "schema": ask.schema,
                            "data": jsonable_input(ask.data)}
    return rec


class IORecorder:
    """A plan hook recording every planned agent's model and tool calls. `sink` gets each record as it is
    made; without one they are kept until `take()`. `close()` stops recording (a leaked context sees a
    closed recorder and records nothing)."""

    def __init__(self, sink: Callable[[Record], None] | None = None, *, secrets: Iterable[str] = ()):
        self.records: list[Record] = []
        self._sink = sink or self.records.append
        self.secrets = [s for s in secrets if s]
        self.closed = False

    def __call__(self, plan: RunPlan) -> RunPlan:
        if self.closed:
            return plan
        slot = _Slot(self, plan)
        return plan.replace(model=slot.model(plan.model), call_tool=slot.call_tool(plan.call_tool))

    def emit(self, record: Record, known: Iterable[str] = ()) -> None:
        if not self.closed:
            self._sink(redact(record, [*self.secrets, *known]))

    def note_run(self, agent: Any, data: Any) -> None:
        """Who is recorded: the agent's document and the run's input (the first record of a run)."""
        self.secrets += agent_secrets(agent)
        self.emit(run_record(agent, data))

    def take(self) -> list[Record]:
        out, self.records[:] = list(self.records), []
        return out

    def close(self) -> None:
        self.closed = True


class _Slot:
    """One planned agent's recording: its model calls numbered from 1, its tool calls by the step that
    asked for them."""

    def __init__(self, rec: IORecorder, plan: RunPlan):
        self.rec = rec
        self.id = secrets.token_hex(4)
        self.step = 0
        self.sent: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] | None = None
        self.known = client_secrets(plan.client)
        rec.emit(slot_record(self.id, plan.agent, plan.client, current_call.get()), self.known)

    def _request(self, messages: list[Message], tools: list[dict[str, Any]] | None,
                 stream: bool) -> dict[str, Any]:
        now = [message_dict(m) for m in messages]
        keep = 0
        for old, new in zip(self.sent, now, strict=False):
            if old != new:
                break
            keep += 1
        self.sent = now
        req: dict[str, Any] = {"keep": keep, "messages": now[keep:], "stream": stream}
        if tools != self.tools or self.step == 1:
            req["tools"] = tools
            self.tools = tools
        return req

    def model(self, inner: Any) -> Any:
        async def model(messages: list[Message], tools: list[dict[str, Any]] | None, *, stream: bool,
                        on_event: Callable[[Any], None]) -> AsyncGenerator[Any, None]:
            self.step += 1
            rec = model_record(self.id, self.step, self._request(messages, tools, stream))
            items = inner(messages, tools, stream=stream, on_event=on_event)
            try:
                async for item in items:
                    if isinstance(item, ModelResponse):
                        rec["response"] = response_dict(item)
                        self.rec.emit(rec, self.known)
                    yield item
            except Exception as e:
                rec["error"] = {"type": type(e).__name__, "message": str(e),
                                "status": getattr(e, "status", None)}
                self.rec.emit(rec, self.known)
                raise
            finally:
                await items.aclose()

        return model

    def call_tool(self, inner: Any) -> Any:
        async def call_tool(call: ToolCall, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
            token = current_call.set((self.id, call.id))
            try:
                out: ToolOutput = await inner(call, tool, args, ctx)
            finally:
                current_call.reset(token)
            self.rec.emit(tool_record(self.id, self.step, call, out), self.known)
            return out

        return call_tool


def _is_interrupt(out: ToolOutput) -> bool:
    from .interrupt import ToolInterrupt

    return isinstance(out.data, ToolInterrupt)


__all__ = ["IO_EVENT", "REDACTED", "IORecorder", "Record", "agent_secrets", "client_secrets", "current_call",
           "document_identity", "jsonable_input", "message_dict", "model_record", "redact", "response_dict",
           "run_record", "safe_url", "slot_record", "tool_record"]
