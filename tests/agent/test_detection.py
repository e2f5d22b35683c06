"""streamToolCallCheck: text followed by tool calls, in every detection mode, over a real stream."""

from __future__ import annotations

from chainreact.agent import Agent
from chainreact.testing import FakeLLM
from chainreact.types import Event, Preamble, TextDelta, ToolResultEvent

from .conftest import call, make_agent

PREAMBLE = "Let me check that for you."


def text_then_tools(delay: float) -> dict:
    return {"text": PREAMBLE, "chunks": 3, "tool_delay": delay,
            "tool_calls": [call("add", {"a": 1, "b": 2}, id="c1")]}


async def collect(agent: Agent, prompt: str = "q") -> list[Event]:
    return [ev async for ev in agent.stream(prompt)]


def texts(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_auto_window_catches_quick_tool_calls(server: FakeLLM) -> None:
    server.add_turns([text_then_tools(0.05), {"text": "It is 3."}])
    agent = make_agent(server, detect_window=2.0)
    events = await collect(agent)
    assert texts(events) == "It is 3."  # the preamble was held, then recognised as a tool round
    assert any(isinstance(e, ToolResultEvent) and e.content == "3" for e in events)
    assert not any(isinstance(e, Preamble) for e in events)
    assert agent.detect_mode == "auto"


async def test_auto_late_tool_calls_self_heal(server: FakeLLM) -> None:
    server.add_turns([text_then_tools(0.6), {"text": "It is 3."}, {"text": "again"}])
    agent = make_agent(server, detect_window=0.1)
    events = await collect(agent)
    # The preamble went out as text (window expired), the late tool calls still ran, once.
    assert texts(events) == PREAMBLE + "It is 3."
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.content for r in results] == ["3"]
    preambles = [e for e in events if isinstance(e, Preamble)]
    assert [p.text for p in preambles] == [PREAMBLE]
    assert agent.detect_mode == "drain"  # this instance drains from now on
    assert len(server.chat_requests) == 2  # nothing re-run
    # the preamble stays in history as the tool round's content, not duplicated
    sent = server.chat_requests[1].body["messages"]
    assert sent[-2]["content"] == PREAMBLE and sent[-2]["tool_calls"]


async def test_first_content_releases_at_once_then_self_heals(server: FakeLLM) -> None:
    server.add_turns([text_then_tools(0.05), {"text": "done"}])
    agent = make_agent(server, stream_tool_call_check="firstContent", detect_window=5.0)
    events = await collect(agent)
    assert texts(events).startswith(PREAMBLE)
    assert any(isinstance(e, Preamble) for e in events)
    assert any(isinstance(e, ToolResultEvent) for e in events)
    assert agent.detect_mode == "drain"


async def test_drain_never_leaks_preamble(server: FakeLLM) -> None:
    server.add_turns([text_then_tools(0.6), {"text": "Final.", "chunks": 3}])
    agent = make_agent(server, stream_tool_call_check="drain", detect_window=0.05)
    events = await collect(agent)
    assert texts(events) == "Final."
    # the answer still arrives chunk by chunk (released after the stream ends)
    assert len([e for e in events if isinstance(e, TextDelta)]) == 3


async def test_no_tools_streams_immediately(server: FakeLLM) -> None:
    server.add_turns([{"text": "a b c d", "chunks": 4, "chunk_delay": 0.05}])
    agent = make_agent(server, tools=[], detect_window=10.0)
    deltas = [e for e in await collect(agent) if isinstance(e, TextDelta)]
    assert len(deltas) == 4  # released chunk by chunk, not after a window


async def test_whitespace_before_tool_calls_is_not_an_answer(server: FakeLLM) -> None:
    server.add_turns([{"text": "\n\n", "tool_calls": [call("add", {"a": 1, "b": 1})]}, {"text": "2"}])
    agent = make_agent(server, stream_tool_call_check="firstContent")
    events = await collect(agent)
    assert texts(events) == "2" and not any(isinstance(e, Preamble) for e in events)


async def test_plain_text_with_tools_configured_is_released(server: FakeLLM) -> None:
    server.add_turns([{"text": "Just an answer.", "chunks": 3}])
    events = await collect(make_agent(server, detect_window=0.05))
    assert texts(events) == "Just an answer."


# -- the router's observation window, on a scripted item source (no model client involved) -------------

async def _route_all(router: object, source: object, seen: list[object]) -> None:
    async for item in router.route(source):  # type: ignore[attr-defined]
        seen.append(item)


async def test_window_expiry_releases_text_while_the_source_is_silent() -> None:
    import asyncio

    from chainreact.agent.detection import StreamRouter
    from chainreact.types import Message, ModelResponse, TextChunk

    released = asyncio.Event()
    seen: list[object] = []

    async def source():  # type: ignore[no-untyped-def]
        yield TextChunk("Hello")
        yield TextChunk(" there")
        await released.wait()  # silent until the router has released the held text
        yield TextChunk("!")
        yield ModelResponse(Message("assistant", "Hello there!"))

    router = StreamRouter("auto", has_tools=True, window=0.01)
    task = asyncio.ensure_future(_route_all(router, source(), seen))
    while len(seen) < 2:
        await asyncio.sleep(0.005)
    assert [c.text for c in seen] == ["Hello", " there"]  # type: ignore[attr-defined]
    released.set()
    await asyncio.wait_for(task, 5)
    assert [getattr(c, "text", None) for c in seen[:3]] == ["Hello", " there", "!"]
    assert isinstance(seen[-1], ModelResponse) and router.released == ["Hello", " there", "!"]


async def test_source_error_inside_the_window_reaches_the_consumer() -> None:
    import pytest

    from chainreact.agent.detection import StreamRouter
    from chainreact.errors import ModelError
    from chainreact.types import TextChunk

    async def source():  # type: ignore[no-untyped-def]
        yield TextChunk("partial")
        raise ModelError("stream broke")

    seen: list[object] = []
    with pytest.raises(ModelError, match="stream broke"):
        await _route_all(StreamRouter("auto", has_tools=True, window=5.0), source(), seen)
    assert seen == []  # held in the window, never released


async def test_closing_the_router_inside_the_window_stops_the_read_first() -> None:
    import asyncio

    from chainreact.agent.detection import StreamRouter
    from chainreact.types import TextChunk

    cleaned: list[str] = []

    async def source():  # type: ignore[no-untyped-def]
        try:
            yield TextChunk("Hello")
            await asyncio.sleep(30)  # a silent model
            yield TextChunk("never")
        finally:
            cleaned.append("source closed")

    router = StreamRouter("auto", has_tools=True, window=0.01)
    items = source()
    gen = router.route(items)
    first = await asyncio.wait_for(gen.__anext__(), 5)  # the window expired: released
    assert first.text == "Hello"  # type: ignore[union-attr]
    await gen.aclose()
    assert cleaned == ["source closed"]  # the read was unwound before aclose returned
    await items.aclose()  # and the source can be closed after it (not "already running")
