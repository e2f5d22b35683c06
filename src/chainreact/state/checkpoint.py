"""The run snapshot: what a checkpoint holds, as a typed value with a stable JSON form (format 1).

The store keeps snapshots as opaque JSON; this module is the one agreed shape so that the agent loop,
the CLI, the server and the durable layer read the same thing. `to_dict()` is what `save_run` stores;
`from_dict()` checks a loaded snapshot and names the JSON path of anything wrong.

A snapshot is taken at a safe point: after a model call (its assistant message appended, its tool calls
pending) and after each tool step (the step's results moved from pending to completed). Resuming from
it runs the pending calls that have no completed result, and only those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..types import Message, ToolCall
from .codec import message_from_dict, message_to_dict
from .errors import StateError

FORMAT = 1
RUN_STATUSES = ("running", "interrupted", "done", "failed", "cancelled")
QUESTION_KINDS = ("ask_user", "approval")  # the kinds chainreact answers specially; others are allowed


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
        return snapshot_dict(self.run_id, self.status, self.step, self.agent, self.session, self.messages,
                             self.pending_tool_calls, self.completed_tool_results, self.questions, self.extra)

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
            if not (isinstance(q, dict) and isinstance(q.get("id"), str) and isinstance(q.get("kind"), str)
                    and q["kind"]):
                raise bad(f"$.questions[{i}]", "expected {id, kind} (kind: ask_user, approval or your own)")
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


def snapshot_dict(run_id: str, status: str, step: int, agent: str | None, session: str | None,
                  messages: Sequence[Message], pending: Sequence[ToolCall], completed: Mapping[str, Any],
                  questions: Sequence[Question], extra: dict[str, Any]) -> dict[str, Any]:
    """A snapshot's JSON form (`RunSnapshot.to_dict`), from its fields: the agent's checkpoint hook
    (state/runs.py) builds it straight from the loop's values, without a RunSnapshot in between.
    `completed` values need `content` and `is_error` (ToolOutcome, or the loop's ToolOutput)."""
    return {
        "format": FORMAT,
        "run_id": run_id,
        "status": status,
        "step": step,
        "agent": agent,
        "session": session,
        "messages": [message_to_dict(m) for m in messages],
        "pending_tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in pending],
        "completed_tool_results": {k: {"content": v.content, "is_error": v.is_error}
                                   for k, v in completed.items()},
        "questions": [{"id": q.id, "kind": q.kind, "question": q.question, "schema": q.schema,
                       "tool": q.tool, "arguments": q.arguments} for q in questions],
        "extra": extra,
    }


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


def check_answers(snap: RunSnapshot, answers: dict[str, Any] | None) -> dict[str, Any]:
    """Answers to an interrupted run's questions, checked; returns them normalised, or raises StateError
    naming the question and what is wrong (nothing is changed either way).

    Keys are question ids; every question needs an answer. An answer must match the question's JSON
    schema (for `ask_user` without one: a string; for other kinds without one: anything). An `approval`
    answer is `{"approve": true}`,
    `{"approve": false, "reason": "..."}` or `{"arguments": {...}}` (edited arguments, approved; the
    agent checks them against the tool's schema), or the shorthands true / false / "approve" / "reject";
    it is normalised to `{"approve": bool, "reason": str | None, "arguments": dict | None}`.
    """
    from ..tools.jsonschema_lite import validate

    where = f"run {snap.run_id!r}"
    answers = dict(answers or {})
    asked = {q.id: q for q in snap.questions}
    unknown = sorted(set(answers) - set(asked))
    if unknown:
        raise StateError(f"{where}: no question {', '.join(map(repr, unknown))} (asked: "
                         f"{', '.join(map(repr, asked)) or 'none'})")
    missing = [qid for qid in asked if qid not in answers]
    if missing:
        raise StateError(f"{where}: no answer for {', '.join(map(repr, missing))}")
    out: dict[str, Any] = {}
    for qid, q in asked.items():
        a = answers[qid]
        if q.kind != "approval":
            schema: Any = q.schema
            if schema is None:
                schema = {"type": "string"} if q.kind == "ask_user" else True
            errors = validate(a, schema)
            if errors:
                raise StateError(f"{where}: the answer to {qid!r} ({q.question!r}) does not match the asked "
                                 f"schema: {'; '.join(errors[:3])}")
            out[qid] = a
        else:
            out[qid] = _approval(where, qid, a)
    return out


def _approval(where: str, qid: str, a: Any) -> dict[str, Any]:
    if a is True or a == "approve":
        return {"approve": True, "reason": None, "arguments": None}
    if a is False or a == "reject":
        return {"approve": False, "reason": None, "arguments": None}
    shape = ('expected {"approve": true}, {"approve": false, "reason": "..."}, {"arguments": {...}}, '
             "true/false or \"approve\"/\"reject\"")
    if not isinstance(a, dict) or not set(a) <= {"approve", "reason", "arguments"} or not a:
        raise StateError(f"{where}: approval {qid!r}: {shape}, got {a!r}")
    args = a.get("arguments")
    approve = a.get("approve", args is not None)
    reason = a.get("reason")
    if not isinstance(approve, bool) or (reason is not None and not isinstance(reason, str)) or \
            (args is not None and not isinstance(args, dict)) or (args is not None and approve is False):
        raise StateError(f"{where}: approval {qid!r}: {shape}, got {a!r}")
    return {"approve": approve, "reason": reason, "arguments": args}


async def prepare_resume(store: Any, run_id: str,
                         answers: dict[str, Any] | None = None) -> tuple[RunSnapshot, int, dict[str, Any]]:
    """What a resume starts from: the run's snapshot, its version (save the next one with
    `expect_version=` it, so two resumers cannot both go on) and the checked answers. Changes nothing.

    An `interrupted` run needs an answer to each question; a `running` one (its process died) takes
    none; a finished run (done, failed, cancelled) cannot be resumed. RunNotFoundError for an unknown id.
    """
    snap, version = await load_snapshot(store, run_id)
    if snap.status in ("done", "failed", "cancelled"):
        raise StateError(f"run {run_id!r} is {snap.status}: only an interrupted run, or one whose process "
                         "died while running, can be resumed")
    if snap.status == "running":
        if answers:
            raise StateError(f"run {run_id!r} is not interrupted (status running): it asked nothing, so it "
                             "takes no answers")
        return snap, version, {}
    return snap, version, check_answers(snap, answers)
