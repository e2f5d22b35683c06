"""@tool: schemas from type hints and docstrings; how functions are called."""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import Annotated, Literal

from chainreact.tools import FunctionTool, ToolContext, ToolOutput, tool


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Point:
    x: int
    y: int


def test_schema_from_hints_and_docstring() -> None:
    @tool
    def search(query: str, limit: int = 10, mode: Literal["fast", "deep"] = "fast",
               tags: list[str] | None = None, color: Color = Color.RED,
               scale: Annotated[float, "how much to zoom"] = 1.0, ctx: ToolContext | None = None) -> str:
        """Search the index.

        Longer explanation that is part of the description.

        Args:
            query: what to look for
            limit: at most this many
                results (continued line)
        Returns:
            the hits
        """
        return ""

    assert search.name == "search"
    assert search.description == "Search the index.\n\nLonger explanation that is part of the description."
    p = search.parameters
    assert p["required"] == ["query"]
    assert p["properties"]["query"] == {"type": "string", "description": "what to look for"}
    assert p["properties"]["limit"] == {"type": "integer", "description": "at most this many results "
                                        "(continued line)", "default": 10}
    assert p["properties"]["mode"] == {"enum": ["fast", "deep"], "default": "fast"}
    assert p["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert p["properties"]["color"]["enum"] == ["red", "blue"]
    assert p["properties"]["scale"] == {"type": "number", "description": "how much to zoom", "default": 1.0}
    assert "ctx" not in p["properties"]


def test_dataclass_parameter_uses_pydantic_schema() -> None:
    @tool
    def plot(p: Point) -> str:
        """Plot."""
        return ""

    schema = plot.parameters["properties"]["p"]
    assert schema["properties"] == {"x": {"title": "X", "type": "integer"},
                                    "y": {"title": "Y", "type": "integer"}}


def test_overrides() -> None:
    @tool(name="renamed", description="Custom.")
    def f(a: int) -> int:
        return a

    assert (f.name, f.description) == ("renamed", "Custom.")
    assert f.spec() == {"type": "function", "function": {
        "name": "renamed", "description": "Custom.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}


async def test_sync_runs_in_a_thread_async_is_awaited() -> None:
    main = threading.get_ident()

    @tool
    def sync_fn() -> int:
        """Sync."""
        return threading.get_ident()

    @tool
    async def async_fn() -> int:
        """Async."""
        return threading.get_ident()

    assert int(await sync_fn.run({}, ToolContext())) != main
    assert int(await async_fn.run({}, ToolContext())) == main


async def test_results_are_text() -> None:
    @tool
    def data() -> dict:
        """Data."""
        return {"a": [1, 2], "b": None}

    @tool
    def nothing() -> None:
        """Nothing."""

    @tool
    def flagged() -> ToolOutput:
        """Flagged."""
        return ToolOutput("Error: nope", is_error=True)

    @tool
    def with_ctx(ctx: ToolContext) -> str:
        """Ctx."""
        return ctx.call_id

    assert await data.run({}, ToolContext()) == '{"a":[1,2],"b":null}'
    assert await nothing.run({}, ToolContext()) == ""
    assert await flagged.run({}, ToolContext()) == ToolOutput("Error: nope", True)
    assert await with_ctx.run({}, ToolContext(call_id="c9")) == "c9"
    assert isinstance(data, FunctionTool)
