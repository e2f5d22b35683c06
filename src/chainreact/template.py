"""`${...}` templates in configuration strings, and the session `{Key}` format.

`render("Time: ${now()}", ctx)` evaluates each `${expr}` with RuleGo's expression language
(`chainreact.expr`, expr-lang semantics). Names: `global` (the globals), `ruleChain`, `metadata`, plus
`ctx.vars`; functions: expr-lang's builtins, `include(path)`, `fileExists(path)` (relative to
`ctx.base_dir`), `now()`, `env(name, default="")`. A missing key or name yields "" (logged once per
expression) so optional globals do not break a document; with `strict=True` it is a TemplateError naming
the variable and the field. `$${` is a literal `${`.

Data never becomes a template: rendering is one pass (a value's text is not scanned again), and
`render_session` fills session `{Key}` values in that same pass, so a user's `${include('/etc/passwd')}`
stays text.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["TemplateContext", "TemplateError", "format_session", "has_template", "render", "render_obj",
           "render_session", "render_value"]

log = logging.getLogger("chainreact.template")


class TemplateError(ConfigError):
    """A `${...}` expression (or a session `{Key}` placeholder) could not be parsed or evaluated.
    `variable` names the undefined variable when that is the cause."""

    def __init__(self, message: str, *, expression: str | None = None, position: int | None = None,
                 source: str | None = None, variable: str | None = None, field: str | None = None):
        self.expression = expression
        self.position = position
        self.variable = variable
        self.field = field
        super().__init__(message, source=source)


@dataclass(slots=True)
class TemplateContext:
    globals: Mapping[str, Any] = field(default_factory=dict)
    rule_chain: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    base_dir: Path | None = None  # include()/fileExists() resolve relative paths here (else the cwd)
    vars: Mapping[str, Any] = field(default_factory=dict)  # extra top-level names
    source: str | None = None  # where the strings come from (a file path), for error messages
    strict: bool = False  # an undefined name or key is an error (also per call: render(..., strict=True))


def has_template(s: str) -> bool:
    """True if `s` may contain a `${` expression (an escaped `$${` also counts: rendering unescapes it)."""
    return "${" in s


# --- names and functions ----------------------------------------------------------------------------------

_warned: set[str] = set()


def _warn_once(key: str, msg: str, *args: Any) -> None:
    if key in _warned:
        return
    if len(_warned) > 10_000:
        _warned.clear()
    _warned.add(key)
    log.warning(msg, *args)


def _resolve(path: Any, ctx: TemplateContext) -> Path:
    p = Path(str(path)).expanduser()
    if not p.is_absolute() and ctx.base_dir is not None:
        p = Path(ctx.base_dir) / p
    return p


def _names(ctx: TemplateContext) -> dict[str, Any]:
    from .expr import ExprError, read_text_file

    def include(path: Any) -> str:
        if not isinstance(path, str):
            raise ExprError(f"include(): path must be a string, got {type(path).__name__}")
        p = _resolve(path, ctx)
        text = read_text_file(p)
        if text is None:
            _warn_once(f"include: {p}", "template include(%r): %s not found; using an empty string", path, p)
            return ""
        return text

    def file_exists(path: Any) -> bool:
        try:
            return _resolve(path, ctx).exists()
        except (OSError, ValueError):
            return False

    def env(name: Any, default: Any = "") -> Any:
        return os.environ.get(str(name), default)

    names: dict[str, Any] = dict(ctx.vars)
    names["global"] = ctx.globals
    names["ruleChain"] = ctx.rule_chain
    names["metadata"] = ctx.metadata
    names["include"] = include
    names["fileExists"] = file_exists
    names["env"] = env
    return names


# --- rendering --------------------------------------------------------------------------------------------


def _template(text: str, ctx: TemplateContext, fld: str | None) -> Any:
    from .expr import ExprSyntaxError, parse_template

    try:
        return parse_template(text)
    except ExprSyntaxError as e:
        raise _error(e, ctx, fld) from None


def _error(e: Exception, ctx: TemplateContext, fld: str | None, expr: str | None = None,
           pos: int | None = None) -> TemplateError:
    from .expr import ExprSyntaxError, UndefinedName, quote

    where = "".join([f" in field {fld}" if fld else "", f" in {ctx.source}" if ctx.source else ""])
    expression = getattr(e, "expression", None) if expr is None else expr
    position = getattr(e, "position", None) if pos is None else pos
    detail = getattr(e, "detail", str(e))
    variable = None
    shown = quote(expr or "")
    if isinstance(e, ExprSyntaxError) and expr is None:
        msg = f"{detail}{where}"
    elif isinstance(e, UndefinedName):
        variable = e.name
        msg = f"'${{{shown}}}' at position {pos}{where}: {detail} (names: global, ruleChain, metadata)"
    else:
        msg = f"'${{{shown}}}' at position {pos}{where}: {detail}"
    return TemplateError(msg, expression=expression, position=position, source=ctx.source, variable=variable,
                         field=fld)


def _evaluate(text: str, ctx: TemplateContext, strict: bool, fld: str | None, whole: bool) -> Any:
    """Render `text`; with `whole`, a text that is wholly one `${...}` gives the raw value (nil: "")."""
    from .expr import ExprError
    from .expr.scope import NIL, STRICT, Scope
    from .expr.values import MAX_STRING, to_string

    t = _template(text, ctx, fld)
    scope = Scope(_names(ctx), STRICT if strict else NIL, not strict)
    single = t.whole if whole else None
    out: list[str] = []
    size = 0
    for p in (single,) if single is not None else t.parts:
        if isinstance(p, str):
            piece = p
        else:
            prog, src, pos = p
            try:
                value = prog.eval(scope)
            except ExprError as e:
                raise _error(e, ctx, fld, src, pos) from None
            if value is None:
                if prog.path:
                    _warn_once(f"missing: {src}", "template '${%s}': %s is not defined; using an empty "
                               "string", src, prog.path)
                else:
                    _warn_once(f"missing: {src}", "template '${%s}': the value is nil; using an empty string",
                               src)
            if single is not None:
                return "" if value is None else value
            piece = to_string(value)
        size += len(piece)
        if size > MAX_STRING:
            raise TemplateError(f"template result too large (more than {MAX_STRING} characters)"
                                f"{_at(ctx, fld)}", source=ctx.source, field=fld)
        out.append(piece)
    return "".join(out)


def _at(ctx: TemplateContext, fld: str | None) -> str:
    return "".join([f" in field {fld}" if fld else "", f" in {ctx.source}" if ctx.source else ""])


def render(text: str, ctx: TemplateContext | None = None, *, strict: bool | None = None,
           field: str | None = None) -> str:
    """Evaluate every `${expr}` in `text` and return the text. A string without `${` is returned at once.
    strict (default: ctx.strict): an undefined name or key raises TemplateError naming it (and `field`)."""
    if "${" not in text:
        return text
    ctx = ctx or TemplateContext()
    return str(_evaluate(text, ctx, ctx.strict if strict is None else strict, field, whole=False))


def render_value(text: str, ctx: TemplateContext | None = None, *, strict: bool | None = None,
                 field: str | None = None) -> Any:
    """Like `render`, but a string that is wholly one `${...}` gives the value itself: a number stays a
    number, a map a map (nil gives "")."""
    if "${" not in text:
        return text
    ctx = ctx or TemplateContext()
    return _evaluate(text, ctx, ctx.strict if strict is None else strict, field, whole=True)


def render_obj(obj: Any, ctx: TemplateContext | None = None, *, strict: bool | None = None,
               field: str | None = None) -> Any:
    """Render every string containing `${` in nested dicts/lists (keys are left alone). A string that is
    wholly one `${...}` keeps the value's type (`"${global.timeout}"` gives 30, not "30"). Returns a copy
    where something changed; values without templates are returned as they are. `field` is the JSON path of
    `obj`, used in error messages (`tools[0].config.workDir`)."""
    if isinstance(obj, str):
        return render_value(obj, ctx, strict=strict, field=field) if "${" in obj else obj
    if isinstance(obj, dict):
        return {k: render_obj(v, ctx, strict=strict, field=f"{field}.{k}" if field else str(k))
                for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        out = [render_obj(v, ctx, strict=strict, field=f"{field or ''}[{i}]") for i, v in enumerate(obj)]
        return tuple(out) if isinstance(obj, tuple) else out
    return obj


# --- session {Key} format -------------------------------------------------------------------------------


def format_session(text: str, values: Mapping[str, Any]) -> str:
    """Fill `{Key}` placeholders from `values` (the ChatModelAgent's SessionValues, pyfmt style).

    `{{` and `}}` are literal braces. An unknown key, an unclosed `{` or a lone `}` is a TemplateError.
    Only plain key lookup: no attribute access or format specs, so a prompt cannot reach into objects.
    `${...}` expressions (and `$${`) are copied through untouched.

    Do not `render` the result when the values may come from users: a value's `${...}` would be evaluated.
    `render_session` does both in one pass, and is what the agent uses.
    """
    if "{" not in text and "}" not in text:
        return text
    return _session_pass(text, values, None, False)


def render_session(text: str, values: Mapping[str, Any] | None, ctx: TemplateContext | None = None, *,
                   strict: bool | None = None) -> str:
    """`${...}` expressions and session `{Key}` placeholders in one pass: session values are data (a
    user's `${include('/etc/passwd')}` stays that text) and expression results are not scanned for
    `{Key}` (an included file may hold JSON braces)."""
    if values is None or ("{" not in text.replace("${", "") and "}" not in text):
        return render(text, ctx, strict=strict)
    ctx = ctx or TemplateContext()
    return _session_pass(text, values, ctx, ctx.strict if strict is None else strict)


def _session_pass(text: str, values: Mapping[str, Any], ctx: TemplateContext | None, strict: bool) -> str:
    from .expr import ExprSyntaxError, find_close

    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "$":
            skip = 3 if text.startswith("$${", i) else 2 if text.startswith("${", i) else 0
            if skip:  # an expression, or an escaped one: braces included
                try:
                    end = find_close(text, i + skip)
                except ExprSyntaxError as e:
                    raise TemplateError(str(e), expression=e.expression, position=e.position) from None
                segment = text[i : end + 1]
                if ctx is None:
                    out.append(segment)
                elif skip == 3:
                    out.append(segment[1:])  # `$${x}` is the text `${x}`
                else:
                    out.append(_evaluate_at(segment, i, ctx, strict))
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


def _evaluate_at(segment: str, offset: int, ctx: TemplateContext, strict: bool) -> str:
    """One `${...}` of a larger text; error positions are made relative to that text."""
    try:
        return str(_evaluate(segment, ctx, strict, None, whole=False))
    except TemplateError as e:
        if e.position is not None:
            e.position += offset
            old, new = f"at position {e.position - offset}", f"at position {e.position}"
            e.args = (e.args[0].replace(old, new, 1),)
        raise


def _to_str(value: Any) -> str:
    from .expr import to_string

    return to_string(value)
