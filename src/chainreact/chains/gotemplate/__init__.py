"""Go's text/template for the `text/template` rule-chain node: Go's lexer, parser, executor, builtins
and fmt, over Go-typed Python values (`values`). See docs/chains.md for what differs from Go."""

from .evaluate import ExecError
from .funcs import BUILTINS, RULEGO_FUNCS, FuncError, GoFunc
from .parser import ParseError
from .template import GoTemplate
from .values import MISSING, GoUint, Int64, StrMap, from_json, json_value

__all__ = ["BUILTINS", "MISSING", "RULEGO_FUNCS", "ExecError", "FuncError", "GoFunc", "GoTemplate", "GoUint",
           "Int64", "ParseError", "StrMap", "from_json", "json_value"]
