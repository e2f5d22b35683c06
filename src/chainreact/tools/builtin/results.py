"""Small helpers shared by the builtin tools: `Error:` results, counts in words, argument caps.

A leaf module (imports nothing from its siblings), so every tool module can use it without import
cycles between the tools.
"""

from __future__ import annotations

from typing import Any

from ..base import ToolOutput


class SearchFailed(Exception):
    """An expected failure of grep or glob; the message becomes the `Error: ...` result."""


def error(message: str) -> ToolOutput:
    return ToolOutput(content=f"Error: {message}", is_error=True)


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def short(s: str, n: int = 120) -> str:
    return s if len(s) <= n else s[:n] + "…"


def positive_cap(value: Any, default: int, limit: int, key: str = "max_results") -> int:
    """A model's optional `max_results` (else `default`): an integer >= 1, never above `limit`."""
    if value is None:
        return min(default, limit)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SearchFailed(f"{key} must be an integer >= 1, got {value!r}")
    return min(value, limit)
