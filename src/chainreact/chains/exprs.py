"""The `${...}` expression language (chainreact.expr, RuleGo's expr-lang dialect) as chain nodes use it."""

from __future__ import annotations

from typing import Any


class Expr:
    """A compiled expression; `run(env)` raises on evaluation errors (components turn them into Failure)."""

    __slots__ = ("prog", "text")

    def __init__(self, text: str):
        from ..expr import ExprSyntaxError, compile_expr, quote

        self.text = text
        try:
            self.prog = compile_expr(text)
        except ExprSyntaxError as e:
            raise ValueError(f"expression {quote(text)!r} does not parse: {e.detail}") from None

    def run(self, env: dict[str, Any]) -> Any:
        return self.prog.run(env)


class Template:
    """A string with `${...}` parts evaluated per message (text without `${` costs nothing)."""

    __slots__ = ("has_expr", "t", "text")

    def __init__(self, text: str):
        self.text = text
        self.has_expr = "${" in text
        self.t: Any = None
        if self.has_expr:
            from ..expr import ExprSyntaxError, parse_template, quote

            try:
                self.t = parse_template(text)
            except ExprSyntaxError as e:
                raise ValueError(f"template {quote(text)!r} does not parse: {e.detail}") from None
            self.has_expr = bool(getattr(self.t, "has_expr", True))

    def render(self, env: dict[str, Any]) -> str:
        """The text with its `${...}` evaluated; an evaluation error renders "" (RuleGo's
        ExecuteAsString), so the component then reports what it could not use."""
        if not self.has_expr:
            return self.text
        from ..expr import ExprError

        try:
            return str(self.t.render(env))
        except ExprError:
            return ""

    def value(self, env: dict[str, Any]) -> Any:
        """The typed value when the text is wholly one `${...}`, else the rendered string."""
        if not self.has_expr:
            return self.text
        return self.t.value(env)


def strip_placeholders(text: str) -> str:
    """RuleGo's NewExprTemplate: `${x}` outside double quotes becomes `x`, so a field may hold either an
    expression or a `${...}` template of one."""
    out: list[str] = []
    i = 0
    in_quotes = False
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            in_quotes = not in_quotes
            out.append(ch)
        elif ch == "\\" and i + 1 < n:
            out.append(text[i:i + 2])
            i += 1
        elif not in_quotes and ch == "$" and text.startswith("${", i):
            end = text.find("}", i + 2)
            if end != -1:
                out.append(text[i + 2:end])
                i = end + 1
                continue
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def expr_template(text: str) -> Expr:
    return Expr(strip_placeholders(text.strip()))
