"""The blocking facade: same behaviour without await, from sync code and from inside a running loop."""

from __future__ import annotations

import asyncio

import pytest

from chainreact.state import StateError
from chainreact.state.sync import SyncStore
from chainreact.types.messages import user


def test_sync_store(store_url: str) -> None:
    with SyncStore(store_url) as store:
        assert store.append("s", [user("a"), user("b")]) == 2
        assert [m.text for m in store.history("s", last=1)] == ["b"]
        entry = store.remember("sync memories work")
        assert [m.id for m in store.recall("memories")] == [entry.id]
        assert store.save_run("r", {"x": 1}) == 1
        assert store.load_run("r").snapshot == {"x": 1}
        assert store.backend in ("sqlite", "postgres")
        with pytest.raises(StateError, match="last must be"):
            store.history("s", last=-2)
        with pytest.raises(AttributeError, match="poll events"):
            store.follow_events("r")


def test_sync_store_from_inside_a_running_loop(tmp_path: object) -> None:
    async def main() -> list[str]:
        with SyncStore(f"sqlite:///{tmp_path}/x.db") as store:
            store.append("s", user("inside"))
            return [m.text for m in store.history("s")]
    assert asyncio.run(main()) == ["inside"]
