"""What a replay found different from its recording, one `Diff` each, readable on a terminal.

    step 2, tool add (call_1): result: expected '5', got '6'
    step 3, request: messages[0].content (system): expected 'You add.', got 'You add numbers.'
    answer: expected '2 + 3 = 5', got '2 + 3 = 6'

Kinds: `request` (the agent sent something else than the recorded request), `tool` (a tool call's result,
its arguments, or a call that was not made), `steps` (more or fewer model calls), `answer`, `agent` (an
agent with no recording), `node` (a chain node's output), `turn` (a flow turn's messages), `error` (the
replayed run raised).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SHOW = 160  # characters of a value shown in a diff's text


@dataclass(slots=True)
class Diff:
    kind: str
    message: str = ""
    step: int | None = None
    agent: str | None = None
    tool: str | None = None
    call_id: str | None = None
    path: str | None = None
    expected: Any = None
    got: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "step": self.step, "agent": self.agent, "tool": self.tool,
                "call_id": self.call_id, "path": self.path, "expected": self.expected, "got": self.got,
                "message": str(self)}

    def __str__(self) -> str:
        where = []
        if self.agent and self.kind != "answer":
            where.append(f"agent {self.agent}")
        if self.step is not None:
            where.append(f"step {self.step}")
        if self.tool:
            where.append(f"tool {self.tool}" + (f" ({self.call_id})" if self.call_id else ""))
        elif self.kind not in ("tool", "node"):  # a node's diff names the node itself
            where.append(self.kind)
        head = ", ".join(where)
        body = self.message
        if self.path:
            body = f"{self.path}: {body}" if body else self.path
        if self.expected is not None or self.got is not None:
            body = f"{body}: " if body else ""
            body += f"expected {show(self.expected)}, got {show(self.got)}"
        return f"{head}: {body}" if head else body


def show(value: Any) -> str:
    text = repr(value) if not isinstance(value, dict | list) else _compact(value)
    return text if len(text) <= SHOW else text[: SHOW - 3] + "..."


def _compact(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Diffs:
    """The diffs of one replay, each call/step reported once."""

    items: list[Diff] = field(default_factory=list)
    seen: set[Any] = field(default_factory=set)

    def add(self, diff: Diff) -> None:
        # A changed tool result is resent at every later step, a changed prompt too: one diff each.
        if diff.kind == "tool" and diff.call_id:
            key: Any = ("tool", diff.call_id)
        elif diff.kind == "request":
            key = ("request", diff.agent, diff.path, repr(diff.expected), repr(diff.got))
        else:
            key = None
        if key is not None:
            if key in self.seen:
                return
            self.seen.add(key)
        self.items.append(diff)


_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")


def compare_messages(expected: list[dict[str, Any]], got: list[dict[str, Any]], *, ignore_system: bool
                     ) -> tuple[list[tuple[int, dict[str, Any], dict[str, Any]]], Diff | None]:
    """The tool results that differ (index, expected, got) and the first other difference, if any."""
    tools: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    first: Diff | None = None
    for i in range(max(len(expected), len(got))):
        e = expected[i] if i < len(expected) else None
        g = got[i] if i < len(got) else None
        if e is not None and g is not None:
            if ignore_system and e.get("role") == "system" and g.get("role") == "system":
                continue
            if all(e.get(k) == g.get(k) for k in _FIELDS):
                continue
            if e.get("role") == g.get("role") == "tool" and e.get("tool_call_id") == g.get("tool_call_id"):
                tools.append((i, e, g))
                continue
        if first is None:
            first = _message_diff(i, e, g)
    return tools, first


def _message_diff(i: int, e: dict[str, Any] | None, g: dict[str, Any] | None) -> Diff:
    if e is None:
        assert g is not None
        return Diff("request", f"the agent sends a message more ({g.get('role')})", path=f"messages[{i}]",
                    got=g.get("content"))
    if g is None:
        return Diff("request", f"the agent no longer sends this message ({e.get('role')})",
                    path=f"messages[{i}]", expected=e.get("content"))
    key = next(k for k in _FIELDS if e.get(k) != g.get(k))
    return Diff("request", "", path=f"messages[{i}].{key} ({e.get('role')})", expected=e.get(key),
                got=g.get(key))


def compare_tools(expected: list[dict[str, Any]] | None, got: list[dict[str, Any]] | None) -> Diff | None:
    """The first difference between the recorded and the current tool list (names, then each spec)."""
    def names(specs: list[dict[str, Any]] | None) -> list[str]:
        return [str((s.get("function") or {}).get("name")) for s in specs or []]

    if names(expected) != names(got):
        return Diff("request", "", path="tools", expected=names(expected), got=names(got))
    for e, g in zip(expected or [], got or [], strict=True):
        if e != g:
            fe, fg = e.get("function") or {}, g.get("function") or {}
            key = next((k for k in ("description", "parameters") if fe.get(k) != fg.get(k)), "function")
            return Diff("request", "", path=f"tools[{fe.get('name')}].{key}", expected=fe.get(key),
                        got=fg.get(key))
    return None


def format_diffs(diffs: list[Diff]) -> str:
    return "".join(f"  {d}\n" for d in diffs)


__all__ = ["Diff", "Diffs", "compare_messages", "compare_tools", "format_diffs", "show"]
