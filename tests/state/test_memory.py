"""Long-term memory: remember, recall with full-text ranking, scopes, types, forget; both backends."""

from __future__ import annotations

import pytest

from chainreact.state import StateError, Store

FACTS = [
    ("The user drinks black coffee every morning", "global", "semantic"),
    ("The user's dog is called Biscuit", "global", "semantic"),
    ("Coffee machines need descaling every month; coffee tastes bitter otherwise", "global", "procedural"),
    ("On Monday the user asked about train tickets to Lyon", "planner", "episodic"),
    ("To book a train: search, choose a fare, pay", "planner", "procedural"),
    ("The user prefers window seats on trains", "helper", "semantic"),
]


@pytest.fixture
async def filled(store: Store) -> Store:
    for text, scope, type_ in FACTS:
        await store.remember(text, scope=scope, type=type_, metadata={"source": "test"})
    return store


async def test_recall_ranks_by_full_text_match(filled: Store) -> None:
    got = await filled.recall("how much coffee?", k=2)
    assert [m.text for m in got] == [FACTS[2][0], FACTS[0][0]]  # two mentions before one
    assert got[0].score is not None and got[1].score is not None and got[0].score > got[1].score
    assert got[0].metadata == {"source": "test"} and got[0].type == "procedural"


async def test_recall_matches_word_forms(filled: Store) -> None:
    # "trains" / "train": both backends stem English words.
    got = await filled.recall("train", k=5)
    assert {m.text for m in got} == {FACTS[3][0], FACTS[4][0], FACTS[5][0]}


async def test_recall_k_and_no_match(filled: Store) -> None:
    assert len(await filled.recall("user", k=2)) == 2
    assert await filled.recall("submarine", k=3) == []
    with pytest.raises(StateError, match="k must be a positive integer"):
        await filled.recall("user", k=0)


async def test_recall_scopes(filled: Store) -> None:
    # An owner sees its own memories and the global ones, not another owner's.
    planner = {m.text for m in await filled.recall("train user coffee dog", k=10, scope="planner")}
    assert FACTS[3][0] in planner and FACTS[0][0] in planner and FACTS[5][0] not in planner
    only = await filled.recall("train", k=10, scope="planner", include_global=False)
    assert {m.scope for m in only} == {"planner"}
    glob = await filled.recall("train user coffee dog", k=10, scope="global")
    assert {m.scope for m in glob} == {"global"}
    procedural = await filled.recall("coffee train", k=10, type="procedural")
    assert {m.text for m in procedural} == {FACTS[2][0], FACTS[4][0]}


async def test_query_syntax_is_never_interpreted(filled: Store) -> None:
    for q in ['coffee" OR "dog', "coffee AND NOT dog", "NEAR(coffee dog)", "dog*", "(((", "a:b", "'; --",
              "coffee | dog & !x", "", "   ", "the of and"]:
        got = await filled.recall(q, k=3)
        assert isinstance(got, list) and len(got) <= 3, q


async def test_empty_query_returns_recent(filled: Store) -> None:
    got = await filled.recall("", k=2)
    assert [m.text for m in got] == [FACTS[5][0], FACTS[4][0]]


async def test_namespaces_are_separate(store: Store) -> None:
    await store.remember("alpha fact", namespace="mem-a")
    await store.remember("alpha other", namespace="mem-b")
    assert [m.text for m in await store.recall("alpha", namespace="mem-a")] == ["alpha fact"]
    assert len(await store.recall("alpha", namespace=None)) == 2
    assert await store.recall("alpha") == []  # the default namespace is ""


async def test_forget(filled: Store) -> None:
    coffee = await filled.recall("coffee", k=1)
    assert await filled.forget(coffee[0].id) == 1
    assert await filled.forget(coffee[0].id) == 0
    assert coffee[0].text not in {m.text for m in await filled.recall("coffee", k=5)}
    assert await filled.forget(scope="planner") == 2
    assert await filled.recall("train", k=5, scope="planner", include_global=False) == []
    with pytest.raises(StateError, match="refusing to forget everything"):
        await filled.forget()
    assert len(await filled.memories()) == len(FACTS) - 3


async def test_remember_validates(store: Store) -> None:
    with pytest.raises(StateError, match="memory type 'fact'"):
        await store.remember("x", type="fact")
    with pytest.raises(StateError, match="non-empty string"):
        await store.remember("  ")
    with pytest.raises(StateError, match="metadata is not JSON-serialisable"):
        await store.remember("x", metadata={"f": object()})
    assert await store.memories() == []
    entry = await store.remember("kept", scope="agent-1", type="episodic", metadata={"n": 1})
    listed = await store.memories(scope="agent-1")
    assert [(m.id, m.text, m.type, m.metadata) for m in listed] == [(entry.id, "kept", "episodic", {"n": 1})]
