"""The state of one expression run (environment, undefined-name mode, budgets), shared by the compiler's
closures and the predicate builtins."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ExprError, UndefinedName

MAX_STEPS = 1_000_000  # predicate iterations per run (nested `map(1..1000, map(1..1000, ...))` stops here)
# Characters and items that one run may build in total (every call result, large `+`, ranges, predicate
# results): each result is bounded on its own, and this bounds their sum (`[repeat(s, 9e6), ...]`).
MAX_BUILT = 50_000_000

# undefined-name modes
NIL, ERROR, STRICT, KEEP = 0, 1, 2, 3


class Scope:
    """The state of one run: the environment, the undefined-name mode and the predicate variables."""

    __slots__ = ("acc", "built", "env", "index", "lets", "mode", "optional", "ptr", "steps")

    def __init__(self, env: Mapping[str, Any], mode: int, optional: bool) -> None:
        self.env = env
        self.mode = mode
        self.optional = optional
        self.ptr: Any = None
        self.index = 0
        self.acc: Any = None
        self.lets: dict[str, Any] = {}
        self.steps = MAX_STEPS
        self.built = MAX_BUILT

    def undefined(self, name: str) -> Any:
        if self.mode == NIL:
            return None
        raise UndefinedName(f"undefined variable '{name}'", name=name)

    def missing_key(self, path: str | None, key: Any) -> Any:
        if self.mode == STRICT:
            what = path or repr(key)
            raise UndefinedName(f"'{what}' is not defined", name=what)
        return None

    def spend(self, n: int) -> None:
        self.steps -= n
        if self.steps < 0:
            raise ExprError(f"expression too expensive (more than {MAX_STEPS} predicate steps)")

    def charge(self, v: Any) -> Any:
        """Count a built value against the run's total; returns it."""
        t = type(v)
        if t is str or t is list or t is dict:
            self.built -= len(v)
            if self.built < 0:
                raise ExprError(f"expression results too large (more than {MAX_BUILT} characters and items "
                                "in total)")
        return v
