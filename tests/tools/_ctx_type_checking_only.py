"""A tool module that imports ToolContext only for type checkers (the common, lint-approved pattern)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chainreact.tools import tool

if TYPE_CHECKING:
    from chainreact.tools import ToolContext


@tool
def count(n: int, ctx: ToolContext) -> str:
    """Count.

    Args:
        n: how many
    """
    return f"{n + 1} {ctx.call_id}"


@tool
def count_optional(n: int, context: ToolContext | None = None) -> str:
    """Count with a differently named, optional context."""
    return f"{n * 2} {context.call_id if context else '-'}"
