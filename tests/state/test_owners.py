"""Session owners: the first claim of a key wins, at once or across processes; both backends."""

from __future__ import annotations

import asyncio

import pytest

from chainreact.state import StateError, Store, open_store


async def test_the_first_claim_owns_the_key(store: Store) -> None:
    assert await store.owners(["flow:f:s1"]) == {}
    assert await store.claim_owner("flow:f:s1", "ann") == "ann"
    assert await store.claim_owner("flow:f:s1", "bob") == "ann"  # taken: the first owner stays
    assert await store.claim_owner("flow:f:s1", "ann") == "ann"
    assert await store.claim_owner("agent:a:s1", "bob") == "bob"
    assert await store.owners(["flow:f:s1", "agent:a:s1", "flow:f:none"]) == {"flow:f:s1": "ann",
                                                                               "agent:a:s1": "bob"}
    assert await store.owners([]) == {}
    # many keys at once (beyond one statement's parameters on SQLite)
    keys = [f"k{i}" for i in range(1200)]
    for k in keys[::100]:
        await store.claim_owner(k, "cy")
    assert await store.owners(keys) == {k: "cy" for k in keys[::100]}
    with pytest.raises(StateError):
        await store.claim_owner("", "ann")
    with pytest.raises(StateError):
        await store.claim_owner("k", "")


async def test_claims_at_once_have_one_winner(store_url: str) -> None:
    # Two stores on one database (as two server processes): twenty claims race, one owner for all.
    a, b = await open_store(store_url), await open_store(store_url)
    try:
        got = await asyncio.gather(*(s.claim_owner("flow:f:race", f"user{i}")
                                     for i, s in enumerate([a, b] * 10)))
        assert len(set(got)) == 1 and got[0].startswith("user")
        assert await b.owners(["flow:f:race"]) == {"flow:f:race": got[0]}
        assert (await a.info()).counts["session_owners"] == 1
    finally:
        await a.close()
        await b.close()
