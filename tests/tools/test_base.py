"""@tool: schemas from type hints and docstrings; how functions are called."""

from __future__ import annotations

import datetime
import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel

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
    assert p["properties"]["mode"] == {"enum": ["fast", "deep"], "type": "string", "default": "fast"}
    assert p["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert p["properties"]["color"] == {"enum": ["red", "blue"], "type": "string", "default": "red"}
    assert p["properties"]["scale"] == {"type": "number", "description": "how much to zoom", "default": 1.0}
    assert "ctx" not in p["properties"]


def test_dataclass_parameter_uses_pydantic_schema() -> None:
    @tool
    def plot(p: Point) -> str:
        """Plot."""
        return ""

    schema = plot.parameters["properties"]["p"]
    assert schema == {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                      "required": ["x", "y"], "additionalProperties": False}


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


async def test_thread_false_calls_a_sync_function_on_the_loop() -> None:
    main = threading.get_ident()

    @tool(thread=False)
    def inline_fn(n: int) -> int:
        """Inline."""
        if n < 0:
            raise ValueError("negative")
        return threading.get_ident() + n

    assert inline_fn.thread is False and tool(lambda: 1).thread is True
    assert int(await inline_fn.run({"n": 0}, ToolContext())) == main
    out = await inline_fn.run({"n": "x"}, ToolContext())  # arguments are still converted and checked
    assert isinstance(out, ToolOutput) and out.is_error and "invalid arguments for inline_fn" in out.content
    with pytest.raises(ValueError, match="negative"):  # the loop's tool boundary turns it into Error:
        await inline_fn.run({"n": -1}, ToolContext())


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


# --- one pydantic model: schema and conversion (issue 9 item 15) -----------------------------------

class Item(BaseModel):
    name: str
    qty: int = 1


class Node(BaseModel):
    label: str
    children: list[Node] = []


async def test_arguments_arrive_in_the_declared_types() -> None:
    seen: dict[str, object] = {}

    @tool
    def order(items: list[Item], when: datetime.date, pts: list[Point], color: Color,
              note: str | None = None) -> str:
        """Order."""
        seen.update(items=items, when=when, pts=pts, color=color, note=note)
        return "ok"

    out = await order.run({"items": [{"name": "a", "qty": 2}, {"name": "b"}], "when": "2026-11-30",
                           "pts": [{"x": 1, "y": 2}], "color": "blue"}, ToolContext())
    assert out == "ok"
    assert seen["items"] == [Item(name="a", qty=2), Item(name="b", qty=1)]
    assert all(isinstance(i, Item) for i in seen["items"])  # type: ignore[attr-defined]
    assert seen["when"] == datetime.date(2026, 11, 30)
    assert seen["pts"] == [Point(1, 2)]
    assert seen["color"] is Color.BLUE
    assert seen["note"] is None
    props = order.parameters["properties"]
    assert props["when"] == {"type": "string", "format": "date"}
    assert props["items"] == {"type": "array", "items": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "qty": {"type": "integer", "default": 1}},
        "required": ["name"]}}
    assert order.parameters["required"] == ["items", "when", "pts", "color"]


async def test_bad_arguments_are_an_error_result_not_a_crash() -> None:
    @tool
    def order(items: list[Item], when: datetime.date) -> str:
        """Order."""
        return "ok"

    out = await order.run({"items": [{"qty": "many"}], "when": "soon", "extra": 1}, ToolContext())
    assert isinstance(out, ToolOutput) and out.is_error
    assert out.content.startswith("Error: invalid arguments for order: ")
    assert "$.items[0].name: Field required" in out.content
    assert "$.items[0].qty: Input should be a valid integer" in out.content and "'many'" in out.content
    assert "$.when: Input should be a valid date" in out.content
    assert "$.extra: unexpected argument" in out.content
    missing = await order.run({}, ToolContext())
    assert isinstance(missing, ToolOutput) and missing.is_error
    assert "$.items: Field required" in missing.content and "$.when: Field required" in missing.content


async def test_type_checking_only_tool_context_import() -> None:
    from tests.tools import _ctx_type_checking_only as mod

    assert mod.count.parameters == {"type": "object", "properties": {
        "n": {"type": "integer", "description": "how many"}}, "required": ["n"]}
    assert await mod.count.run({"n": "4"}, ToolContext(call_id="c1")) == "5 c1"
    assert mod.count_optional.parameters["properties"] == {"n": {"type": "integer"}}
    assert await mod.count_optional.run({"n": 3}, ToolContext(call_id="c2")) == "6 c2"


def test_unresolvable_annotation_names_the_parameter() -> None:
    def f(when: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    def g(when: list[int]) -> str:
        return ""

    g.__annotations__ = {"when": list["Missing"]}  # noqa: F821 - a forward reference nothing defines

    with pytest.raises(TypeError, match=r"parameter 'when'.*TYPE_CHECKING"):
        tool(f)
    with pytest.raises(TypeError, match=r"'when': list\['Missing'\].*TYPE_CHECKING"):
        tool(g)


async def test_parameter_names_that_clash_with_pydantic_attributes() -> None:
    @tool
    def f(json: str, schema: int, model_config: bool = False, copy: list[int] | None = None) -> str:
        """Clashes."""
        return f"{json}|{schema}|{model_config}|{copy}"

    assert sorted(f.parameters["properties"]) == ["copy", "json", "model_config", "schema"]
    assert await f.run({"json": "j", "schema": 2, "copy": [1]}, ToolContext()) == "j|2|False|[1]"


async def test_kwargs_and_positional_only() -> None:
    @tool
    def f(a: int, /, b: int = 0, **rest: object) -> str:
        """Mixed."""
        return f"{a}|{b}|{sorted(rest.items())}"

    assert await f.run({"a": "1", "z": 3}, ToolContext()) == "1|0|[('z', 3)]"


def test_recursive_model_keeps_its_defs() -> None:
    @tool
    def tree(root: Node) -> str:
        """Tree."""
        return ""

    p = tree.parameters
    assert p["properties"]["root"] == {"$ref": "#/$defs/Node"}
    assert p["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "title" not in p["$defs"]["Node"]


def test_unserialisable_default_and_unknown_type() -> None:
    class Opaque:
        pass

    sentinel = Opaque()

    @tool
    def f(x: Opaque = sentinel, cb: Callable[[], None] | None = None) -> str:
        """Opaque."""
        return ""

    assert f.parameters["properties"]["x"] == {}


def test_local_types_resolve_only_from_the_defining_function() -> None:
    class Local(BaseModel):
        v: int

    def f(x: Local) -> str:
        return ""

    def wrapper_elsewhere(fn: Callable[..., object]) -> FunctionTool:
        Local = int  # noqa: F841 - a caller's local of the same name must not be picked up
        return FunctionTool(fn)

    t = wrapper_elsewhere(f)
    assert t.parameters["properties"]["x"]["properties"] == {"v": {"type": "integer"}}
