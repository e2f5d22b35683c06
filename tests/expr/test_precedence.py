"""Operator precedence where expr-lang's answer differs from a plausible other grouping (issue 22: a
mutation swapping `&&` and `||`, or lowering `??`, survived the language tests)."""

from __future__ import annotations

from typing import Any

import pytest

from chainreact.expr import compile_expr


@pytest.mark.parametrize(("src", "want"), [
    # `&&` binds tighter than `||`: grouped the other way each of these is false.
    ("true || true && false", True), ("false && false || true", True), ("true or true and false", True),
    ("false and false or true", True), ("true || false && false", True),
    # `??` binds tighter than any arithmetic (expr-lang precedence 500): `a + (b ?? c)`.
    ("1 + nil ?? 2", 3), ("'x' + missing ?? 'y'", "xy"), ("2 * missing ?? 3", 6), ("10 - nil ?? 4 - 1", 5),
    ("nil ?? nil ?? 3", 3),
])
def test_binding(src: str, want: Any) -> None:
    assert compile_expr(src).run({}) == want
