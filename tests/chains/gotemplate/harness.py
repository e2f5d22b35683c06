"""The conformance tables' data format (see the "format" entry of each table) and the functions Go's
tests register, with their Go signatures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainreact.chains.gotemplate import GoFunc, GoUint, StrMap
from chainreact.chains.gotemplate.gofmt import sprint, sprintln
from chainreact.chains.gotemplate.printf import sprintf
from chainreact.chains.gotemplate.values import U8

HERE = Path(__file__).parent


class Panic(Exception):
    """A Go function that panics; text/template reports the panic value."""


def _die() -> bool:
    raise Panic("die")


def _do_panic() -> str:
    raise Panic("custom panic string")


def _test_panic() -> str:
    raise Panic("test panic")


def _makemap(*a: str) -> StrMap:
    if len(a) % 2:
        raise Panic("bad makemap")
    return StrMap(zip(a[::2], a[1::2], strict=True))


# exec_test.go testExecute's FuncMap, TestExecutePanicDuringCall's doPanic, parse_test.go's builtins
FUNCS: dict[str, GoFunc] = {f.name: f for f in (
    GoFunc("add", lambda *a: sum(a), (), "int"),
    GoFunc("dddArg", lambda a, *b: sprintln(a, list(b)), ("int",), "string"),
    GoFunc("die", _die),
    GoFunc("echo", lambda a: a, ("any",)),
    GoFunc("makemap", _makemap, (), "string"),
    GoFunc("mapOfThree", lambda: {"three": 3}),
    GoFunc("oneArg", lambda a: "oneArg=" + a, ("string",)),
    GoFunc("returnInt", lambda: 7),
    GoFunc("twoArgs", lambda a, b: "twoArgs=" + a + b, ("string", "string")),
    GoFunc("typeOf", lambda a: sprintf("%T", a), ("any",)),
    GoFunc("valueString", lambda v: "value is ignored", ("string",)),
    GoFunc("zeroArgs", lambda: "zeroArgs"),
    GoFunc("doPanic", _do_panic),
    GoFunc("contains", lambda s, sub: sub in s, ("string", "string")),
)}

# function values inside data ({"$func": name}): tVal's func fields and TestInterfaceValues' PlusOne
FUNC_VALUES: dict[str, GoFunc] = {f.name: f for f in (
    GoFunc("BinaryFunc", lambda a, b: sprintf("[%s=%s]", a, b), ("string", "string")),
    GoFunc("VariadicFunc", lambda *s: sprint("<", "+".join(s), ">"), (), "string"),
    GoFunc("VariadicFuncInt", lambda a, *s: sprint(a, "=<", "+".join(s), ">"), ("int",), "string"),
    GoFunc("ErrFunc", lambda: "bla"),
    GoFunc("PanicFunc", _test_panic),
    GoFunc("PlusOne", lambda n: n + 1, ("int",)),
    GoFunc("result", lambda: "result"),
)}


def decode(v: Any, datasets: dict[str, Any] | None = None) -> Any:
    """A table value as the Go value it stands for (the tags of the tables' format)."""
    if isinstance(v, str) and v.startswith("@") and datasets is not None and v[1:] in datasets:
        return decode(datasets[v[1:]])
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, dict):
        if len(v) == 1:
            (tag, x), = v.items()
            if tag == "$int":
                return int(x)
            if tag == "$uint":
                return GoUint(x)
            if tag == "$uint8":
                return U8(x)
            if tag == "$complex":
                return complex(decode(x[0]), decode(x[1]))
            if tag == "$float":
                return float(x.replace("Inf", "inf").replace("NaN", "nan"))
            if tag == "$strmap":
                return StrMap(x)
            if tag == "$func":
                return FUNC_VALUES[x]
        return {k: decode(x) for k, x in v.items()}
    if isinstance(v, int) and not isinstance(v, bool):
        return float(v)  # a JSON number is a float64
    return v


def load(name: str) -> dict[str, Any]:
    table: dict[str, Any] = json.loads((HERE / name).read_text(encoding="utf-8"))
    return table
