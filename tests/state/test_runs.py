"""Run checkpoints and event logs; both backends."""

from __future__ import annotations

import asyncio

import pytest

from chainreact.state import RunConflictError, RunNotFoundError, StateError, Store, open_store

SNAPSHOT = {
    "format": 1,
    "messages": [{"role": "user", "content": "hi"}],
    "step": 1,
    "pending_tool_calls": [{"id": "c1", "name": "ask_user", "arguments": "{}"}],
    "completed_tool_results": {},
    "questions": [{"id": "c1", "question": "Which city?"}],
    "unicode": "Lyon → Genève ✓",
}


async def test_save_and_load(store: Store) -> None:
    assert await store.save_run("r1", SNAPSHOT, status="interrupted", agent="a", session="s") == 1
    rec = await store.load_run("r1")
    got = (rec.snapshot, rec.status, rec.version, rec.agent, rec.session)
    assert got == (SNAPSHOT, "interrupted", 1, "a", "s")
    assert await store.save_run("r1", {**SNAPSHOT, "step": 2}) == 2
    rec = await store.load_run("r1")
    # status given again; agent and session kept when not given
    got = (rec.snapshot["step"], rec.status, rec.version, rec.agent, rec.session)
    assert got == (2, "running", 2, "a", "s")


async def test_unknown_run(store: Store) -> None:
    with pytest.raises(RunNotFoundError, match="no run 'ghost'"):
        await store.load_run("ghost")
    assert await store.get_run("ghost") is None
    assert await store.delete_run("ghost") is False


async def test_expect_version_guards_against_double_resume(store: Store) -> None:
    assert await store.save_run("r", {"v": 1}, expect_version=0) == 1
    with pytest.raises(RunConflictError, match="version is 1, expected 0"):
        await store.save_run("r", {"v": "lost"}, expect_version=0)
    assert await store.save_run("r", {"v": 2}, expect_version=1) == 2
    with pytest.raises(RunConflictError, match="version is 2, expected 1"):
        await store.save_run("r", {"v": "lost"}, expect_version=1)
    with pytest.raises(RunConflictError, match="version is 0, expected 3"):
        await store.save_run("other", {"v": "lost"}, expect_version=3)
    assert (await store.load_run("r")).snapshot == {"v": 2}
    assert await store.get_run("other") is None


async def test_racing_resumers_only_one_wins(store_url: str) -> None:
    stores = [await open_store(store_url) for _ in range(2)]
    try:
        await stores[0].save_run("r", {"v": 0}, status="interrupted")
        results = await asyncio.gather(*(s.save_run("r", {"by": i}, expect_version=1)
                                         for i, s in enumerate(stores)), return_exceptions=True)
        assert sorted(type(r).__name__ for r in results) == ["RunConflictError", "int"]
        assert (await stores[0].load_run("r")).version == 2
    finally:
        for s in stores:
            await s.close()


async def test_bad_snapshot_changes_nothing(store: Store) -> None:
    await store.save_run("r", {"ok": True})
    with pytest.raises(StateError, match="not JSON-serialisable"):
        await store.save_run("r", {"bad": object()})
    with pytest.raises(StateError, match="status 'paused'"):
        await store.save_run("r", {}, status="paused")
    rec = await store.load_run("r")
    assert (rec.snapshot, rec.version) == ({"ok": True}, 1)


async def test_runs_listed_newest_first_without_snapshots(store: Store) -> None:
    await store.save_run("a", {"x": 1}, status="done")
    await store.save_run("b", {"x": 2}, status="interrupted")
    await store.save_run("c", {"x": 3}, status="failed")
    listed = await store.runs()
    assert [r.run_id for r in listed] == ["c", "b", "a"]
    assert all(r.snapshot is None for r in listed)
    assert [r.run_id for r in await store.runs(status="interrupted")] == ["b"]
    assert [r.run_id for r in await store.runs(limit=1)] == ["c"]
    assert await store.delete_run("b") is True
    assert [r.run_id for r in await store.runs()] == ["c", "a"]


async def test_event_log(store: Store) -> None:
    assert await store.append_event("r", "run_start", {"input": "hi"}) == 1
    deltas = [("text_delta", {"text": "a"}), ("text_delta", {"text": "b"})]
    assert await store.append_events("r", deltas) == [2, 3]
    assert await store.append_event("r", "final", None) == 4
    assert await store.append_event("other", "run_start") == 1  # ids are per run
    events = await store.events("r")
    assert [(e.id, e.type) for e in events] == [(1, "run_start"), (2, "text_delta"), (3, "text_delta"),
                                                (4, "final")]
    assert events[1].data == {"text": "a"} and events[3].data is None
    assert [e.id for e in await store.events("r", after=2)] == [3, 4]
    assert [e.id for e in await store.events("r", after=1, limit=2)] == [2, 3]
    assert await store.events("r", after=4) == []
    assert await store.events("nobody") == []
    # A run with events but no checkpoint yet: listed, version 0, no snapshot.
    rec = await store.load_run("r")
    assert (rec.version, rec.snapshot, rec.last_event_id, rec.status) == (0, None, 4, "running")
    # Saving the first checkpoint keeps the event count.
    await store.save_run("r", {"s": 1}, status="done")
    assert (await store.load_run("r")).last_event_id == 4
    assert await store.delete_run("r") is True
    assert await store.events("r") == []


async def test_bad_event_appends_nothing(store: Store) -> None:
    await store.append_event("r", "ok")
    with pytest.raises(StateError, match=r"event 1 \(bad\) is not JSON-serialisable"):
        await store.append_events("r", [("fine", 1), ("bad", object())])
    with pytest.raises(StateError, match="event 0 type"):
        await store.append_events("r", [("", 1)])
    assert [e.type for e in await store.events("r")] == ["ok"]


async def test_concurrent_event_writers_get_contiguous_ids(store_url: str) -> None:
    stores = [await open_store(store_url) for _ in range(3)]
    try:
        ids = await asyncio.gather(*(stores[i % 3].append_event("r", "e", {"i": i}) for i in range(60)))
        assert sorted(ids) == list(range(1, 61))
        events = await stores[0].events("r")
        assert [e.id for e in events] == list(range(1, 61))
        assert sorted(e.data["i"] for e in events) == list(range(60))
    finally:
        for s in stores:
            await s.close()
