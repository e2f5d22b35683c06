"""What a run's consumer sees of a model stream that fails (docs/agent.md, "A failed stream"; the spec's
"a failed stream is still delivered before the retry", decision 10 of docs/spec-conformance.md)."""

from __future__ import annotations

import pytest

from chainreact.agent import Agent
from chainreact.errors import ModelError
from chainreact.testing import FakeLLM
from chainreact.types import Event, TextDelta

CUT = {"text": "one two three four", "fault": "disconnect", "after_chunks": 2}
WHOLE = {"text": "one two three four"}


def texts(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_off_a_stream_cut_after_its_text_began_keeps_that_text_and_ends_the_run() -> None:
    events: list[Event] = []
    with FakeLLM([CUT, WHOLE]) as srv:
        agent = Agent(name="t", url=srv.url, model="m", key="k")  # streamRetryMode "off", 3 retries
        with pytest.raises(ModelError, match="streamRetryMode"):
            async for ev in agent.stream("count"):
                events.append(ev)
        assert len(srv.chat_requests) == 1  # not retried: the consumer already saw part of the answer
    assert texts(events) == "one two"  # the failed attempt's text reached the events
    assert [e.type for e in events][-1] == "error" and "retry" not in [e.type for e in events]


async def test_off_a_failure_before_the_first_chunk_is_retried_and_nothing_of_it_shows() -> None:
    events: list[Event] = []
    with FakeLLM([{"status": 503, "headers": {"Retry-After": "0"}}, WHOLE]) as srv:
        agent = Agent(name="t", url=srv.url, model="m", key="k")
        events = [ev async for ev in agent.stream("count")]
    assert [e.type for e in events if e.type in ("retry", "final")] == ["retry", "final"]
    assert texts(events) == "one two three four"


async def test_full_a_failed_attempts_text_never_reaches_the_events() -> None:
    with FakeLLM([{**CUT, "headers": {}}, WHOLE]) as srv:
        agent = Agent(name="t", url=srv.url, model="m", key="k", config={"streamRetryMode": "full"})
        events = [ev async for ev in agent.stream("count")]
    kinds = [e.type for e in events]
    assert kinds.index("retry") < kinds.index("text_delta")
    assert texts(events) == "one two three four"  # once: the completed attempt's
