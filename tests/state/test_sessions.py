"""Conversations: append, windows that keep tool pairs whole, listing, deleting; both backends."""

from __future__ import annotations

import pytest

from chainreact.state import StateError, Store
from chainreact.types import Message, ToolCall
from chainreact.types.messages import assistant, system, tool_result, user


def texts(msgs: list[Message]) -> list[str]:
    return [m.text for m in msgs]


async def test_messages_round_trip_losslessly(store: Store) -> None:
    msgs = [
        system("be brief"),
        user([{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:x"}}]),
        Message("assistant", None, [ToolCall("c1", "add", '{"a": 1}'), ToolCall("c2", "now", "")],
                reasoning="I should add"),
        tool_result("c1", "2", name="add"),
        tool_result("c2", "noon", name="now"),
        Message("assistant", "done", name="bot"),
    ]
    assert await store.append("s1", msgs) == 6
    assert await store.history("s1") == msgs


async def test_append_numbers_messages_and_single_message_works(store: Store) -> None:
    assert await store.append("s", user("a")) == 1
    assert await store.append("s", [user("b"), assistant("c")]) == 3
    assert await store.append("s", []) == 3
    assert texts(await store.history("s")) == ["a", "b", "c"]
    info = await store.session_info("s")
    assert info is not None and info.messages == 3 and info.tokens > 0


async def test_unknown_session_is_empty(store: Store) -> None:
    assert await store.history("nobody") == []
    assert await store.history("nobody", last=3, max_tokens=100) == []
    assert await store.session_info("nobody") is None


async def test_last_n(store: Store) -> None:
    await store.append("s", [user(str(i)) for i in range(10)])
    assert texts(await store.history("s", last=3)) == ["7", "8", "9"]
    assert texts(await store.history("s", last=50)) == [str(i) for i in range(10)]
    assert await store.history("s", last=0) == []


def tool_turn(i: int) -> list[Message]:
    return [
        user(f"q{i}"),
        assistant(None, [ToolCall(f"a{i}", "f", "{}"), ToolCall(f"b{i}", "g", "{}")]),
        tool_result(f"a{i}", f"ra{i}"),
        tool_result(f"b{i}", f"rb{i}"),
        assistant(f"answer{i}"),
    ]


async def test_window_never_starts_inside_a_tool_call_group(store: Store) -> None:
    await store.append("s", tool_turn(1) + tool_turn(2))
    # The last 3 would be [rb2?]: last 3 = ra2, rb2, answer2 -> both results lose their call: dropped.
    assert texts(await store.history("s", last=3)) == ["answer2"]
    # The last 2: rb2, answer2 -> rb2 dropped.
    assert texts(await store.history("s", last=2)) == ["answer2"]
    # The last 4 start at the call: kept whole.
    window = await store.history("s", last=4)
    assert window[0].tool_calls and [m.tool_call_id for m in window[1:3]] == ["a2", "b2"]
    for n in range(1, 11):
        window = await store.history("s", last=n)
        call_ids = {tc.id for m in window for tc in (m.tool_calls or [])}
        assert all(m.tool_call_id in call_ids for m in window if m.role == "tool"), n


async def test_token_budget_window(store: Store) -> None:
    # Each message "x" * 40 is 4 + 10 = 14 estimated tokens.
    await store.append("s", [user("x" * 40) for _ in range(10)])
    assert len(await store.history("s", max_tokens=14)) == 1
    assert len(await store.history("s", max_tokens=27)) == 1
    assert len(await store.history("s", max_tokens=28)) == 2
    assert len(await store.history("s", max_tokens=10_000)) == 10
    assert await store.history("s", max_tokens=13) == []
    # Both limits: the smaller window wins.
    assert len(await store.history("s", last=2, max_tokens=10_000)) == 2
    assert len(await store.history("s", last=5, max_tokens=28)) == 2


async def test_token_budget_keeps_tool_groups_whole(store: Store) -> None:
    await store.append("s", tool_turn(1) + tool_turn(2))
    full = await store.history("s")
    for budget in range(1, 200, 3):
        window = await store.history("s", max_tokens=budget)
        assert window == full[len(full) - len(window):]  # a suffix
        call_ids = {tc.id for m in window for tc in (m.tool_calls or [])}
        assert all(m.tool_call_id in call_ids for m in window if m.role == "tool"), budget


async def test_sessions_listed_newest_first_and_deleted(store: Store) -> None:
    await store.append("a", user("1"))
    await store.append("b", [user("1"), user("2")])
    await store.append("a", user("3"))
    listed = await store.sessions()
    assert [s.key for s in listed] == ["a", "b"]
    assert [s.messages for s in listed] == [2, 2]
    assert [s.key for s in await store.sessions(limit=1, offset=1)] == ["b"]
    assert await store.delete_session("a") is True
    assert await store.delete_session("a") is False
    assert [s.key for s in await store.sessions()] == ["b"]
    assert await store.history("a") == []
    # A deleted session starts again from 1.
    assert await store.append("a", user("new")) == 1


async def test_bad_input_writes_nothing(store: Store) -> None:
    await store.append("s", user("kept"))
    with pytest.raises(StateError, match="item 1 is a dict"):
        await store.append("s", [user("x"), {"role": "user"}])  # type: ignore[list-item]
    with pytest.raises(StateError, match="session must be a non-empty string"):
        await store.append("", user("x"))
    with pytest.raises(StateError, match="last must be a non-negative integer"):
        await store.history("s", last=-1)
    assert texts(await store.history("s")) == ["kept"]
