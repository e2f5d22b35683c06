"""The spec's `{{...}}` expressions, on top of chainreact.expr (expr-lang, sandboxed: no Python eval).

Two readings, chosen by where the text is used:

- a template (`userMessage`, `systemMessage`, `memoryId`, `userIdentityExpression`, `answerMessage`,
  message nodes): each `{{x}}` is replaced by the value of x as text (nil is "", maps and lists are JSON);
- a condition (`agentOutcomes[].condition`): each `{{x}}` is replaced by `(x)` *as an expression*, so
  `{{output.resolved}} == true` is `(output.resolved) == true` and compares the boolean itself, and
  `{{output.priority}} == 'urgent'` compares the string. A condition without `{{` is an expression as it is.

An expression ends at the first `}}`; a map literal inside `{{...}}` needs a space between its closing
braces. Unknown names are nil (as in RuleGo) and a member of nil is nil (every `.` reads as `?.`), so
`{{output.resolved}}` before any output is nil and `{{output.resolved}} == true` is simply false.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..expr import ExprSyntaxError, Program, Template, compile_expr, parse_template

_EXPR = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)


def to_template_source(text: str) -> str:
    """`Hi {{user.name}}` -> `Hi ${user.name}`; a literal `${` in the text stays literal."""
    text = text.replace("${", "$${")
    return _EXPR.sub(lambda m: "${" + m.group(1) + "}", text)


def to_condition_source(text: str) -> str:
    return _EXPR.sub(lambda m: "(" + m.group(1) + ")", text)


def _check_closed(text: str) -> None:
    rest = _EXPR.sub("", text)
    at = rest.find("{{")
    if at >= 0:
        raise ExprSyntaxError(f"'{{{{' without a closing '}}}}': {rest[at:][:60]!r}", expression=text,
                              position=at)


def compile_template(text: str) -> Template:
    """Raises chainreact.expr.ExprSyntaxError for a `{{...}}` that does not parse or is not closed."""
    _check_closed(text)
    return parse_template(to_template_source(text))


def compile_condition(text: str) -> Program:
    """Raises chainreact.expr.ExprSyntaxError when the condition does not parse."""
    _check_closed(text)
    return compile_expr(to_condition_source(text))


def render(text: str, env: Mapping[str, Any]) -> str:
    if "{{" not in text:
        return text
    return compile_template(text).render(env, optional=True)


def blanks(text: str, env: Mapping[str, Any]) -> list[bool]:
    """For each `{{...}}` of the template, whether its value is nil or blank (`{{user.id}}` in a turn
    without a user): a key such as `support-{{user.id}}` then names nobody in particular."""
    return [not render("{{" + m.group(1) + "}}", env).strip() for m in _EXPR.finditer(text)]


def render_key(text: str, env: Mapping[str, Any]) -> str | None:
    """A key template (`memoryId`) rendered, or None when one of its expressions is nil or blank: rendered
    anyway, `support-{{user.id}}` would be one key shared by every user who gave no id, and each would be
    handed the others' conversation."""
    if any(blanks(text, env)):
        return None
    return render(text, env) or None


def evaluate(program: Program, env: Mapping[str, Any]) -> Any:
    return program.run(env, optional=True)


def truthy(value: Any) -> bool:
    """A condition matches only when it is true (a boolean): `"false"` or 1 do not count, so a condition
    written without a comparison cannot match by accident on a non-empty string."""
    return value is True


__all__ = [
    "compile_condition",
    "compile_template",
    "evaluate",
    "render",
    "to_condition_source",
    "to_template_source",
    "truthy",
]
