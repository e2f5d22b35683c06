"""`chainreact run ... --state URL --session KEY` and `chainreact runs resume RUN_ID [--answer JSON]`.

A run with a store is checkpointed (state/runs.py); its snapshots carry the document's path and the
session, so `runs resume` rebuilds the agent from the same document. With `--session`, the session's
history is the run's context and the run's new messages (from the prompt on) are appended to it when it
finishes. An interrupted run prints its questions and the `runs resume` command that answers them (exit 3,
cli/run_outcome.py); on a terminal it asks them at the prompt and goes on.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from .common import EXIT_OK, EXIT_WAITING, UsageError, write
from .run_outcome import is_empty, report_empty, report_waiting, resume_command


def parse_answers(raw: str | None, questions: list[Any]) -> dict[str, Any]:
    """`--answer JSON`: an object keyed by question ids, or (one question) the answer itself. Text that is
    not JSON is a string answer."""
    if raw is None:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    ids = {q.id for q in questions}
    if isinstance(value, dict) and value and set(value) <= ids:
        return value
    if len(questions) == 1:
        return {questions[0].id: value}
    raise UsageError(f"--answer: the run asks {len(questions)} questions: give a JSON object keyed by their "
                     f"ids ({', '.join(sorted(ids))})")


async def _finish(store: Any, result: Any, session: str | None, run_id: str, as_json: bool) -> int:
    from ..state.runs import session_messages

    if result.stop_reason != "interrupted" and session:
        await store.append(session, session_messages(result.messages))
    if as_json:
        out = result.to_dict()
        out["run_id"] = run_id
        if result.interruption is not None:
            out["questions"] = [{"id": q.id, "kind": q.kind, "question": q.question, "tool": q.tool,
                                 "arguments": q.arguments, "schema": q.schema}
                                for q in result.interruption.questions]
        write(json.dumps(out, ensure_ascii=False) + "\n")
    if result.stop_reason == "interrupted":
        return EXIT_WAITING
    if is_empty(result.content):
        return report_empty(result.stop_reason, result.steps)
    if not as_json:
        write(result.content + ("" if result.content.endswith("\n") else "\n"))
    return EXIT_OK


def _show_questions(result: Any, run_id: str, url: str | None, args: Any) -> int:
    return report_waiting(result.interruption.questions, f"for an answer (run {run_id}, kept in the store)",
                          resume_command(args, run_id, url, result.interruption.questions))


def _ask_at_prompt(questions: list[Any]) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for q in questions:
        hint = " [approve / reject / JSON]" if q.kind == "approval" else ""
        write(f"? {q.question}{hint} ", sys.stderr)
        line = sys.stdin.readline()
        if not line:
            raise UsageError("no answer (end of input): the run stays interrupted")
        answers[q.id] = parse_answers(line.strip(), [q])[q.id]
    return answers


async def run_with_state(agent: Any, prompt: str, *, url: str | None, session: str | None,
                         document: str, load: list[str], as_json: bool, stream: bool, args: Any) -> int:
    from ..state import open_store
    from ..types import Message

    async with await open_store(url) as store:
        history = await store.history(session) if session else []
        data: Any = [*history, Message("user", prompt)] if history else prompt
        extra = {"document": os.path.abspath(document), "session": session,
                 "load": [os.path.abspath(p) for p in load]}  # the chains its tools use, for `runs resume`
        result = await store.run_agent(agent, data, session=session, extra=extra, stream=stream)
        run_id = str(result.metadata["run_id"])
        return await _go_on(agent, store, result, run_id, url, session, as_json, stream, args)


async def _go_on(agent: Any, store: Any, result: Any, run_id: str, url: str | None, session: str | None,
                 as_json: bool, stream: bool, args: Any) -> int:
    from ..state import StateError

    while True:
        status = await _finish(store, result, session, run_id, as_json)
        if status != EXIT_WAITING:
            return status
        if as_json or not sys.stdin.isatty():
            return _show_questions(result, run_id, url, args)
        try:
            answers = _ask_at_prompt(result.interruption.questions)
            result = await agent.resume(run_id, answers, store=store, stream=stream)
        except StateError as e:  # a refused answer changed nothing: ask again
            write(f"error: {e}\n", sys.stderr)
            rec = await store.load_run(run_id)
            if rec.status != "interrupted":
                raise


async def resume_from_cli(run_id: str, raw_answer: str | None, *, url: str | None, document: str | None,
                          load: list[str] | None, globals_: dict[str, Any], as_json: bool, args: Any) -> int:
    from ..chains.agent_doc import agent_from_document
    from ..state import open_store
    from ..state.checkpoint import load_snapshot

    async with await open_store(url) as store:
        snap, _ = await load_snapshot(store, run_id)
        doc = document or snap.extra.get("document")
        if not doc:
            raise UsageError(f"run {run_id!r} was not started by `chainreact run` (no document saved): give "
                             "--doc AGENT_DOCUMENT")
        answers = parse_answers(raw_answer, snap.questions)  # checked against the questions by resume
        # The chains its rulechain tools use: --load, else those `chainreact run --load` saved.
        chains = load if load else list(snap.extra.get("load") or ())
        agent = agent_from_document(doc, globals=globals_, load=chains)
        try:
            result = await agent.resume(run_id, answers, store=store)
            return await _go_on(agent, store, result, run_id, url, snap.extra.get("session"), as_json,
                                False, args)
        finally:
            await agent.aclose()
