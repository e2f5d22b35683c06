"""Which of a server's tools an agent gets: name lists, include/exclude and jq expressions.

jq semantics (the flow spec only says the expression "should evaluate to true for tools that should be
included" and that "the input is a list of tool objects with properties: name, description"):

1. List form. The expression runs once with `.` = the whole list `[{"name", "description"}, ...]`. If it
   succeeds and every output is an array (e.g. `map(select(...))`, `[.[] | select(...)]`) or every output
   is a tool object / name string (e.g. `.[] | select(...)`), the tools named by those elements are kept.
   Booleans, one per tool in server order (`map(.name == "x")`), are a mask: `true` keeps that tool.
2. Per-tool form. Otherwise (the list run raised, or produced booleans or anything else) the expression
   runs once per tool with `.` = that tool's object; the tool is kept when any output is the boolean
   `true` or is an object with the tool's name (so `select(...)` works too). `false`, `null`, no output
   or anything else drops it. An error in this form is a ConfigError naming the expression.

`description` is always a string ("" when the server gives none), so string filters on it never fail.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

from ...errors import ConfigError

log = logging.getLogger("chainreact.tools.mcp")

FilterType = Literal["all", "include", "exclude", "expression"]


@dataclass(slots=True)
class ToolFilter:
    type: FilterType = "all"
    names: list[str] = field(default_factory=list)  # include/exclude lists
    expression: str = ""
    where: str = "tools[mcp]"
    _program: Any = field(default=None, repr=False, compare=False)

    def apply(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Keep the tools (dicts with at least `name`) this filter selects, in server order."""
        if self.type == "all":
            return list(tools)
        if self.type in ("include", "exclude"):
            present = {t["name"] for t in tools}
            missing = [n for n in self.names if n not in present]
            if missing:
                # Not an error: servers evolve; but a typo silently losing a tool deserves a trace.
                log.warning(
                    "%s: tool(s) %s listed in the %s filter are not offered by the server",
                    self.where,
                    ", ".join(map(repr, missing)),
                    self.type,
                )
            wanted = set(self.names)
            keep = (lambda n: n in wanted) if self.type == "include" else (lambda n: n not in wanted)
            return [t for t in tools if keep(t["name"])]
        selected = self._jq_select(
            [{"name": t["name"], "description": t.get("description") or ""} for t in tools]
        )
        return [t for t in tools if t["name"] in selected]

    def _jq_select(self, objs: list[dict[str, Any]]) -> set[str]:
        prog = self._program
        try:
            outputs = prog.input_value(objs).all()
        except ValueError:
            outputs = None
        if outputs is not None:
            names = _names_from_list_outputs(outputs, objs)
            if names is not None:
                return names
        kept: set[str] = set()
        for obj in objs:
            try:
                outs = prog.input_value(obj).all()
            except ValueError as e:
                raise ConfigError(
                    f"{self.where}: toolFilter.expression {self.expression!r} failed on tool "
                    f"{obj['name']!r}: {e}",
                    errors=[(f"{self.where}.toolFilter.expression", str(e))],
                ) from None
            if any(o is True or (isinstance(o, dict) and o.get("name") == obj["name"]) for o in outs):
                kept.add(obj["name"])
        return kept


def _names_from_list_outputs(outputs: list[Any], objs: list[dict[str, Any]]) -> set[str] | None:
    """Names selected by a list-form expression, or None if the outputs are not a selection."""
    if not outputs or (len(outputs) == 1 and isinstance(outputs[0], bool)):
        return None  # a lone boolean is a per-tool predicate (`.name == "x"` on one tool, or `true`)
    if all(isinstance(o, list) for o in outputs):
        elems = [e for o in outputs for e in o]
    elif all(isinstance(o, dict | str | bool) for o in outputs):
        elems = list(outputs)
    else:
        return None
    if elems and all(isinstance(e, bool) for e in elems):
        # One boolean per tool, in order (`map(.name == "x")`, `.[] | .name == "x"`): a mask.
        if len(elems) != len(objs):
            return None
        return {o["name"] for o, keep in zip(objs, elems, strict=True) if keep}
    names: set[str] = set()
    for e in elems:
        if isinstance(e, str):
            names.add(e)
        elif isinstance(e, dict) and isinstance(e.get("name"), str):
            names.add(e["name"])
        else:
            return None
    return names


def parse_filter(tools: Any, tool_filter: Any, where: str) -> ToolFilter:
    """Build the filter from `config.tools` (rule-chain name list) and/or `toolFilter` (flow spec)."""
    if tools is not None and tool_filter is not None:
        _fail(where, "toolFilter", "give either config.tools or toolFilter, not both")
    if tool_filter is None:
        if tools is None:
            return ToolFilter(where=where)
        if isinstance(tools, str):  # RuleGo's `"tools": "*"`; "a, b" names tools too
            tools = [t.strip() for t in tools.split(",") if t.strip()]
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            _fail(where, "config.tools", "must be a list of tool names")
        if not tools or tools == ["*"]:
            return ToolFilter(where=where)
        if "*" in tools:
            _fail(where, "config.tools", "'*' must be the only entry (it means all tools)")
        return ToolFilter(type="include", names=list(tools), where=where)

    if not isinstance(tool_filter, dict):
        _fail(where, "toolFilter", "must be an object")
    kind = tool_filter.get("type")
    if kind == "all":
        return ToolFilter(where=where)
    if kind in ("include", "exclude"):
        key = "includedTools" if kind == "include" else "excludedTools"
        names = tool_filter.get(key)
        if names is None:
            names = []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            _fail(where, f"toolFilter.{key}", "must be a list of tool names")
        return ToolFilter(type=kind, names=list(names), where=where)
    if kind == "expression":
        expr = tool_filter.get("expression")
        if not isinstance(expr, str) or not expr.strip():
            _fail(
                where,
                "toolFilter.expression",
                "required (a jq expression) when toolFilter.type is 'expression'",
            )
        return ToolFilter(type="expression", expression=expr, where=where, _program=_compile_jq(expr, where))
    _fail(where, "toolFilter.type", f"must be one of all, include, exclude, expression; got {kind!r}")


def _compile_jq(expr: str, where: str) -> Any:
    try:
        import jq
    except ImportError:
        _fail(
            where, "toolFilter.expression", "jq filters need the 'jq' package: pip install 'chainreact[mcp]'"
        )
    try:
        return jq.compile(expr)
    except ValueError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "syntax error"
        _fail(where, "toolFilter.expression", f"invalid jq expression {expr!r}: {first}")


def _fail(where: str, key: str, msg: str) -> NoReturn:
    raise ConfigError(f"{where}.{key}: {msg}", errors=[(f"{where}.{key}", msg)])
