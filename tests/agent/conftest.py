from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chainreact.agent import Agent
from chainreact.testing import FakeLLM
from chainreact.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@tool
def convert_currency(amount: float, to: str) -> str:
    """Convert money between currencies."""
    return f"{amount} {to}"


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM([]) as srv:
        yield srv


def make_agent(srv: FakeLLM, **kw: Any) -> Agent:
    kw.setdefault("tools", [add])
    kw.setdefault("instruction", "You are a test agent.")
    return Agent(name=kw.pop("name", "tester"), url=srv.url, model="fake-model", key="k", **kw)


def call(name: str, arguments: Any, id: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "arguments": arguments}
    if id:
        c["id"] = id
    return c


def plain_add(a: int, b: int) -> int:
    """Add two numbers (a plain function, imported by path in config tests)."""
    return a + b
