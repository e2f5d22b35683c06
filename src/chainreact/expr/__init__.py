"""RuleGo's expression language (expr-lang, https://expr-lang.org): a hand-written Pratt parser compiled
to Python closures (never Python `eval`), with expr-lang's operators, builtins and Go-style values.

    prog = compile_expr("temperature > 50 && upper(name) == 'X'")   # cached
    prog.run({"temperature": 60, "name": "x"})                       # True
    parse_template("Hi ${name}, ${1+2}").render({"name": "Ann"})     # 'Hi Ann, 3'
"""

from __future__ import annotations

from .builtins import FUNCTIONS, read_text_file, register_function
from .errors import ExprError, ExprSyntaxError, UndefinedName, quote
from .program import Program, compile_expr
from .template import Template, find_close, parse_template, render
from .values import to_json, to_string

__all__ = [
    "FUNCTIONS",
    "ExprError",
    "ExprSyntaxError",
    "Program",
    "Template",
    "UndefinedName",
    "compile_expr",
    "find_close",
    "parse_template",
    "quote",
    "read_text_file",
    "register_function",
    "render",
    "to_json",
    "to_string",
]
