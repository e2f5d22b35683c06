from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

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
def explode(reason: str) -> str:
    """Always fails.

    Args:
        reason: why
    """
    raise ValueError(f"boom: {reason}")


class Traces:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{name}: {[s.name for s in self.spans]}"
        return found[0]

    def children(self, parent: ReadableSpan) -> list[str]:
        assert parent.context is not None
        return sorted(s.name for s in self.spans
                      if s.parent is not None and s.parent.span_id == parent.context.span_id)


@pytest.fixture
def traces() -> Iterator[Traces]:
    t = Traces()
    yield t
    t.provider.shutdown()


def call(name: str, arguments: dict[str, object], id: str) -> dict[str, object]:
    return {"name": name, "arguments": arguments, "id": id}
