"""Compiled expressions: `compile_expr(src).run(env)`."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .ast import Member, Name
from .compiler import Compiler, Fn
from .errors import ExprError, ExprSyntaxError
from .parser import parse
from .scope import ERROR, KEEP, NIL, STRICT, Scope

_MODES = {"nil": NIL, "error": ERROR, "strict": STRICT, "keep": KEEP}


def mode_of(undefined: str) -> int:
    try:
        return _MODES[undefined]
    except KeyError:
        raise ValueError(f"undefined must be one of {', '.join(_MODES)}, not {undefined!r}") from None


class Program:
    """One compiled expression. Immutable and thread-safe: every run gets its own scope."""

    __slots__ = ("_fn", "path", "source")

    def __init__(self, source: str, fn: Fn, path: str | None = None) -> None:
        self.source = source
        self._fn = fn
        self.path = path  # `global.a.b` when the expression is just a name or a member chain

    def __repr__(self) -> str:
        return f"Program({self.source!r})"

    def run(self, env: Mapping[str, Any] | None = None, *, undefined: str = "nil",
            optional: bool = False) -> Any:
        """Evaluate against `env` (names -> values; callables in it are callable).

        undefined: "nil" - an unknown name is nil (expr-lang's AllowUndefinedVariables, as RuleGo compiles);
        "error" - an unknown name raises ExprError naming it; "strict" - also a missing key reached by
        `a.b` or `a['b']`. optional=True makes every member access behave as `?.` (nil.x is nil).
        """
        scope = Scope(env if env is not None else {}, _MODES[undefined] if undefined in _MODES
                      else mode_of(undefined), optional)
        return self.eval(scope)

    def eval(self, scope: Scope) -> Any:
        try:
            return self._fn(scope)
        except ExprError as e:
            raise e.located(self.source) from None
        except RecursionError:
            raise ExprError("expression too deeply nested to evaluate").located(self.source) from None


@lru_cache(maxsize=8192)
def compile_expr(source: str) -> Program:
    """Parse and compile an expr-lang expression (cached by its text). Raises ExprSyntaxError."""
    src = source.strip()
    if not src:
        raise ExprSyntaxError("empty expression", expression=source, position=0)
    try:
        node = parse(src)
        path = node.name if isinstance(node, Name) else node.path if isinstance(node, Member) else None
        return Program(src, Compiler(src).compile(node), path)
    except RecursionError:
        raise ExprSyntaxError("expression nested too deeply", expression=src, position=0) from None
