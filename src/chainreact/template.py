"""`${...}` templates in configuration strings, and the session `{Key}` format.

`render("Time: ${now()}", ctx)` evaluates each `${expr}` as a Jinja2 *expression* in an immutable sandbox.
Names: `global` (the globals dict, dotted access goes into keys), `ruleChain`, `metadata`, plus
`ctx.vars`; functions `include(path)`, `fileExists(path)`, `now(fmt=None)`, `env(name, default="")`.
A missing key yields "" (logged once per name) so optional globals do not break a document; calling an
unknown function or touching Python internals is a TemplateError. `$${` is a literal `${`.

This module imports only `errors`; jinja2 is imported the first time a string actually contains `${`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["TemplateContext", "TemplateError", "format_session", "has_template", "render", "render_obj"]

log = logging.getLogger("chainreact.template")


class TemplateError(ConfigError):
    """A `${...}` expression (or a session `{Key}` placeholder) could not be parsed or evaluated."""

    def __init__(self, message: str, *, expression: str | None = None, position: int | None = None,
                 source: str | None = None):
        self.expression = expression
        self.position = position
        super().__init__(message, source=source)


@dataclass(slots=True)
class TemplateContext:
    globals: Mapping[str, Any] = field(default_factory=dict)
    rule_chain: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    base_dir: Path | None = None  # include()/fileExists() resolve relative paths here (else the cwd)
    vars: Mapping[str, Any] = field(default_factory=dict)  # extra top-level names
    source: str | None = None  # where the strings come from (a file path), for error messages


def has_template(s: str) -> bool:
    """True if `s` may contain a `${` expression (an escaped `$${` also counts: rendering unescapes it)."""
    return "${" in s


# --- scanning -----------------------------------------------------------------------------------------

# A parsed template: literal strings and (expression, offset) pairs, in order.
_Part = str | tuple[str, int]


@lru_cache(maxsize=4096)
def _parse(text: str) -> tuple[_Part, ...]:
    parts: list[_Part] = []
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
            end = _find_close(text, j + 2)
            expr = text[j + 2 : end].strip()
            if not expr:
                raise TemplateError(f"empty expression '${{}}' at position {j}", expression="", position=j)
            if lit:
                parts.append("".join(lit))
                lit = []
            parts.append((expr, j))
            i = end + 1
        else:
            lit.append("$")
            i = j + 1
    if lit:
        joined = "".join(lit)
        if joined:
            parts.append(joined)
    return tuple(parts)


def _find_close(text: str, start: int) -> int:
    """Index of the `}` closing an expression that starts at `start`, skipping quoted strings and
    nested brackets (so `${include('a}b.md')}` and `${ {'a': 1}['a'] }` work)."""
    depth = 0
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            k = i + 1
            while k < n and text[k] != c:
                k += 2 if text[k] == "\\" else 1
            if k >= n:
                raise TemplateError(
                    f"unterminated string in expression at position {start - 2}: {text[start - 2:][:80]!r}",
                    expression=text[start:], position=start - 2,
                )
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
    raise TemplateError(
        f"unterminated '${{' at position {start - 2} (no matching '}}'): {text[start - 2:][:80]!r}",
        expression=text[start:], position=start - 2,
    )


# --- evaluation -----------------------------------------------------------------------------------------

_env_lock = threading.Lock()
_env: Any = None
_compiled: dict[str, Callable[..., Any]] = {}
_MAX_COMPILED = 4096
_warned: set[str] = set()
_MAX_RESULT = 10_000_000  # refuse `'x' * 10**10` and friends: the sandbox does not bound sizes itself


def _environment() -> Any:
    global _env
    if _env is not None:
        return _env
    with _env_lock:
        if _env is None:
            _env = _make_environment()
    return _env


def _make_environment() -> Any:
    # Deferred: jinja2 costs ~30 ms to import and most strings never need it.
    from jinja2 import Undefined
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Missing(Undefined):
        """A missing name or key: behaves as "" (also in `+`), chains on attribute access."""

        __slots__ = ()

        def __str__(self) -> str:
            return ""

        def __add__(self, other: Any) -> Any:
            return other if isinstance(other, str) else self._fail_with_undefined_error()

        def __radd__(self, other: Any) -> Any:
            return other if isinstance(other, str) else self._fail_with_undefined_error()

        def __getattr__(self, name: str) -> Any:
            if name[:2] == "__":
                raise AttributeError(name)
            return self

        __getitem__ = __getattr__

    class Env(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(["*", "**"])

        def getattr(self, obj: Any, attribute: str) -> Any:
            if attribute[:1] == "_":
                # Never reach Python internals, whatever the object (also on missing values).
                raise SecurityError(f"access to attribute {attribute!r} is not allowed")
            # Dotted access into dicts means keys (so a global named "items" is not dict.items).
            if isinstance(obj, Mapping):
                if attribute in obj:
                    return obj[attribute]
                return self.undefined(obj=obj, name=attribute)
            return super().getattr(obj, attribute)

        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} is not allowed")

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**":
                if isinstance(right, int | float) and abs(right) > 1024:
                    raise SecurityError("exponent too large")
                return left**right
            if operator == "*":
                for seq, k in ((left, right), (right, left)):
                    sized = isinstance(seq, str | list | tuple) and isinstance(k, int)
                    if sized and len(seq) * k > _MAX_RESULT:
                        raise SecurityError(f"result too large (more than {_MAX_RESULT} items)")
                return left * right
            return super().call_binop(context, operator, left, right)

    env = Env(undefined=Missing)
    env.globals.clear()  # no range/lipsum/cycler...: fewer names to copy into every evaluation
    return env


def _compile(expr: str) -> Callable[..., Any]:
    fn = _compiled.get(expr)
    if fn is None:
        env = _environment()
        fn = env.compile_expression(expr, undefined_to_none=False)
        if len(_compiled) >= _MAX_COMPILED:
            _compiled.clear()  # crude bound; configs have few distinct expressions
        _compiled[expr] = fn
    return fn


def _resolve(path: Any, ctx: TemplateContext) -> Path:
    p = Path(str(path)).expanduser()
    if not p.is_absolute() and ctx.base_dir is not None:
        p = Path(ctx.base_dir) / p
    return p


def _functions(ctx: TemplateContext) -> dict[str, Any]:
    def include(path: Any) -> str:
        p = _resolve(path, ctx)
        try:
            return p.read_text(encoding="utf-8")
        except FileNotFoundError:
            _warn_once(f"include: {p}", "template include(%r): %s not found; using an empty string", path, p)
            return ""
        except IsADirectoryError:
            raise TemplateError(f"include({path!r}): {p} is a directory, not a file") from None

    def file_exists(path: Any) -> bool:
        return _resolve(path, ctx).exists()

    def now(fmt: str | None = None) -> str:
        t = datetime.now().astimezone()
        return t.strftime(fmt) if fmt else t.isoformat(timespec="seconds")

    def env(name: str, default: str = "") -> str:
        return os.environ.get(name, default)

    return {"include": include, "fileExists": file_exists, "now": now, "env": env}


def _warn_once(key: str, msg: str, *args: Any) -> None:
    if key in _warned:
        return
    if len(_warned) > 10_000:
        _warned.clear()
    _warned.add(key)
    log.warning(msg, *args)


def _to_str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list | tuple):
        import orjson

        try:
            return orjson.dumps(value, default=str).decode()
        except TypeError:
            return str(value)
    return str(value)


def _evaluate(expr: str, pos: int, names: dict[str, Any], ctx: TemplateContext) -> str:
    fn = _compiled.get(expr)
    try:
        if fn is None:
            fn = _compile(expr)
        value = fn(**names)
    except TemplateError:
        raise
    except Exception as e:
        raise _error_for(e, expr, pos, ctx) from None
    if isinstance(value, str):
        return value
    if isinstance(value, _environment().undefined):
        name = getattr(value, "_undefined_name", None) or expr
        _warn_once(f"missing: {expr}", "template '${%s}': %r is not defined; using an empty string",
                   expr, name)
        return ""
    return _to_str(value)


def _error_for(e: Exception, expr: str, pos: int, ctx: TemplateContext) -> TemplateError:
    # jinja2 is imported here, on the error path only, to keep the hot path free of import statements.
    from jinja2.exceptions import SecurityError, TemplateSyntaxError, UndefinedError

    where = f" in {ctx.source}" if ctx.source else ""
    head = f"'${{{expr}}}' at position {pos}{where}"
    if isinstance(e, TemplateSyntaxError):
        msg = f"syntax error in {head}: {e.message}"
    elif isinstance(e, SecurityError):
        msg = f"{head} is not allowed: {e}"
    elif isinstance(e, UndefinedError):
        msg = f"{head}: {e.message} (functions: include, fileExists, now, env; names: global, ruleChain, " \
            "metadata)"
    else:
        msg = f"{head} failed: {type(e).__name__}: {e}"
    return TemplateError(msg, expression=expr, position=pos, source=ctx.source)


def _names(ctx: TemplateContext) -> dict[str, Any]:
    names: dict[str, Any] = dict(ctx.vars)
    names["global"] = ctx.globals
    names["ruleChain"] = ctx.rule_chain
    names["metadata"] = ctx.metadata
    names.update(_functions(ctx))
    return names


def render(text: str, ctx: TemplateContext | None = None) -> str:
    """Evaluate every `${expr}` in `text`. A string without `${` is returned unchanged at once."""
    if "${" not in text:
        return text
    ctx = ctx or TemplateContext()
    try:
        parts = _parse(text)
    except TemplateError as e:
        if ctx.source and e.source is None:
            e.source = ctx.source
            e.args = (f"{e.args[0]} in {ctx.source}",)
        raise
    names: dict[str, Any] | None = None
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        else:
            if names is None:
                names = _names(ctx)
            out.append(_evaluate(part[0], part[1], names, ctx))
    return "".join(out)


def render_obj(obj: Any, ctx: TemplateContext | None = None) -> Any:
    """Render every string containing `${` in nested dicts/lists (keys are left alone). Returns a copy
    where something changed; values without templates are returned as they are."""
    if isinstance(obj, str):
        return render(obj, ctx) if "${" in obj else obj
    if isinstance(obj, dict):
        return {k: render_obj(v, ctx) for k, v in obj.items()}
    if isinstance(obj, list):
        return [render_obj(v, ctx) for v in obj]
    if isinstance(obj, tuple):
        return tuple(render_obj(v, ctx) for v in obj)
    return obj


# --- session {Key} format -------------------------------------------------------------------------------


def format_session(text: str, values: Mapping[str, Any]) -> str:
    """Fill `{Key}` placeholders from `values` (the ChatModelAgent's SessionValues, pyfmt style).

    `{{` and `}}` are literal braces. An unknown key, an unclosed `{` or a lone `}` is a TemplateError.
    Only plain key lookup: no attribute access or format specs, so a prompt cannot reach into objects.
    `${...}` expressions (and `$${`) are copied through untouched, so a text can carry both kinds: fill
    the session values first, then `render` (the agent does), and included files never meet `{Key}` rules.
    """
    if "{" not in text and "}" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "$":
            skip = 3 if text.startswith("$${", i) else 2 if text.startswith("${", i) else 0
            if skip:  # an expression, or an escaped one: copied whole, braces included
                end = _find_close(text, i + skip)
                out.append(text[i : end + 1])
                i = end + 1
            else:
                out.append("$")
                i += 1
            continue
        if c == "{":
            if text.startswith("{{", i):
                out.append("{")
                i += 2
                continue
            end = text.find("}", i + 1)
            if end < 0:
                raise TemplateError(f"unclosed '{{' at position {i}; write '{{{{' for a literal brace",
                                    expression=text[i:][:40], position=i)
            key = text[i + 1 : end].strip()
            if "{" in key:
                raise TemplateError(
                    f"'{{' inside placeholder at position {i}; write '{{{{' for a literal brace",
                    expression=key, position=i,
                )
            if key not in values:
                known = ", ".join(sorted(map(str, values))) or "none"
                raise TemplateError(f"unknown session key {key!r} at position {i} (known keys: {known}); "
                                    "write '{{' and '}}' for literal braces", expression=key, position=i)
            out.append(_to_str(values[key]))
            i = end + 1
        elif c == "}":
            if text.startswith("}}", i):
                out.append("}")
                i += 2
                continue
            raise TemplateError(f"single '}}' at position {i}; write '}}}}' for a literal brace",
                                expression="}", position=i)
        else:
            j = i
            while j < n and text[j] not in "{}$":
                j += 1
            out.append(text[i:j])
            i = j
    return "".join(out)
