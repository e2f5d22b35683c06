"""Tokens of the expression language (expr-lang's lexical grammar, without bytes literals)."""

from __future__ import annotations

from typing import Any, NamedTuple

from .errors import ExprSyntaxError, quote

# Token kinds
NUM, STR, IDENT, OP, EOF = "number", "string", "identifier", "operator", "end of expression"

# Longest first: the scanner tries three, then two, then one character.
_OPS2 = frozenset({"**", "??", "?.", "..", "==", "!=", "<=", ">=", "&&", "||"})
_OPS1 = frozenset("+-*/%^<>!?:.,|#()[]{};=")

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b",
            "f": "\f", "v": "\v", "0": "\0", "`": "`"}


class Token(NamedTuple):
    kind: str
    value: Any
    pos: int

    def describe(self) -> str:
        if self.kind == EOF:
            return EOF
        return f"{self.kind} {quote(str(self.value), 60)!r}"


def tokenize(src: str) -> list[Token]:
    toks: list[Token] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in " \t\r\n":
            i += 1
            continue
        if c == "/" and i + 1 < n and src[i + 1] in "/*":
            if src[i + 1] == "/":
                j = src.find("\n", i)
                i = n if j < 0 else j + 1
            else:
                j = src.find("*/", i + 2)
                if j < 0:
                    raise ExprSyntaxError(f"unterminated comment at position {i}", expression=src, position=i)
                i = j + 2
            continue
        if c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit() and not _is_value_end(toks)):
            i = _number(src, i, toks)
            continue
        if c in "'\"`":
            i = _string(src, i, toks)
            continue
        if c.isalpha() or c == "_" or c == "$":
            j = i + 1
            while j < n and (src[j].isalnum() or src[j] == "_"):
                j += 1
            toks.append(Token(IDENT, src[i:j], i))
            i = j
            continue
        two = src[i : i + 2]
        if two in _OPS2:
            # `a?.5:1` is a ternary with .5, not optional chaining
            if two == "?." and i + 2 < n and src[i + 2].isdigit():
                toks.append(Token(OP, "?", i))
                i += 1
                continue
            toks.append(Token(OP, two, i))
            i += 2
            continue
        if c in _OPS1:
            toks.append(Token(OP, c, i))
            i += 1
            continue
        raise ExprSyntaxError(f"unexpected character {c!r} at position {i}", expression=src, position=i)
    toks.append(Token(EOF, None, n))
    return toks


def _is_value_end(toks: list[Token]) -> bool:
    if not toks:
        return False
    t = toks[-1]
    return t.kind in (NUM, STR, IDENT) or (t.kind == OP and t.value in ")]}")


def _number(src: str, i: int, toks: list[Token]) -> int:
    n = len(src)
    start = i
    if src.startswith(("0x", "0X", "0b", "0B", "0o", "0O"), i):
        base = {"x": 16, "b": 2, "o": 8}[src[i + 1].lower()]
        j = i + 2
        while j < n and (src[j].isalnum() or src[j] == "_"):
            j += 1
        text = src[i + 2 : j].replace("_", "")
        try:
            toks.append(Token(NUM, int(text, base), start))
        except ValueError:
            raise ExprSyntaxError(f"invalid number literal {quote(src[start:j], 60)!r} at position {start}",
                                  expression=src, position=start) from None
        return j
    j = i
    while j < n and (src[j].isdigit() or src[j] == "_"):
        j += 1
    is_float = False
    # `1..3` is a range: a dot followed by a dot is not a decimal point
    if j < n and src[j] == "." and not src.startswith("..", j):
        is_float = True
        j += 1
        while j < n and (src[j].isdigit() or src[j] == "_"):
            j += 1
    if j < n and src[j] in "eE":
        k = j + 1
        if k < n and src[k] in "+-":
            k += 1
        if k < n and src[k].isdigit():
            is_float = True
            j = k
            while j < n and src[j].isdigit():
                j += 1
    text = src[start:j].replace("_", "")
    if j < n and (src[j].isalpha() or src[j] == "_"):
        raise ExprSyntaxError(f"invalid number literal {quote(src[start:j + 1], 60)!r} at position {start}",
                              expression=src, position=start)
    if is_float:
        value: Any = float(text)
    else:
        if len(text) > 19:  # beyond int64: refuse, as Go's strconv does
            raise ExprSyntaxError(f"integer literal too large at position {start}", expression=src,
                                  position=start)
        value = int(text)
        if value >= 2**63:
            raise ExprSyntaxError(f"integer literal too large at position {start}", expression=src,
                                  position=start)
    toks.append(Token(NUM, value, start))
    return j


def _string(src: str, i: int, toks: list[Token]) -> int:
    q = src[i]
    n = len(src)
    if q == "`":  # raw string
        j = src.find("`", i + 1)
        if j < 0:
            raise ExprSyntaxError(f"unterminated string at position {i}", expression=src, position=i)
        toks.append(Token(STR, src[i + 1 : j], i))
        return j + 1
    out: list[str] = []
    j = i + 1
    while True:
        k = j
        while k < n and src[k] != q and src[k] != "\\":
            k += 1
        out.append(src[j:k])
        if k >= n:
            raise ExprSyntaxError(f"unterminated string at position {i}", expression=src, position=i)
        if src[k] == q:
            toks.append(Token(STR, "".join(out), i))
            return k + 1
        # backslash escape
        if k + 1 >= n:
            raise ExprSyntaxError(f"unterminated string at position {i}", expression=src, position=i)
        e = src[k + 1]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            j = k + 2
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            digits = src[k + 2 : k + 2 + width]
            try:
                if len(digits) != width:
                    raise ValueError
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise ExprSyntaxError(f"invalid escape '\\{e}{digits}' at position {k}", expression=src,
                                      position=k) from None
            j = k + 2 + width
        else:
            raise ExprSyntaxError(f"invalid escape '\\{e}' at position {k}", expression=src, position=k)
