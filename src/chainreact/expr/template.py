"""Strings with `${expr}` parts (RuleGo's templates): `parse_template("Hi ${name}").render(env)`."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .errors import ExprError, ExprSyntaxError, UndefinedName, quote
from .program import Program, compile_expr, mode_of
from .scope import KEEP, Scope
from .values import MAX_STRING, to_string


class Template:
    """A parsed template: literal text and compiled expressions, in order."""

    __slots__ = ("has_expr", "parts", "source", "whole")

    def __init__(self, source: str, parts: tuple[str | tuple[Program, str, int], ...]) -> None:
        self.source = source
        self.parts = parts
        self.has_expr = any(not isinstance(p, str) for p in parts)
        # A string that is wholly one `${...}` (spaces around allowed, as RuleGo) yields the raw value:
        # `whole` is that part, else None.
        exprs = [p for p in parts if not isinstance(p, str)]
        lits = [p for p in parts if isinstance(p, str)]
        self.whole = exprs[0] if len(exprs) == 1 and not "".join(lits).strip() else None

    def __repr__(self) -> str:
        return f"Template({self.source!r})"

    @property
    def expressions(self) -> list[tuple[str, int]]:
        """(expression text, offset of its `${`) for every expression."""
        return [(p[1], p[2]) for p in self.parts if not isinstance(p, str)]

    def render(self, env: Mapping[str, Any] | None = None, *, undefined: str = "nil",
               optional: bool = False) -> str:
        """The text with every `${...}` replaced by its value as a string (nil is "", maps and lists are
        JSON). undefined="keep" leaves a `${...}` that names an undefined variable as it is."""
        if not self.has_expr:
            return self.parts[0] if self.parts else ""  # type: ignore[return-value]
        mode = mode_of(undefined)
        scope = Scope(env if env is not None else {}, mode, optional)
        out: list[str] = []
        size = 0
        for p in self.parts:
            if isinstance(p, str):
                piece = p
            else:
                try:
                    piece = to_string(p[0].eval(scope))
                except UndefinedName:
                    if mode != KEEP:
                        raise
                    piece = "${" + p[1] + "}"
            size += len(piece)
            if size > MAX_STRING:
                raise ExprError(f"template result too large (more than {MAX_STRING} characters)")
            out.append(piece)
        return "".join(out)

    def value(self, env: Mapping[str, Any] | None = None, *, undefined: str = "nil",
              optional: bool = False) -> Any:
        """Like render, but a template that is wholly one `${...}` returns the value itself (a number stays
        a number, a map a map). With undefined="keep" an undefined name returns the source text."""
        if self.whole is None:
            return self.render(env, undefined=undefined, optional=optional)
        mode = mode_of(undefined)
        try:
            return self.whole[0].eval(Scope(env if env is not None else {}, mode, optional))
        except UndefinedName:
            if mode != KEEP:
                raise
            return self.source


@lru_cache(maxsize=8192)
def parse_template(text: str) -> Template:
    """Split `text` into literal parts and `${...}` expressions, compiling each (cached by the text).
    `$${` is a literal `${`. An expression ends at the first `}` outside quotes and brackets. Raises
    ExprSyntaxError with `position` = the offset of the `${` in `text`."""
    parts: list[str | tuple[Program, str, int]] = []
    lit: list[str] = []
    i, n = 0, len(text)
    while i < n:
        j = text.find("$", i)
        if j < 0:
            lit.append(text[i:])
            break
        lit.append(text[i:j])
        if text.startswith("$${", j):
            lit.append("${")
            i = j + 3
        elif text.startswith("${", j):
            end = find_close(text, j + 2)
            src = text[j + 2 : end]
            if not src.strip():
                raise ExprSyntaxError(f"empty expression '${{}}' at position {j}", expression="", position=j)
            try:
                prog = compile_expr(src)
            except ExprSyntaxError as e:
                shown = quote(src.strip())
                raise ExprSyntaxError(f"syntax error in '${{{shown}}}' at position {j}: {e.detail}",
                                      expression=src.strip(), position=j) from None
            if lit:
                parts.append("".join(lit))
                lit = []
            parts.append((prog, src.strip(), j))
            i = end + 1
        else:
            lit.append("$")
            i = j + 1
    joined = "".join(lit)
    if joined or not parts:
        parts.append(joined)
    return Template(text, tuple(parts))


def find_close(text: str, start: int) -> int:
    """Index of the `}` that closes an expression starting at `start`, skipping quoted strings and nested
    brackets (so `${include('a}b.md')}` and `${ {'a': 1}['a'] }` work)."""
    depth = 0
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            k = i + 1
            while k < n and text[k] != c:
                k += 2 if (text[k] == "\\" and c != "`") else 1
            if k >= n:
                raise ExprSyntaxError(
                    f"unterminated string in expression at position {start - 2}: {text[start - 2:][:80]!r}",
                    expression=text[start:], position=start - 2)
            i = k + 1
            continue
        if c in "{[(":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    raise ExprSyntaxError(
        f"unterminated '${{' at position {start - 2} (no matching '}}'): {text[start - 2:][:80]!r}",
        expression=text[start:], position=start - 2)


def render(text: str, env: Mapping[str, Any] | None = None, **kw: Any) -> str:
    """`parse_template(text).render(env, ...)`, with a fast exit for text without `${`."""
    if "${" not in text:
        return text
    return parse_template(text).render(env, **kw)


__all__ = ["ExprError", "Template", "find_close", "parse_template", "render"]
