"""Numeric constants of a template as parse.newNumber reads them: Go's literal syntax (0x, 0o, 0b,
legacy octal, underscores, hex floats, imaginary and complex numbers, character constants) and every
type a constant can take (int, uint, float64, complex128)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .strconv import SyntaxErr, unquote_char

if TYPE_CHECKING:
    from .nodes import NumberNode

_I64 = 1 << 63
_U64 = 1 << 64


def _underscore_ok(s: str) -> bool:
    """strconv's underscoreOK: an underscore only between digits (or after a base prefix)."""
    saw = "^"
    i = 0
    if s[:1] in ("-", "+"):
        s = s[1:]
    hexa = False
    if len(s) >= 2 and s[0] == "0" and s[1].lower() in "box":
        i, saw, hexa = 2, "0", s[1].lower() == "x"
    while i < len(s):
        c = s[i]
        if "0" <= c <= "9" or (hexa and "a" <= c.lower() <= "f"):
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        else:
            if saw == "_":
                return False
            saw = "!"
        i += 1
    return saw != "_"


def _parse_int(text: str, signed: bool) -> int | None:
    """strconv.ParseInt / ParseUint with base 0 and 64 bits; None when it would fail."""
    s = text
    neg = False
    if s[:1] in ("+", "-"):
        if not signed:
            return None
        neg, s = s[0] == "-", s[1:]
    if "_" in s:
        if not _underscore_ok(s):
            return None
        s = s.replace("_", "")
    if not s:
        return None
    base = 10
    if len(s) > 1 and s[0] == "0":
        p = s[1].lower()
        base, s = ({"x": 16, "o": 8, "b": 2}[p], s[2:]) if p in "xob" else (8, s[1:])
    try:
        v = int(s, base) if s and s.isalnum() and s.isascii() else None
    except ValueError:
        return None
    if v is None:
        return None
    v = -v if neg else v
    if signed:
        return v if -_I64 <= v < _I64 else None
    return v if v < _U64 else None


def parse_float(text: str) -> float | None:
    """strconv.ParseFloat(text, 64) for a number the lexer scanned; None on a syntax or range error."""
    s = text
    if "_" in s:
        if not _underscore_ok(s):
            return None
        s = s.replace("_", "")
    body = s.lstrip("+-")
    if len(s) - len(body) > 1 or not body:
        return None
    try:
        if body[:2].lower() == "0x":
            if "p" not in body.lower():
                return None  # a hexadecimal mantissa needs a 'p' exponent
            f = float.fromhex(s)
        else:
            if not all(c in "0123456789.eE+-" for c in body):
                return None
            f = float(s)
    except (ValueError, OverflowError):
        return None
    if math.isinf(f):
        return None  # out of range
    return f


def _set_float_kinds(n: NumberNode, f: float) -> None:
    if f.is_integer():
        if -_I64 <= f < _I64:
            n.is_int, n.int64 = True, int(f)
        if 0 <= f < _U64:
            n.is_uint, n.uint64 = True, int(f)


def parse_number(n: NumberNode, is_char: bool, is_complex: bool) -> None:
    """Fill `n` from its text; ValueError with Go's message when it is not a number."""
    text = n.text
    if is_char:
        try:
            r, _, i = unquote_char(text, 1, "'")
        except (SyntaxErr, IndexError):
            raise ValueError("invalid syntax") from None
        if text[i:] != "'":
            raise ValueError(f"malformed character constant: {text}")
        n.is_int = n.is_uint = n.is_float = True
        n.int64 = n.uint64 = r
        n.float64 = float(r)
        return
    if is_complex:
        try:
            c = complex(text[:-1] + "j")
        except ValueError:
            raise ValueError("expected integer") from None
        _set_complex(n, c)
        return
    if text.endswith("i"):
        f = parse_float(text[:-1])  # decimal even with a leading 0: 073i is 73i
        if f is not None:
            _set_complex(n, complex(0, f))
            return
    u = _parse_int(text, False)
    if u is not None:
        n.is_uint, n.uint64 = True, u
    iv = _parse_int(text, True)
    if iv is not None:
        n.is_int, n.int64 = True, iv
        if iv == 0:
            n.is_uint, n.uint64 = True, 0
    if n.is_int:
        n.is_float, n.float64 = True, float(n.int64)
    elif n.is_uint:
        n.is_float, n.float64 = True, float(n.uint64)
    else:
        f = parse_float(text)
        if f is not None:
            if not any(c in text for c in ".eEpP"):
                raise ValueError(f'integer overflow: "{text}"')
            n.is_float, n.float64 = True, f
            _set_float_kinds(n, f)
    if not (n.is_int or n.is_uint or n.is_float):
        raise ValueError(f'illegal number syntax: "{text}"')


def _set_complex(n: NumberNode, c: complex) -> None:
    n.is_complex, n.complex128 = True, c
    if c.imag == 0:
        n.is_float, n.float64 = True, c.real
        _set_float_kinds(n, c.real)
