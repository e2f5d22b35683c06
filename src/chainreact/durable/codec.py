"""What crosses the workflow/activity boundary, as plain JSON values.

Temporal stores every activity input and result in the workflow history and hands them back on replay, so
they are plain JSON (dicts, lists, strings): no pickles, no classes that a later version of chainreact
might rename. Messages use the state store's lossless form (state/codec.py), so `reasoning` survives.
"""

from __future__ import annotations

from typing import Any

from ..agent.interrupt import Question, ToolInterrupt
from ..agent.result import RunResult
from ..agent.special_tools import LoadTools
from ..state.codec import message_from_dict, message_to_dict
from ..tools.base import ToolOutput
from ..types import BreakerEvent, Event, FailoverEvent, Message, ModelResponse, RetryEvent, ToolCall, Usage

JSON = dict[str, Any]

__all__ = ["JSON", "message_from_dict", "message_to_dict"]


def call_to_dict(c: ToolCall) -> JSON:
    return {"id": c.id, "name": c.name, "arguments": c.arguments}


def call_from_dict(d: JSON) -> ToolCall:
    return ToolCall(d["id"], d["name"], d.get("arguments", ""))


def messages_to_list(messages: list[Message]) -> list[JSON]:
    return [message_to_dict(m) for m in messages]


def messages_from_list(rows: list[JSON]) -> list[Message]:
    return [message_from_dict(r) for r in rows]


def usage_from_dict(d: JSON | None) -> Usage | None:
    if not d:
        return None
    return Usage(int(d.get("prompt_tokens", 0)), int(d.get("completion_tokens", 0)),
                 int(d.get("total_tokens", 0)), int(d.get("cached_tokens", 0)))


def response_to_dict(r: ModelResponse) -> JSON:
    return {"message": message_to_dict(r.message), "finish_reason": r.finish_reason,
            "usage": r.usage.to_dict() if r.usage is not None else None, "model": r.model,
            "endpoint": r.endpoint}


def response_from_dict(d: JSON) -> ModelResponse:
    return ModelResponse(message_from_dict(d["message"]), d.get("finish_reason"),
                         usage_from_dict(d.get("usage")), d.get("model"), d.get("endpoint"))


def output_to_dict(out: ToolOutput) -> JSON:
    """A tool's output; of its `data` only what the loop acts on travels (an interrupt, tools to load)."""
    d: JSON = {"content": out.content if isinstance(out.content, str) else str(out.content),
               "is_error": out.is_error}
    if isinstance(out.data, ToolInterrupt):
        ask = out.data
        d["interrupt"] = {"question": ask.question, "kind": ask.kind, "schema": ask.schema, "data": ask.data}
    elif isinstance(out.data, LoadTools):
        d["load_tools"] = list(out.data.names)
    return d


def output_from_dict(d: JSON) -> ToolOutput:
    data: Any = None
    if d.get("interrupt") is not None:
        i = d["interrupt"]
        data = ToolInterrupt(i.get("question", ""), kind=i.get("kind", "ask_user"), schema=i.get("schema"),
                             data=i.get("data"))
    elif d.get("load_tools") is not None:
        data = LoadTools(tuple(d["load_tools"]))
    return ToolOutput(d["content"], bool(d.get("is_error")), data)


_CLIENT_EVENTS: dict[str, type[Event]] = {"retry": RetryEvent, "failover": FailoverEvent,
                                          "breaker": BreakerEvent}


def client_event_to_dict(ev: Event) -> JSON:
    d = ev.to_dict()
    for k in ("run_id", "agent", "step", "seq", "path"):
        d.pop(k, None)
    return d


def client_event_from_dict(d: JSON) -> Event | None:
    """A resilience event (retry, failover, breaker) the model client reported inside an activity."""
    cls = _CLIENT_EVENTS.get(str(d.get("type")))
    if cls is None:
        return None
    return cls(**{k: v for k, v in d.items() if k != "type"})


def question_to_dict(q: Question) -> JSON:
    return {"id": q.id, "kind": q.kind, "question": q.question, "tool": q.tool, "arguments": q.arguments,
            "schema": q.schema, "data": q.data}


def question_from_dict(d: JSON) -> Question:
    return Question(d["id"], d.get("kind", "ask_user"), d.get("question", ""), d.get("tool", ""),
                    d.get("arguments", ""), d.get("schema"), d.get("data"))


def result_to_dict(r: RunResult) -> JSON:
    """Lossless (messages keep `reasoning`); `RunResult.to_dict()` is the public `--json` shape."""
    d: JSON = {"content": r.content, "messages": messages_to_list(r.messages), "usage": r.usage.to_dict(),
               "steps": r.steps, "stop_reason": r.stop_reason, "reasoning": r.reasoning,
               "metadata": dict(r.metadata)}
    if r.interruption is not None:
        d["interruption"] = {"questions": [question_to_dict(q) for q in r.interruption.questions],
                             "pending": [call_to_dict(c) for c in r.interruption.pending]}
    if r.session_values is not None:
        d["session_values"] = dict(r.session_values)
    return d


def result_from_dict(d: JSON) -> RunResult:
    from ..agent.interrupt import Interruption

    interruption = None
    if d.get("interruption"):
        i = d["interruption"]
        interruption = Interruption([question_from_dict(q) for q in i["questions"]],
                                    [call_from_dict(c) for c in i["pending"]])
    return RunResult(content=d["content"], messages=messages_from_list(d["messages"]),
                     usage=usage_from_dict(d.get("usage")) or Usage(), steps=int(d.get("steps", 0)),
                     stop_reason=d.get("stop_reason", "stop"), reasoning=d.get("reasoning"),
                     metadata=dict(d.get("metadata") or {}), interruption=interruption,
                     session_values=d.get("session_values"))


def event_from_dict(d: JSON) -> Event | None:
    """An agent event from its `to_dict()` form (as the event log holds it), or None for an unknown type:
    durable flow turns hand `agent` events back to callers typed, as in process."""
    import dataclasses

    from ..types import events as ev_types

    kinds = {c.type: c for c in vars(ev_types).values()
             if isinstance(c, type) and issubclass(c, Event) and c is not Event}
    cls = kinds.get(str(d.get("type")))
    if cls is None:
        return None
    args: JSON = {}
    for f in dataclasses.fields(cls):
        if f.name not in d:
            continue
        v = d[f.name]
        if f.name == "path":
            v = tuple(v or ())
        elif f.name == "call" and isinstance(v, dict):
            fn = v.get("function") or {}
            v = ToolCall(str(v.get("id", "")), str(fn.get("name", "")), str(fn.get("arguments", "")))
        elif f.name == "pending" and isinstance(v, list):
            v = [ToolCall(str(c.get("id", "")), str((c.get("function") or {}).get("name", "")),
                          str((c.get("function") or {}).get("arguments", ""))) for c in v]
        elif f.name == "message" and isinstance(v, dict):
            v = Message.from_openai(v)
        elif f.name == "messages" and isinstance(v, list):
            v = [Message.from_openai(m) for m in v]
        elif f.name == "usage" and isinstance(v, dict):
            v = usage_from_dict(v) or Usage()
        args[f.name] = v
    try:
        return cls(**args)
    except TypeError:
        return None  # a required field missing: not an event this version knows
