"""A scripted model that answers by the question, the calc agent over it, and a dataset using every check."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chainreact.testing import FakeLLM
from tests.replay.conftest import write_agent


def responder(body: dict[str, Any]) -> dict[str, Any]:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"text": f"The sum is {last['content']}."}
    q = str(last["content"])
    if "add" in q:
        return {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}
    if "json" in q:
        return {"text": '{"city": "Paris", "temp": 21}'}
    if "hello" in q:
        return {"text": "Hello there!"}
    return {"text": "I don't know."}


SCHEMA = {"type": "object", "required": ["city"], "properties": {"temp": {"type": "integer"}}}

# 3 cases pass, 6 fail, each failing on one check kind.
CASES: list[dict[str, Any]] = [
    {"name": "adds", "input": "please add 2 and 3",
     "expect": {"contains": "5", "tool_called": {"name": "add", "arguments": {"a": 2}}, "max_steps": 2}},
    {"name": "json", "input": "json weather",
     "expect": {"json_schema": SCHEMA, "equals": {"city": "Paris", "temp": 21}}},
    {"name": "greets", "input": "say hello", "expect": {"matches": r"^Hello\b", "equals": "Hello there!",
                                                        "max_tokens": 1000}},
    {"name": "no-goodbye", "input": "say hello", "expect": {"contains": ["Hello", "Goodbye"]}},
    {"name": "no-tool", "input": "say hello", "expect": {"tool_called": "add"}},
    {"name": "too-many-steps", "input": "add 2 and 3", "expect": {"max_steps": 1}},
    {"name": "too-many-tokens", "input": "say hello", "expect": {"max_tokens": 1}},
    {"name": "not-json", "input": "say hello", "expect": {"json_schema": SCHEMA}},
    {"name": "no-match", "input": "say hello", "expect": {"matches": "^Bye"}},
]


@pytest.fixture
def model() -> Iterator[FakeLLM]:
    with FakeLLM(responder) as srv:
        yield srv


@pytest.fixture
def agent_doc(tmp_path: Path, model: FakeLLM) -> Path:
    return write_agent(tmp_path / "agent", model.url)


def write_dataset(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path
