"""The table of builtin functions and the argument checks every builtin family shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import values as V
from .errors import ExprError

FUNCTIONS: dict[str, Callable[..., Any]] = {}

MAX_PATTERN = 4096  # characters of a regular expression


def register_function(name: str, fn: Callable[..., Any]) -> None:
    """Make `fn` callable as `name(...)` in every expression (an environment value of the same name wins)."""
    if not name.isidentifier():
        raise ValueError(f"not a function name: {name!r}")
    FUNCTIONS[name] = fn


def builtin(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        FUNCTIONS[name] = fn
        return fn

    return deco


def arg_str(v: Any, fn: str, what: str = "argument") -> str:
    if type(v) is not str:
        raise ExprError(f"{fn}(): {what} must be a string, got {V.type_name(v)}")
    return v


def arg_arr(v: Any, fn: str) -> list[Any] | tuple[Any, ...]:
    if not isinstance(v, list | tuple):
        raise ExprError(f"{fn}(): argument must be an array, got {V.type_name(v)}")
    return v


def arg_num(v: Any, fn: str) -> int | float:
    if not V.is_num(v):
        raise ExprError(f"{fn}(): argument must be a number, got {V.type_name(v)}")
    return v


def bounded(s: str, fn: str) -> str:
    if len(s) > V.MAX_STRING:
        raise ExprError(f"{fn}(): result too large (more than {V.MAX_STRING} characters)")
    return s


def sort_key(v: Any) -> Any:
    if V.is_num(v):
        return (0, v, "")
    if type(v) is str:
        return (1, 0, v)
    raise ExprError(f"sort(): cannot sort {V.type_name(v)}")
