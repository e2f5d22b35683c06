"""The run snapshot: what a checkpoint holds, as a typed value with a stable JSON form (format 1).

The store keeps snapshots as opaque JSON; this module is the one agreed shape so that the agent loop,
the CLI, the server and the durable layer read the same thing. `to_dict()` is what `save_run` stores;
`from_dict()` checks a loaded snapshot and names the JSON path of anything wrong.

A snapshot is taken at a safe point: after a model call (its assistant message appended, its tool calls
pending) and after each tool step (the step's results moved from pending to completed). Resuming from
it runs the pending calls that have no completed result, and only those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..types import Message, ToolCall
from .base import RUN_STATUSES
from .codec import message_from_dict, message_to_dict
from .errors import StateError

FORMAT = 1
QUESTION_KINDS = ("ask_user", "approval")


@dataclass(slots=True)
class ToolOutcome:
    """A completed tool call: the result text the model will see, and whether it was an error."""

    content: str
    is_error: bool = False


@dataclass(slots=True)
class Question:
    """Something the run waits for: an answer (`ask_user`) or a decision on a tool call (`approval`).

    `id` is what answers are keyed by (the tool call id it belongs to, by convention). For ask_user,
    `schema` is the JSON schema the answer must match (None: any string). For approval, `tool` and
    `arguments` are the call awaiting approval; the answer is approve, reject with a reason, or edited
    arguments (the agent side defines that answer's shape).
    """

    id: str
    kind: str
    question: str = ""
    schema: dict[str, Any] | None = None
    tool: str | None = None
    arguments: str | None = None


@dataclass(slots=True)
class RunSnapshot:
    run_id: str
    status: str = "running"  # running | interrupted | done | failed | cancelled
    step: int = 0
    messages: list[Message] = field(default_factory=list)
    pending_tool_calls: list[ToolCall] = field(default_factory=list)
    completed_tool_results: dict[str, ToolOutcome] = field(default_factory=dict)  # by tool call id
    questions: list[Question] = field(default_factory=list)
    agent: str | None = None
    session: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # the agent side's own JSON-able fields

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "run_id": self.run_id,
            "status": self.status,
            "step": self.step,
            "agent": self.agent,
            "session": self.session,
            "messages": [message_to_dict(m) for m in self.messages],
            "pending_tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                                   for c in self.pending_tool_calls],
            "completed_tool_results": {k: {"content": v.content, "is_error": v.is_error}
                                       for k, v in self.completed_tool_results.items()},
            "questions": [{"id": q.id, "kind": q.kind, "question": q.question, "schema": q.schema,
                           "tool": q.tool, "arguments": q.arguments} for q in self.questions],
            "extra": self.extra,
        }

    @classmethod
    def from_dict(cls, data: Any) -> RunSnapshot:
        def bad(path: str, what: str) -> StateError:
            return StateError(f"run snapshot: {path}: {what}")

        if not isinstance(data, dict):
            raise bad("$", f"expected an object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise bad("$.format", f"expected {FORMAT}, got {data.get('format')!r} (written by another "
                      "chainreact version?)")
        run_id = data.get("run_id")
        if not isinstance(run_id, str) or not run_id:
            raise bad("$.run_id", "expected a non-empty string")
        status = data.get("status", "running")
        if status not in RUN_STATUSES:
            raise bad("$.status", f"{status!r} is not one of {', '.join(RUN_STATUSES)}")
        step = data.get("step", 0)
        if not isinstance(step, int) or step < 0:
            raise bad("$.step", f"expected a non-negative integer, got {step!r}")
        msgs = []
        for i, m in enumerate(_list(data, "messages", bad)):
            if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
                raise bad(f"$.messages[{i}]", "expected a message object with a role")
            try:
                msgs.append(message_from_dict(m))
            except (KeyError, TypeError) as e:
                raise bad(f"$.messages[{i}]", f"malformed message ({e})") from None
        pending = []
        for i, c in enumerate(_list(data, "pending_tool_calls", bad)):
            if not (isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("name"), str)):
                raise bad(f"$.pending_tool_calls[{i}]", "expected {id, name, arguments}")
            pending.append(ToolCall(c["id"], c["name"], str(c.get("arguments") or "")))
        completed = {}
        raw = data.get("completed_tool_results")
        raw = {} if raw is None else raw
        if not isinstance(raw, dict):
            raise bad("$.completed_tool_results", "expected an object keyed by tool call id")
        for k, v in raw.items():
            if not isinstance(v, dict) or not isinstance(v.get("content"), str):
                raise bad(f"$.completed_tool_results[{k!r}]", "expected {content, is_error}")
            completed[k] = ToolOutcome(v["content"], bool(v.get("is_error", False)))
        questions = []
        for i, q in enumerate(_list(data, "questions", bad)):
            if not (isinstance(q, dict) and isinstance(q.get("id"), str) and q.get("kind") in QUESTION_KINDS):
                raise bad(f"$.questions[{i}]",
                          f"expected {{id, kind}} with kind one of {', '.join(QUESTION_KINDS)}")
            questions.append(Question(q["id"], q["kind"], q.get("question") or "", q.get("schema"),
                                      q.get("tool"), q.get("arguments")))
        extra = data.get("extra")
        extra = {} if extra is None else extra
        if not isinstance(extra, dict):
            raise bad("$.extra", "expected an object")
        return cls(run_id, status, step, msgs, pending, completed, questions, data.get("agent"),
                   data.get("session"), extra)

    @property
    def calls_to_run(self) -> list[ToolCall]:
        """The pending calls with no completed result: what a resume must still execute."""
        return [c for c in self.pending_tool_calls if c.id not in self.completed_tool_results]


def _list(data: dict[str, Any], key: str, bad: Any) -> list[Any]:
    v = data.get(key)
    v = [] if v is None else v
    if not isinstance(v, list):
        raise bad(f"$.{key}", "expected a list")
    return v


async def save_snapshot(store: Any, snap: RunSnapshot, *, expect_version: int | None = None) -> int:
    """Save `snap` as its run's checkpoint (status, agent and session mirrored into the run's row)."""
    return int(await store.save_run(snap.run_id, snap.to_dict(), status=snap.status, agent=snap.agent,
                                    session=snap.session, expect_version=expect_version))


async def load_snapshot(store: Any, run_id: str) -> tuple[RunSnapshot, int]:
    """The run's last snapshot and its version (for `expect_version` on the next save).

    RunNotFoundError when there is no such run, StateError when the run has events but no checkpoint.
    """
    rec = await store.load_run(run_id)
    if rec.snapshot is None:
        raise StateError(f"run {run_id!r} has no checkpoint yet (only events) in {store.url.masked}")
    return RunSnapshot.from_dict(rec.snapshot), rec.version
