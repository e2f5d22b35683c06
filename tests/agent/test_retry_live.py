"""The `retry` event (Eino's WillRetryError) reaches the consumer when the failure happens, not when the
next attempt produces output (issue 24, "The seeds"); a failover and an answer format's re-ask too.
The next request is held at the server until the consumer has seen the event: a consumer that only
gets it afterwards makes the test fail (the hold then times out)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chainreact.agent import Agent, RunOptions, answer_format
from chainreact.testing import FakeLLM
from chainreact.types import Event, FailoverEvent, RetryEvent, TextDelta

from .conftest import add

HOLD = 5.0  # seconds a held request waits for the consumer before answering anyway
OVERLOADED = {"status": 503, "message": "overloaded", "headers": {"Retry-After": "0"}}


class Gate:
    """A script whose requests get `before` in turn, then `answer` once the consumer saw the event (or
    HOLD passed); `released` records whether the consumer opened it in time."""

    def __init__(self, before: list[dict[str, Any]], answer: dict[str, Any]):
        self.before, self.answer = list(before), answer
        self.seen = threading.Event()
        self.released: list[bool] = []

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.before:
            return self.before.pop(0)
        loop = asyncio.get_running_loop()
        self.released.append(await loop.run_in_executor(None, self.seen.wait, HOLD))
        return self.answer

    async def consume(self, events: AsyncIterator[Event], kind: type[Event] = RetryEvent) -> list[Event]:
        out = []
        async for ev in events:
            out.append(ev)
            if isinstance(ev, kind):
                self.seen.set()
        return out


def agent(url: str, **kw: Any) -> Agent:
    return Agent(name="t", url=url, model="m", key="k", **kw)


@pytest.mark.parametrize("tools", [[], [add]], ids=["no tools", "tools"])
async def test_agent_stream_gets_the_retry_while_the_next_attempt_waits(tools: list[Any]) -> None:
    gate = Gate([OVERLOADED], {"text": "recovered", "chunks": 2})
    with FakeLLM(gate) as srv:
        events = await gate.consume(agent(srv.url, tools=tools).stream("hi"))
    assert gate.released == [True]  # the consumer had the retry before the second attempt answered
    kinds = [e.type for e in events]
    assert kinds.index("retry") < kinds.index("text_delta")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "recovered"
    retry = next(e for e in events if isinstance(e, RetryEvent))
    assert retry.attempt == 1 and retry.status == 503 and retry.run_id == events[0].run_id


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not streamed"])
async def test_a_started_run_hands_the_retry_on_at_once(stream: bool) -> None:
    gate = Gate([OVERLOADED], {"text": "recovered"})
    with FakeLLM(gate) as srv:
        run = agent(srv.url).start("hi", stream=stream)
        events = await gate.consume(run)  # type: ignore[arg-type]
        assert (await run.result()).content == "recovered"
    assert gate.released == [True]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # order and numbering kept


async def test_a_failover_is_handed_on_before_the_backup_answers() -> None:
    gate = Gate([], {"text": "from the backup"})
    with FakeLLM([{"status": 503, "message": "down"}]) as primary, FakeLLM(gate) as backup:
        a = agent(primary.url, config={"maxRetries": -1, "failover": [{"url": backup.url}]})
        events = await gate.consume(a.stream("hi"), FailoverEvent)
    assert gate.released == [True]
    assert [e.type for e in events if e.type in ("failover", "final")] == ["failover", "final"]


async def test_an_answer_formats_re_ask_is_handed_on_before_the_next_call_answers() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    gate = Gate([{"text": "not json"}], {"text": '{"n": 1}'})
    fmt = answer_format({"type": "json_schema", "json_schema": {"name": "n", "schema": schema}})
    with FakeLLM(gate) as srv:
        events = await gate.consume(agent(srv.url).stream("hi", options=RunOptions(answer=fmt)))
    assert gate.released == [True]
    assert [e.type for e in events if e.type in ("retry", "final")] == ["retry", "final"]
