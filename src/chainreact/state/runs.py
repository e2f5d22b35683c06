"""Runs with a store: the agent's safe points saved as RunSnapshots, and runs resumed from them.

    result = await run_with_store(agent, store, "weather in Lyon?", session="s1")
    if result.stop_reason == "interrupted":
        ...  # later, maybe in another process:
    result = await resume_with_store(agent, store, result.metadata["run_id"], {"call_2": "C"})

The agent knows no store (agent/interrupt.py): it awaits a checkpoint function at every safe point and
takes a `Resume`. This module is that function and that `Resume`, over `chainreact.state`.

A run with a store is also recorded (agent/recording.py: every model request and response, every tool call
and result, keys redacted): the records are kept in memory and saved in the snapshot's `extra.io` when the
run stops (done, failed, cancelled, or interrupted: a resume goes on with them), one write the run makes
anyway, so `chainreact runs export` can make a cassette of the run. A run whose process died loses the
records of its lost part (its resume records the rest).
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..agent import Agent, Checkpoint, Resume, RunResult
from ..agent.plan import plan_hook
from ..agent.recording import IORecorder
from ..tools.base import ToolOutput
from ..types import Message
from .checkpoint import Question, RunSnapshot, ToolOutcome, prepare_resume, save_snapshot, snapshot_dict
from .errors import StateError


def snapshot_of(cp: Checkpoint, *, session: str | None = None,
                extra: dict[str, Any] | None = None) -> RunSnapshot:
    """The agent's checkpoint as a RunSnapshot (the messages copied: the loop's list lives on)."""
    return RunSnapshot(
        run_id=cp.run_id, status="interrupted" if cp.point == "interrupted" else "running", step=cp.step,
        messages=list(cp.messages), pending_tool_calls=list(cp.pending),
        completed_tool_results={k: ToolOutcome(v.content, v.is_error) for k, v in cp.completed.items()},
        questions=[Question(q.id, q.kind, q.question, q.schema, q.tool, q.arguments) for q in cp.questions],
        agent=cp.agent, session=session, extra={**(extra or {}), "point": cp.point})


class StoreCheckpointer:
    """The agent's checkpoint function: saves each safe point, each save expecting the version of the one
    before (the first expects none, or the version a resume started from), so two processes going on
    with one run cannot both save: the second gets RunConflictError."""

    # `store` is a chainreact.state Store (typed Any: base.Store's run_agent/resume_run import this module)
    def __init__(self, store: Any, *, session: str | None = None, version: int = 0,
                 extra: dict[str, Any] | None = None):
        self.store = store
        self.session = session
        self.extra = dict(extra or {})  # the caller's own JSON fields, kept in every snapshot's `extra`
        self.version = version
        self._last: RunSnapshot | None = None
        self._saved: tuple[Checkpoint, list[Message], dict[str, Any]] | None = None  # `last`, not built yet
        self.recorder: IORecorder | None = None  # the run's I/O, saved in `extra.io` when it stops
        self._io: list[dict[str, Any]] = []

    @property
    def last(self) -> RunSnapshot | None:
        """The snapshot saved last (built when asked: only a failed run's final save needs it)."""
        if self._saved is not None:
            cp, messages, extra = self._saved
            snap = snapshot_of(cp, session=self.session)
            snap.messages, snap.extra = messages, extra
            self._last, self._saved = snap, None
        return self._last

    @last.setter
    def last(self, snap: RunSnapshot | None) -> None:
        self._last, self._saved = snap, None

    def record(self, agent: Agent, data: Any) -> IORecorder:
        """Record the run's I/O (install the returned recorder as a plan hook around the run); a resumed
        run's records follow those its earlier part saved."""
        self._io = list(self.extra.pop("io", None) or [])
        self.recorder = IORecorder()
        self.recorder.note_run(agent, data)
        return self.recorder

    def _with_io(self, snap: RunSnapshot) -> RunSnapshot:
        if self.recorder is not None:
            snap.extra = {**snap.extra, "io": [*self._io, *self.recorder.records]}
        return snap

    async def __call__(self, cp: Checkpoint) -> None:
        if cp.point == "interrupted" or cp.questions:
            snap = self._with_io(snapshot_of(cp, session=self.session, extra=self.extra))
            self.version = await save_snapshot(self.store, snap, expect_version=self.version)
            self.last = snap
            return
        # The safe points of a running run, several per step: the snapshot's JSON form straight from the
        # checkpoint (what snapshot_of(cp).to_dict() gives, without building the RunSnapshot).
        messages, extra = list(cp.messages), {**self.extra, "point": cp.point}
        data = snapshot_dict(cp.run_id, "running", cp.step, cp.agent, self.session, messages, cp.pending,
                             cp.completed, (), extra)
        self.version = int(await self.store.save_run(cp.run_id, data, status="running", agent=cp.agent,
                                                     session=self.session, expect_version=self.version))
        self._saved, self._last = (cp, messages, extra), None

    async def finish(self, result: RunResult | None, run_id: str | None, agent: str,
                     error: BaseException | None = None) -> None:
        """The run's last save: done (with the final messages), failed, or left interrupted."""
        if result is not None and result.stop_reason == "interrupted":
            return  # the `interrupted` safe point is already saved
        if result is not None:
            run_id = str(result.metadata.get("run_id") or run_id or "")
            snap = RunSnapshot(run_id, "cancelled" if result.stop_reason == "cancelled" else "done",
                               result.steps, list(result.messages), agent=agent, session=self.session,
                               extra={**self.extra, "stop_reason": result.stop_reason,
                                      "content": result.content})
        elif self.last is not None:
            snap = self.last
            snap.status = "failed"
            snap.extra = {**snap.extra, "error": f"{type(error).__name__}: {error}"}
        else:
            return  # failed before its first safe point: nothing to resume from
        if self.recorder is not None:
            self.recorder.close()
            snap = self._with_io(snap)
        if snap.run_id:
            self.version = await save_snapshot(self.store, snap, expect_version=self.version)


def recording(ckpt: StoreCheckpointer | None, agent: Agent,
              data: Any) -> contextlib.AbstractContextManager[Any]:
    """The block in which `agent`'s run on `data` is recorded into `ckpt` (nothing without one): runs
    started in it (`agent.start`: its task copies the context) are recorded."""
    return plan_hook(ckpt.record(agent, data)) if ckpt is not None else contextlib.nullcontext()


async def run_with_store(agent: Agent, store: Any, input: Any = None, *, session: str | None = None,
                         extra: dict[str, Any] | None = None, **kwargs: Any) -> RunResult:
    """`agent.run(input)` with a checkpoint saved at every safe point and a final status (done, failed,
    cancelled, or interrupted with its questions). The run id is `result.metadata["run_id"]`. `extra`
    (JSON) is kept in every snapshot of the run, resumes included (e.g. the CLI's document path)."""
    ckpt = StoreCheckpointer(store, session=session, extra=extra)
    try:
        with recording(ckpt, agent, input):
            result = await agent.run(input, checkpoint=ckpt, **kwargs)
    except Exception as e:
        await ckpt.finish(None, None, agent.name, e)
        raise
    await ckpt.finish(result, None, agent.name)
    return result


async def resume_with_store(agent: Agent, store: Any, run_id: str, answers: dict[str, Any] | None = None,
                            **kwargs: Any) -> RunResult:
    """Go on with a run from its last checkpoint: an interrupted one with `answers` (by question id), or
    one whose process died. Everything is checked before anything runs (see `prepare_resume`); the run
    is then claimed (saved as running, expecting the loaded version) so a second resumer fails with
    RunConflictError; completed tool calls are never run again."""
    resume, ckpt = await claim_resume(agent, store, run_id, answers)
    try:
        with recording(ckpt, agent, None):
            result = await agent.run(resume=resume, checkpoint=ckpt, **kwargs)
    except Exception as e:
        await ckpt.finish(None, run_id, agent.name, e)
        raise
    await ckpt.finish(result, run_id, agent.name)
    return result


async def claim_resume(agent: Agent, store: Any, run_id: str, answers: dict[str, Any] | None = None
                       ) -> tuple[Resume, StoreCheckpointer]:
    """The checks and the claim of `resume_with_store`, for callers that drive the run themselves (the
    server's `agent.start(resume=..., checkpoint=...)`): nothing has run yet when this returns; finish
    with `ckpt.finish(result, run_id, agent.name)`."""
    snap, version, resume = await claim(store, run_id, answers, agent=agent)
    ckpt = StoreCheckpointer(store, session=snap.session, version=version,
                             extra={k: v for k, v in snap.extra.items() if k not in _OWN_EXTRA})
    ckpt.last = snap
    return resume, ckpt


async def claim(store: Any, run_id: str, answers: dict[str, Any] | None, *,
                agent: Agent | None = None) -> tuple[RunSnapshot, int, Resume]:
    """A stored run that waits for `answers` (or whose process died), claimed before anything runs: saved as
    running expecting the version read, so a second process answering the same question gets
    RunConflictError. With `agent`, an approval's edited arguments are checked against its tool first
    (StateError). The snapshot, the version saved and where the run goes on from. The one claim of
    `claim_resume` (agent runs), `flows.driver.drive` and durable flow nodes."""
    snap, version, checked = await prepare_resume(store, run_id, answers)
    if agent is not None:
        await _check_edits(agent, snap, checked)
    snap.status, snap.questions = "running", []
    version = await save_snapshot(store, snap, expect_version=version)
    return snap, version, resume_of(snap, checked)


def resume_of(snap: RunSnapshot, answers: dict[str, Any]) -> Resume:
    """Where a stored run goes on from: its messages, step, pending calls, completed results, answers."""
    completed = {k: ToolOutput(v.content, v.is_error) for k, v in snap.completed_tool_results.items()}
    return Resume(snap.messages, snap.step, snap.pending_tool_calls, completed, answers, snap.run_id)


def session_messages(messages: list[Message]) -> list[Message]:
    """What a finished run adds to its session: its messages from its last user message (the prompt) on."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=0)
    return messages[last_user:]


# What the checkpointer itself writes into extra (`io`: taken over by the resumed run's `record`).
_OWN_EXTRA = ("point", "error", "stop_reason", "content")


async def _check_edits(agent: Agent, snap: RunSnapshot, answers: dict[str, Any]) -> None:
    """Edited arguments of an approval must fit the tool's schema: refused here, before anything runs."""
    from ..agent.interrupts import AnswerError, check_edited_arguments

    edits = [(q, answers[q.id]["arguments"]) for q in snap.questions
             if q.kind == "approval" and isinstance(answers.get(q.id), dict)
             and answers[q.id].get("arguments") is not None]
    if not edits:
        return
    tools = {t.name: t for t in await agent.tools()}
    for q, args in edits:
        tool = tools.get(q.tool or "")
        if tool is None:
            continue  # the loop reports an unknown tool to the model
        try:
            where = f"run {snap.run_id!r}: approval {q.id!r}"
            check_edited_arguments(getattr(tool, "inner", tool), args, where)
        except AnswerError as e:
            raise StateError(str(e)) from None
