"""Test-local helpers for the FakeLLM tests: a tiny SSE line parser and request shortcuts.

Deliberately independent of chainreact.llm's own SSE parser, so these tests check the server alone.
"""

from __future__ import annotations

import json
from typing import Any

import httpx


def sse_data(text: str) -> list[str]:
    """The `data:` payloads of an event stream, one string per event (multi-line data joined by \\n)."""
    events: list[str] = []
    data: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line == "":
            if data:
                events.append("\n".join(data))
                data = []
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        events.append("\n".join(data))
    return events


def sse_chunks(text: str) -> list[dict[str, Any]]:
    """The JSON chunks of a complete stream; asserts it ends with exactly one [DONE]."""
    data = sse_data(text)
    assert data and data[-1] == "[DONE]", f"stream does not end with [DONE]: {data[-3:]}"
    assert data.count("[DONE]") == 1
    return [json.loads(d) for d in data[:-1]]


def deltas(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c["choices"][0]["delta"] for c in chunks if c["choices"]]


def joined(chunks: list[dict[str, Any]], key: str) -> str:
    return "".join(d.get(key) or "" for d in deltas(chunks))


def body(stream: bool = False, **extra: Any) -> dict[str, Any]:
    b: dict[str, Any] = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], **extra}
    if stream:
        b["stream"] = True
    return b


def post(client: httpx.Client, url: str, stream: bool = False, **extra: Any) -> httpx.Response:
    return client.post(url + "/chat/completions", json=body(stream, **extra))
