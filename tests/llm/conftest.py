"""Helpers for the model-client tests: clients wired to FakeLLM servers with a recorded, instant sleep."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from chainreact.config import AgentConfig
from chainreact.llm import ModelClient, RetryPolicy
from chainreact.types import ClientEvent, Message, ModelResponse, Reported, StreamItem


class FakeTime:
    """A clock the breaker reads and a sleep that only records (and advances the clock)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Harness:
    def __init__(self, cfg: dict[str, Any], client_kw: dict[str, Any] | None = None) -> None:
        self.time = FakeTime()
        self.events: list[ClientEvent] = []
        self.marks: list[int] = []  # for each Reported item: how many events had been reported then
        self.cfg = AgentConfig.model_validate(cfg)
        self.client = ModelClient.from_config(self.cfg, clock=self.time.clock, sleep=self.time.sleep,
                                              rng=lambda: 0.0, retry_policy=RetryPolicy(base_delay=0.25),
                                              **(client_kw or {}))

    async def run(self, prompt: str = "hi", *, stream: bool = False, **kw: Any
                  ) -> tuple[list[StreamItem], ModelResponse]:
        items: list[StreamItem] = []
        async for item in self.client.call([Message("user", prompt)], stream=stream,
                                           on_event=self.events.append, **kw):
            if isinstance(item, Reported):
                self.marks.append(len(self.events))
            else:
                items.append(item)
        last = items.pop()
        assert isinstance(last, ModelResponse)
        return items, last

    def kinds(self) -> list[str]:
        return [e.type for e in self.events]


@pytest.fixture
async def harness() -> AsyncIterator[Any]:
    made: list[Harness] = []

    def factory(client_kw: dict[str, Any] | None = None, **cfg: Any) -> Harness:
        h = Harness(cfg, client_kw)
        made.append(h)
        return h

    yield factory
    for h in made:
        await h.client.aclose()


def texts(items: list[StreamItem]) -> str:
    return "".join(getattr(i, "text", "") for i in items if type(i).__name__ == "TextChunk")
