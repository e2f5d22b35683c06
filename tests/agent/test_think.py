"""keepThink: <think> blocks leave the answer text (streamed or not) unless kept (issue 9 item 5)."""

from __future__ import annotations

import pytest

from chainreact.agent.think import ThinkSplitter, split_think
from chainreact.testing import FakeLLM
from chainreact.types import ReasoningDelta, TextDelta

from .conftest import make_agent

TEXT = "<think>step one\nstep <b>two</b></think>\n\nThe answer is <4>.<think>again</think> Done."


def _split(pieces: list[str]) -> tuple[str, str]:
    sp = ThinkSplitter()
    out = [p for piece in pieces for p in sp.feed(piece)] + sp.flush()
    return "".join(t for k, t in out if not k), "".join(t for k, t in out if k)


def test_split_whole() -> None:
    assert split_think(TEXT) == ("The answer is <4>.Done.", "step one\nstep <b>two</b>again")
    assert split_think("no tags < here") == ("no tags < here", "")
    assert split_think("<think>never closed") == ("", "never closed")
    assert split_think("ends with <thi") == ("ends with <thi", "")


def test_every_chunk_boundary_gives_the_same_split() -> None:
    want = split_think(TEXT)
    for i in range(len(TEXT) + 1):
        for j in range(i, len(TEXT) + 1, 3):
            assert _split([TEXT[:i], TEXT[i:j], TEXT[j:]]) == want, (i, j)
    assert _split(list(TEXT)) == want  # one character at a time


@pytest.mark.parametrize("chunk_size", [1, 3, 7])
async def test_streamed_deltas_carry_no_think_text(server: FakeLLM, chunk_size: int) -> None:
    server.add_turns([{"text": TEXT, "chunk_size": chunk_size}])
    events = [ev async for ev in make_agent(server, tools=[]).stream("q")]
    text = "".join(ev.text for ev in events if isinstance(ev, TextDelta))
    reasoning = "".join(ev.text for ev in events if isinstance(ev, ReasoningDelta))
    assert text == "The answer is <4>.Done."
    assert reasoning == "step one\nstep <b>two</b>again"
    assert events[-1].content == text  # type: ignore[attr-defined]


async def test_keep_think_keeps_the_blocks_in_deltas_and_content(server: FakeLLM) -> None:
    server.add_turns([{"text": TEXT, "chunk_size": 4}])
    events = [ev async for ev in make_agent(server, tools=[], keep_think=True).stream("q")]
    text = "".join(ev.text for ev in events if isinstance(ev, TextDelta))
    assert text == TEXT and events[-1].content == TEXT  # type: ignore[attr-defined]
    assert not any(isinstance(ev, ReasoningDelta) for ev in events)


async def test_non_streamed_run_splits_the_same_way(server: FakeLLM) -> None:
    server.add_turns([{"text": TEXT}])
    events = [ev async for ev in _events(make_agent(server, tools=[]))]
    assert "".join(ev.text for ev in events if isinstance(ev, TextDelta)) == "The answer is <4>.Done."


async def _events(agent):  # type: ignore[no-untyped-def]
    from chainreact.agent.loop import ReactLoop

    async for ev in ReactLoop(await agent.plan(), streaming=False).events("q"):
        yield ev


@pytest.mark.parametrize("fmt", ["json_object", "json_schema"])
async def test_keep_think_is_for_the_text_format_only(server: FakeLLM, fmt: str) -> None:
    # The ai/agent spec: keepThink keeps the reasoning "(text format only)"; a JSON answer keeps none, so
    # it stays parseable.
    answer = '<think>the user wants JSON</think>\n{"a": 1}'
    server.add_turns([{"text": answer, "chunk_size": 5}, {"text": answer}])
    params: dict[str, object] = {"keepThink": True, "responseFormat": fmt}
    if fmt == "json_schema":
        params["jsonSchema"] = {"type": "object", "properties": {"a": {"type": "integer"}}}
    agent = make_agent(server, tools=[], params=params)
    events = [ev async for ev in agent.stream("q")]
    assert "".join(ev.text for ev in events if isinstance(ev, TextDelta)) == '{"a": 1}'
    assert "".join(ev.text for ev in events if isinstance(ev, ReasoningDelta)) == "the user wants JSON"
    result = await agent.run("q")
    assert result.content == '{"a": 1}' and result.reasoning is None
