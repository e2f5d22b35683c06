"""The run snapshot format (format 1) and following a run's events; both backends."""

from __future__ import annotations

import asyncio

import pytest

from chainreact.state import RunNotFoundError, StateError, Store
from chainreact.state.checkpoint import (
    Question,
    RunSnapshot,
    ToolOutcome,
    check_answers,
    load_snapshot,
    prepare_resume,
    save_snapshot,
)
from chainreact.types import Message, ToolCall
from chainreact.types.messages import tool_result, user


def interrupted() -> RunSnapshot:
    calls = [ToolCall("c1", "weather", '{"city": "Lyon"}'),
             ToolCall("c2", "ask_user", '{"question": "Unit?"}'),
             ToolCall("c3", "delete_file", '{"path": "/tmp/x"}')]
    return RunSnapshot(
        run_id="run-7", status="interrupted", step=1, agent="helper", session="s1",
        messages=[user("weather in Lyon?"), Message("assistant", None, calls, reasoning="three calls"),
                  tool_result("c1", "21C", name="weather")],
        pending_tool_calls=calls,
        completed_tool_results={"c1": ToolOutcome("21C")},
        questions=[Question("c2", "ask_user", "Unit?", {"type": "string", "enum": ["C", "F"]}),
                   Question("c3", "approval", "Allow delete_file?", tool="delete_file",
                            arguments='{"path": "/tmp/x"}')],
        extra={"usage": {"total_tokens": 12}},
    )


async def test_snapshot_round_trip_through_the_store(store: Store) -> None:
    snap = interrupted()
    assert await save_snapshot(store, snap) == 1
    loaded, version = await load_snapshot(store, "run-7")
    assert loaded == snap and version == 1
    assert [c.id for c in loaded.calls_to_run] == ["c2", "c3"]  # c1 completed: never run again
    rec = await store.load_run("run-7")
    assert (rec.status, rec.agent, rec.session) == ("interrupted", "helper", "s1")
    loaded.status = "done"
    assert await save_snapshot(store, loaded, expect_version=1) == 2


async def test_events_only_run_has_no_snapshot(store: Store) -> None:
    await store.append_event("r", "run_start")
    with pytest.raises(StateError, match="has no checkpoint yet"):
        await load_snapshot(store, "r")


@pytest.mark.parametrize(("mutate", "path"), [
    (lambda d: d.update(format=2), r"\$\.format"),
    (lambda d: d.update(run_id=""), r"\$\.run_id"),
    (lambda d: d.update(status="paused"), r"\$\.status"),
    (lambda d: d.update(step=-1), r"\$\.step"),
    (lambda d: d["messages"].append({"content": "no role"}), r"\$\.messages\[3\]"),
    (lambda d: d["pending_tool_calls"].append({"id": 1}), r"\$\.pending_tool_calls\[3\]"),
    (lambda d: d["completed_tool_results"].update(c9=5), r"\$\.completed_tool_results\['c9'\]"),
    (lambda d: d["questions"].append({"id": "q", "kind": ""}), r"\$\.questions\[2\]"),
    (lambda d: d.update(extra=[]), r"\$\.extra"),
])
def test_malformed_snapshot_names_the_path(mutate: object, path: str) -> None:
    data = interrupted().to_dict()
    mutate(data)  # type: ignore[operator]
    with pytest.raises(StateError, match=path):
        RunSnapshot.from_dict(data)


async def test_follow_events_streams_until_the_run_ends(store: Store) -> None:
    await store.append_event("r", "run_start")

    async def writer() -> None:
        for i in range(5):
            await asyncio.sleep(0.01)
            await store.append_event("r", "delta", {"i": i})
        await store.save_run("r", {"done": True}, status="done")

    task = asyncio.create_task(writer())
    seen = [(e.id, e.type) async for e in store.follow_events("r", after=1, poll=0.01)]
    await task
    assert seen == [(i + 2, "delta") for i in range(5)]


# ---------------------------------------------------------------------------- resuming: checks only


async def test_prepare_resume_checks_answers_and_changes_nothing(store: Store) -> None:
    await save_snapshot(store, interrupted())
    before = await store.load_run("run-7")
    snap, version, answers = await prepare_resume(
        store, "run-7", {"c2": "C", "c3": {"approve": False, "reason": "not that file"}})
    assert version == 1 and [c.id for c in snap.calls_to_run] == ["c2", "c3"]
    assert answers == {"c2": "C", "c3": {"approve": False, "reason": "not that file", "arguments": None}}
    bad = [
        ({"c2": "K", "c3": True}, r"answer to 'c2' \('Unit\?'\) does not match the asked schema"),
        ({"c2": "C"}, r"no answer for 'c3'"),
        ({"c2": "C", "c3": True, "c9": 1}, r"no question 'c9' \(asked: 'c2', 'c3'\)"),
        ({"c2": "C", "c3": {"approve": "yes"}}, r"approval 'c3': expected"),
        ({"c2": "C", "c3": {"approve": False, "arguments": {"path": "/x"}}}, r"approval 'c3': expected"),
        (None, r"no answer for 'c2', 'c3'"),
    ]
    for given, message in bad:
        with pytest.raises(StateError, match=message):
            await prepare_resume(store, "run-7", given)
    after = await store.load_run("run-7")
    assert (after.version, after.snapshot, after.updated_at) == (before.version, before.snapshot,
                                                                 before.updated_at)


async def test_approval_shorthands_and_edits() -> None:
    snap = interrupted()
    for given, approve, args in [(True, True, None), ("reject", False, None),
                                 ({"arguments": {"path": "/tmp/y"}}, True, {"path": "/tmp/y"})]:
        got = check_answers(snap, {"c2": "F", "c3": given})["c3"]
        assert (got["approve"], got["arguments"]) == (approve, args)


async def test_prepare_resume_by_status(store: Store) -> None:
    with pytest.raises(RunNotFoundError):
        await prepare_resume(store, "ghost")
    died = RunSnapshot("r-died", "running", 2, [user("x")])
    await save_snapshot(store, died)
    snap, version, answers = await prepare_resume(store, "r-died")
    assert (snap.step, version, answers) == (2, 1, {})
    with pytest.raises(StateError, match="is not interrupted"):
        await prepare_resume(store, "r-died", {"q": 1})
    await save_snapshot(store, RunSnapshot("r-done", "done", 3))
    with pytest.raises(StateError, match="run 'r-done' is done"):
        await prepare_resume(store, "r-done")
