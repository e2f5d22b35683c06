"""Errors of the expression language."""

from __future__ import annotations

from ..errors import ChainreactError

MAX_QUOTE = 200  # characters of an expression (or of a value) an error message quotes


def quote(text: str, limit: int = MAX_QUOTE) -> str:
    """`text` as an error message shows it: whole when short, else its start and its length (an
    expression can be 100,000 characters; the message must stay readable and small)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


class ExprError(ChainreactError):
    """An expression failed: bad syntax, an undefined name (when undefined names are errors), a type
    mismatch, a refused operation. `expression` is the source text, `position` an offset in it (or None)."""

    def __init__(self, message: str, *, expression: str | None = None, position: int | None = None):
        self.expression = expression
        self.position = position
        self.detail = message  # the message without the expression (callers that show it themselves)
        super().__init__(message)

    def located(self, expression: str) -> ExprError:
        """The same error, its message naming the expression (once)."""
        if self.expression is None:
            self.expression = expression
        self.args = (f"{self.detail} (in expression '{quote(expression)}')",)
        return self


class ExprSyntaxError(ExprError):
    """The expression does not parse; `position` is the offset of the offending token."""


class UndefinedName(ExprError):
    """An undefined top-level name, raised when undefined names are errors (or to keep a template's text).
    `name` is the dotted path as written when known."""

    def __init__(self, message: str, *, name: str, expression: str | None = None,
                 position: int | None = None):
        self.name = name
        super().__init__(message, expression=expression, position=position)
