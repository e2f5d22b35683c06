"""The functions a template can call: Go's builtins (text/template/funcs.go) with their Go signatures,
and how a function is declared (`GoFunc`) so that arguments are checked and converted as Go checks them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote_plus

from .gofmt import sprint, sprintln
from .printf import sprintf
from .strconv import from_bytes, go_bytes
from .values import (
    BOOL,
    COMPLEX,
    INT,
    INVALID,
    MISSING,
    SIZED_INTS,
    STRING,
    U8,
    UINT,
    GoUint,
    StrMap,
    basic_kind,
    is_true,
    type_name,
)

# Parameter types: "value" is reflect.Value (anything, no value included), "any" is interface{} (no
# value becomes nil), others are Go type names the argument must have.
NILABLE = {"value", "any", "map[string]interface {}", "map[string]string", "[]interface {}"}


class FuncError(Exception):
    """A function's error result: Go reports it as `error calling NAME: MESSAGE`."""


class GoFunc:
    """A template function with a Go signature: fixed parameter types and an optional variadic type."""

    __slots__ = ("builtin", "impl", "name", "params", "variadic")

    def __init__(self, name: str, impl: Callable[..., Any], params: tuple[str, ...] = (),
                 variadic: str | None = None, builtin: bool = False):
        self.name, self.impl, self.params, self.variadic = name, impl, params, variadic
        self.builtin = builtin

    @property
    def go_type(self) -> str:
        """Its Go type, for messages (its results are not declared: a Python function's are unknown)."""
        names = {"value": "reflect.Value", "any": "interface {}"}
        params = [names.get(p, p) for p in self.params]
        if self.variadic is not None:
            params.append("..." + names.get(self.variadic, self.variadic))
        return f"func({', '.join(params)})"


def _indirect(v: Any) -> Any:
    """indirectInterface: a nil interface is no value."""
    return MISSING if v is None else v


def _index_arg(index: Any, cap: int) -> int:
    if type(index) is int or isinstance(index, SIZED_INTS):
        x = int(index)
    elif index is MISSING:
        raise FuncError("cannot index slice/array with nil")
    else:
        raise FuncError(f"cannot index slice/array with type {type_name(index)}")
    if x < 0 or x > cap:
        raise FuncError(f"index out of range: {x}")
    return x


def _prepare_key(index: Any) -> str:
    if index is MISSING:
        raise FuncError("value is nil; should be of type string")
    if type(index) is not str:
        raise FuncError(f"value has type {type_name(index)}; should be string")
    return index


def index(item: Any, *indexes: Any) -> Any:
    item = _indirect(item)
    if item is MISSING:
        raise FuncError("index of untyped nil")
    for ix in indexes:
        ix = _indirect(ix)
        if item is None:
            raise FuncError("index of nil pointer")
        if isinstance(item, (list, tuple)):
            x = _index_arg(ix, len(item))
            if x == len(item):
                raise FuncError("reflect: slice index out of range")
            item = item[x]
        elif isinstance(item, str):
            b = go_bytes(item)
            x = _index_arg(ix, len(b))
            if x == len(b):
                raise FuncError("reflect: string index out of range")
            item = U8(b[x])
        elif isinstance(item, dict):
            key = _prepare_key(ix)
            item = item.get(key, "" if isinstance(item, StrMap) else None)
        else:
            raise FuncError(f"can't index item of type {type_name(item)}")
    return item


def slice_(item: Any, *indexes: Any) -> Any:
    item = _indirect(item)
    if item is MISSING:
        raise FuncError("slice of untyped nil")
    if len(indexes) > 3:
        raise FuncError(f"too many slice indexes: {len(indexes)}")
    if isinstance(item, str):
        if len(indexes) == 3:
            raise FuncError("cannot 3-index slice a string")
        seq: Any = go_bytes(item)
    elif isinstance(item, (list, tuple)):
        seq = item
    else:
        raise FuncError(f"can't slice item of type {type_name(item)}")
    idx = [0, len(seq), 0]
    for i, ix in enumerate(indexes):
        idx[i] = _index_arg(ix, len(seq))  # a JSON array's capacity is its length here
    if idx[0] > idx[1]:
        raise FuncError(f"invalid slice index: {idx[0]} > {idx[1]}")
    if len(indexes) == 3 and idx[1] > idx[2]:
        raise FuncError(f"invalid slice index: {idx[1]} > {idx[2]}")
    out = seq[idx[0]:idx[1]]
    return from_bytes(out) if isinstance(item, str) else list(out)


def length(item: Any) -> int:
    if item is None:
        raise FuncError("len of nil pointer")
    if item is MISSING:
        raise FuncError("reflect: call of reflect.Value.Type on zero Value")
    if isinstance(item, str):
        return len(item) if item.isascii() else len(go_bytes(item))
    if isinstance(item, (list, tuple, dict)):
        return len(item)
    raise FuncError(f"len of type {type_name(item)}")


def not_(arg: Any) -> bool:
    return not is_true(arg)


def eq(arg1: Any, *arg2: Any) -> bool:
    arg1 = _indirect(arg1)
    if not arg2:
        raise FuncError("missing argument for comparison")
    k1 = basic_kind(arg1)
    for arg in arg2:
        arg = _indirect(arg)
        k2 = basic_kind(arg)
        if k1 != k2:
            if (k1 == INT and k2 == UINT) or (k1 == UINT and k2 == INT):
                truth = arg1 == arg  # Python ints compare signed and unsigned values exactly
            elif arg1 is not MISSING and arg is not MISSING:
                raise FuncError(f"incompatible types for comparison: {type_name(arg1)} and "
                                f"{type_name(arg)}")
            else:
                truth = False
        elif k1 != INVALID:
            truth = arg1 == arg
        else:
            c1, c2 = _container_kind(arg1), _container_kind(arg)
            if c1 != c2 and arg1 is not MISSING and arg is not MISSING:
                raise FuncError(f"non-comparable types {sprintf('%s', arg1)}: {type_name(arg1)}, "
                                f"{type_name(arg)}: {sprintf('%v', arg)}")
            if arg1 is MISSING or arg is MISSING:
                truth = (arg1 is MISSING) == (arg is MISSING)
            else:
                raise FuncError(f"non-comparable type {sprintf('%s', arg)}: {type_name(arg)}")
        if truth:
            return True
    return False


def _container_kind(v: Any) -> str:
    return "map" if isinstance(v, dict) else "slice" if isinstance(v, (list, tuple)) else type_name(v)


def ne(arg1: Any, arg2: Any) -> bool:
    return not eq(arg1, arg2)


def lt(arg1: Any, arg2: Any) -> bool:
    arg1, arg2 = _indirect(arg1), _indirect(arg2)
    k1, k2 = basic_kind(arg1), basic_kind(arg2)
    if k1 == INVALID or k2 == INVALID:
        raise FuncError("invalid type for comparison")
    if k1 != k2:
        if (k1 == INT and k2 == UINT) or (k1 == UINT and k2 == INT):
            return bool(arg1 < arg2)
        raise FuncError(f"incompatible types for comparison: {type_name(arg1)} and {type_name(arg2)}")
    if k1 in (BOOL, COMPLEX):
        raise FuncError("invalid type for comparison")
    if k1 == STRING:
        return bool(go_bytes(arg1) < go_bytes(arg2)) if not (arg1.isascii() and arg2.isascii()) \
            else bool(arg1 < arg2)
    return bool(arg1 < arg2)


def le(arg1: Any, arg2: Any) -> bool:
    return lt(arg1, arg2) or eq(arg1, arg2)


def gt(arg1: Any, arg2: Any) -> bool:
    return not le(arg1, arg2)


def ge(arg1: Any, arg2: Any) -> bool:
    return not lt(arg1, arg2)


def _eval_args(args: tuple[Any, ...]) -> str:
    if len(args) == 1 and type(args[0]) is str:
        return args[0]
    return sprint(*("<no value>" if a is None or a is MISSING else a for a in args))


_HTML = {"\0": "\ufffd", '"': "&#34;", "'": "&#39;", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
_HTML_TABLE = str.maketrans(_HTML)


def html_escaper(*args: Any) -> str:
    return _eval_args(args).translate(_HTML_TABLE)


_JS = {"\\": "\\\\", "'": "\\'", '"': '\\"', "<": "\\u003C", ">": "\\u003E", "&": "\\u0026",
       "=": "\\u003D"}


def js_escaper(*args: Any) -> str:
    s = _eval_args(args)
    out = []
    for c in s:
        r = ord(c)
        if c in _JS:
            out.append(_JS[c])
        elif r < 0x20:
            out.append(f"\\u00{r:02X}")
        elif r < 0x80 or 0xDC80 <= r <= 0xDCFF or c.isprintable():
            out.append(c)
        else:
            out.append(f"\\u{r:04X}")
    return "".join(out)


def urlquery_escaper(*args: Any) -> str:
    return quote_plus(_eval_args(args), safe="", encoding="utf-8", errors="surrogateescape")


def _escape(s: str) -> str:
    """RuleGo's `escape`: backslash, double quote, newline, carriage return and tab, backslashed."""
    return (s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
            .replace("\t", "\\t"))


def call(name: str, fn: Any, *args: Any) -> Any:
    fn = _indirect(fn)
    if fn is MISSING:
        raise FuncError("call of nil")
    if not isinstance(fn, GoFunc):
        raise FuncError(f"non-function {name} of type {type_name(fn)}")
    n = len(fn.params)
    if fn.variadic is None and len(args) != n:
        raise FuncError(f"wrong number of args for {name}: got {len(args)} want {n}")
    if fn.variadic is not None and len(args) < n:
        raise FuncError(f"wrong number of args for {name}: got {len(args)} want at least {n}")
    argv = []
    for i, a in enumerate(args):
        typ = fn.params[i] if i < n else fn.variadic
        argv.append(prepare_arg(_indirect(a), typ or "any", i))
    return fn.impl(*argv)


def prepare_arg(v: Any, typ: str, i: int) -> Any:
    """The `call` builtin's argument check (funcs.go prepareArg)."""
    if v is MISSING:
        if typ in NILABLE:
            return None if typ == "any" else MISSING
        raise FuncError(f"arg {i}: value is nil; should be of type {typ}")
    if typ in ("any", "value") or type_name(v) == typ:
        return v
    if typ in ("int", "uint") and (type(v) is int or isinstance(v, SIZED_INTS)):
        return GoUint(v) if typ == "uint" else int(v)
    raise FuncError(f"arg {i}: value has type {type_name(v)}; should be {typ}")


BUILTINS: dict[str, GoFunc] = {f.name: f for f in (
    GoFunc("and", lambda *a: a[-1], ("value",), "value", builtin=True),
    GoFunc("call", call, ("value",), "value", builtin=True),
    GoFunc("html", html_escaper, (), "any", builtin=True),
    GoFunc("index", index, ("value",), "value", builtin=True),
    GoFunc("slice", slice_, ("value",), "value", builtin=True),
    GoFunc("js", js_escaper, (), "any", builtin=True),
    GoFunc("len", length, ("value",), builtin=True),
    GoFunc("not", not_, ("value",), builtin=True),
    GoFunc("or", lambda *a: a[-1], ("value",), "value", builtin=True),
    GoFunc("print", sprint, (), "any", builtin=True),
    GoFunc("printf", sprintf, ("string",), "any", builtin=True),
    GoFunc("println", sprintln, (), "any", builtin=True),
    GoFunc("urlquery", urlquery_escaper, (), "any", builtin=True),
    GoFunc("eq", eq, ("value",), "value", builtin=True),
    GoFunc("ge", ge, ("value", "value"), builtin=True),
    GoFunc("gt", gt, ("value", "value"), builtin=True),
    GoFunc("le", le, ("value", "value"), builtin=True),
    GoFunc("lt", lt, ("value", "value"), builtin=True),
    GoFunc("ne", ne, ("value", "value"), builtin=True),
)}

# RuleGo registers `escape` for its text/template node; `upper` and `lower` are chainreact's own.
RULEGO_FUNCS: dict[str, GoFunc] = {f.name: f for f in (
    GoFunc("escape", _escape, ("string",)),
    GoFunc("upper", str.upper, ("string",)),
    GoFunc("lower", str.lower, ("string",)),
)}
