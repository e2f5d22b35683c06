"""Go values as Python values, for the template engine and its fmt.

JSON decoded as Go's encoding/json decodes it into `any`: objects are `dict` (map[string]interface {}),
arrays `list` ([]interface {}), numbers `float` (float64), strings, bools, and null `None` (a nil interface).
Other Go types a template meets: `int` (literals, `len`, range indices, `.ts`), `StrMap`
(map[string]string: metadata, vars, global), `GoUint` (unsigned integers: a byte of a string), `complex`
(complex128 literals). `MISSING` is Go's invalid reflect.Value: a missing map key, printed `<no value>`.
"""

from __future__ import annotations

import json
from typing import Any, Final


class _Missing:
    """reflect.Value{}: no value at all (a missing map key, a nil interface dug out of a pipeline)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<no value>"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


class StrMap(dict[str, str]):
    """map[string]string (RuleGo's metadata, vars and global): a missing key indexes as ""."""

    __slots__ = ()


class GoUint(int):
    """An unsigned Go integer (uint): printed and compared as Go compares unsigned values."""

    __slots__ = ()
    go_type = "uint"


class U8(GoUint):
    """uint8, a byte: what `index` gives for a string."""

    __slots__ = ()
    go_type = "uint8"


class Int64(int):
    """int64 (RuleGo's message timestamp): a signed Go integer that is not `int`."""

    __slots__ = ()
    go_type = "int64"


SIZED_INTS = (GoUint, Int64)  # integer types other than int (Python's int)


def type_name(v: Any) -> str:
    """Go's reflect type string of a value (`%T`, error messages)."""
    if v is None:
        return "interface {}"
    t = type(v)
    if t is str:
        return "string"
    if t is float:
        return "float64"
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is dict:
        return "map[string]interface {}"
    if t is list:
        return "[]interface {}"
    if isinstance(v, StrMap):
        return "map[string]string"
    if isinstance(v, SIZED_INTS):
        return v.go_type
    if t is complex:
        return "complex128"
    if isinstance(v, dict):
        return "map[string]interface {}"
    if isinstance(v, (list, tuple)):
        return "[]interface {}"
    return str(getattr(v, "go_type", t.__name__))


# Go's basic kinds, for comparisons and truth.
INVALID, BOOL, COMPLEX, INT, FLOAT, STRING, UINT = range(7)


def basic_kind(v: Any) -> int:
    t = type(v)
    if t is str:
        return STRING
    if t is float:
        return FLOAT
    if t is int:
        return INT
    if t is bool:
        return BOOL
    if isinstance(v, GoUint):
        return UINT
    if isinstance(v, Int64):
        return INT
    if t is complex:
        return COMPLEX
    return INVALID


def is_true(v: Any) -> bool:
    """text/template's truth: not the zero value of its type; nil and no value are false."""
    if v is MISSING or v is None:
        return False
    if isinstance(v, (str, list, dict, tuple)):
        return len(v) > 0
    return bool(v)


def _floats(o: Any) -> Any:
    """`o` with every int a float; containers without ints are returned as they are (not copied)."""
    t = type(o)
    if t is int:
        return float(o)
    if t is not dict and t is not list:
        return o
    out: Any = None
    for k, v in (o.items() if t is dict else enumerate(o)):
        tv = type(v)
        if tv is int:
            nv: Any = float(v)
        elif tv is dict or tv is list:
            nv = _floats(v)
            if nv is v:
                continue
        else:
            continue
        if out is None:
            out = t(o)
        out[k] = nv
    return o if out is None else out


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: Python's json takes them, Go's does not


_DECODER = json.JSONDecoder(parse_int=float, parse_constant=_not_json)


def from_json(text: str) -> Any:
    """`text` decoded as Go's json.Unmarshal into `any` does (every number a float64); a text that is not
    JSON stays the string, as RuleGo's env does for a JSON message it cannot parse."""
    try:
        return _DECODER.decode(text)
    except (ValueError, RecursionError):
        return text


def json_value(v: Any) -> Any:
    """A value parsed from JSON by Python (ints as int) as Go's encoding/json gives it: every number a
    float64."""
    return _floats(v)
