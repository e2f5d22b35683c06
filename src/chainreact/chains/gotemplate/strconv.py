"""Go's strconv, as the template engine and its fmt need it: quoting, unquoting literals, and floats
formatted digit for digit as strconv.FormatFloat formats a float64.

Strings carry Go's bytes: a byte that is not UTF-8 (from `slice`, or a `"\\xff"` literal) is the lone
surrogate U+DC80+byte (Python's surrogateescape)."""

from __future__ import annotations

import math
import struct

_SIMPLE_ESC = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v"}
_UNESC = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "'": 39, '"': 34}
MAX_RUNE = 0x10FFFF


class SyntaxErr(ValueError):
    """strconv.ErrSyntax."""

    def __init__(self) -> None:
        super().__init__("invalid syntax")


def raw_byte(c: str) -> int | None:
    """The byte a surrogate-escaped character stands for, else None."""
    o = ord(c)
    return o - 0xDC00 if 0xDC80 <= o <= 0xDCFF else None


def valid_rune(r: int) -> bool:
    return 0 <= r <= MAX_RUNE and not 0xD800 <= r <= 0xDFFF


def is_print(r: int) -> bool:
    """unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space (Python's
    isprintable draws the same line: no Other and no Separator but the space)."""
    return valid_rune(r) and chr(r).isprintable()


def _escape(r: int, quote: str, ascii_only: bool) -> str:
    c = chr(r)
    if c == quote or c == "\\":
        return "\\" + c
    if (r < 0x80 or not ascii_only) and is_print(r):
        return c
    esc = _SIMPLE_ESC.get(r)
    if esc is not None:
        return esc
    if r < 0x20 or r == 0x7F:
        return f"\\x{r:02x}"
    if not valid_rune(r):
        r = 0xFFFD
    return f"\\u{r:04x}" if r < 0x10000 else f"\\U{r:08x}"


def quote(s: str, ascii_only: bool = False) -> str:
    """strconv.Quote (QuoteToASCII with `ascii_only`)."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'
    out = ['"']
    for c in s:
        b = raw_byte(c)
        out.append(f"\\x{b:02x}" if b is not None else _escape(ord(c), '"', ascii_only))
    out.append('"')
    return "".join(out)


def quote_rune(r: int, ascii_only: bool = False) -> str:
    """strconv.QuoteRune (QuoteRuneToASCII): an invalid rune quotes as U+FFFD."""
    if not valid_rune(r):
        r = 0xFFFD
    return "'" + _escape(r, "'", ascii_only) + "'"


def can_backquote(s: str) -> bool:
    for c in s:
        r = ord(c)
        if r == 0xFEFF or raw_byte(c) is not None or 0xD800 <= r <= 0xDFFF:
            return False
        if (r < 0x20 and c != "\t") or c == "`" or r == 0x7F:
            return False
    return True


def go_bytes(s: str) -> bytes:
    """The bytes of a Go string."""
    return s.encode("utf-8", "surrogateescape")


def from_bytes(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def unquote_char(s: str, i: int, quote: str) -> tuple[int, bool, int]:
    """strconv.UnquoteChar at s[i]: (value, is_byte, next index). A `\\x`/octal escape is a byte."""
    c = s[i]
    if c == quote and quote in "'\"":
        raise SyntaxErr()
    if c != "\\":
        return ord(c), False, i + 1
    if i + 1 >= len(s):
        raise SyntaxErr()
    c = s[i + 1]
    i += 2
    if c in _UNESC:
        if (c == "'" or c == '"') and c != quote:
            raise SyntaxErr()
        return _UNESC[c], False, i
    if c in "xuU":
        n = {"x": 2, "u": 4, "U": 8}[c]
        h = s[i:i + n]
        if len(h) < n or any(ch not in "0123456789abcdefABCDEF" for ch in h):
            raise SyntaxErr()
        v = int(h, 16)
        if c == "x":
            return v, True, i + n
        if not valid_rune(v):
            raise SyntaxErr()
        return v, False, i + n
    if "0" <= c <= "7":
        o = s[i - 1:i + 2]
        if len(o) < 3 or any(ch not in "01234567" for ch in o) or int(o, 8) > 255:
            raise SyntaxErr()
        return int(o, 8), True, i + 2
    raise SyntaxErr()


def unquote(s: str) -> str:
    """strconv.Unquote of a "..." or `...` literal (a raw string drops its carriage returns)."""
    if len(s) < 2 or s[0] != s[-1] or s[0] not in '"`':
        raise SyntaxErr()
    body = s[1:-1]
    if s[0] == "`":
        if "`" in body:
            raise SyntaxErr()
        return body.replace("\r", "")
    if "\\" not in body:
        if '"' in body or "\n" in body:
            raise SyntaxErr()
        return body
    out = bytearray()
    i = 0
    while i < len(body):
        if body[i] == "\n":
            raise SyntaxErr()
        v, is_byte, i = unquote_char(body, i, '"')
        out += bytes([v]) if is_byte else chr(v).encode("utf-8", "surrogateescape")
    return from_bytes(bytes(out))


# ---- floats ----------------------------------------------------------------------------------------


def _shortest(v: float) -> tuple[str, int]:
    """The shortest decimal digits that round-trip `abs(v)` (no leading or trailing zeros; "" for 0)
    and the decimal point position: abs(v) = 0.digits * 10**dp."""
    r = repr(abs(v))
    mant, _, exp = r.partition("e")
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    dp = len(ip) + (int(exp) if exp else 0) - (len(ip + fp) - len((ip + fp).lstrip("0")))
    digits = digits.rstrip("0")
    if not digits:
        return "", 0
    return digits, dp


def _fmt_e(neg: bool, d: str, dp: int, prec: int, e: str) -> str:
    out = ["-" if neg else "", d[0] if d else "0"]
    if prec > 0:
        out.append("." + d[1:prec + 1].ljust(prec, "0"))
    x = dp - 1 if d else 0
    out.append(e + ("-" if x < 0 else "+") + f"{abs(x):02d}")
    return "".join(out)


def _fmt_f(neg: bool, d: str, dp: int, prec: int) -> str:
    ip = (d[:dp].ljust(dp, "0") if dp > 0 else "0")
    out = ("-" if neg else "") + ip
    if prec > 0:
        frac = "".join(d[j] if 0 <= j < len(d) else "0" for j in range(dp, dp + prec))
        out += "." + frac
    return out


def _fmt_x(v: float, prec: int, upper: bool) -> str:
    neg = math.copysign(1.0, v) < 0
    if v == 0:
        mant, exp = 0, 0
    else:
        m, e = math.frexp(abs(v))
        mant, exp = int(m * (1 << 61)), e - 1  # leading 1 at bit 60
    if 0 <= prec < 15:
        shift = prec * 4
        extra = (mant << shift) & ((1 << 60) - 1)
        mant >>= 60 - shift
        if extra | (mant & 1) > 1 << 59:  # round half to even
            mant += 1
        mant <<= 60 - shift
        if mant & (1 << 61):
            mant >>= 1
            exp += 1
    digits = "0123456789ABCDEF" if upper else "0123456789abcdef"
    out = ["-" if neg else "", "0X" if upper else "0x", str((mant >> 60) & 1)]
    mant = (mant << 4) & ((1 << 64) - 1)
    if (prec < 0 and mant) or prec > 0:
        out.append(".")
        n = 0
        while (prec < 0 and mant) or n < prec:
            out.append(digits[(mant >> 60) & 15])
            mant = (mant << 4) & ((1 << 64) - 1)
            n += 1
    out.append(("P" if upper else "p") + ("-" if exp < 0 else "+") + f"{abs(exp):02d}")
    return "".join(out)


def _fmt_b(v: float) -> str:
    bits = struct.unpack("<Q", struct.pack("<d", v))[0]
    neg = bits >> 63
    exp = (bits >> 52) & 0x7FF
    mant = bits & ((1 << 52) - 1)
    if exp == 0:
        exp = 1
    else:
        mant |= 1 << 52
    return f"{'-' if neg else ''}{mant}p{exp - 1023 - 52:+d}"


def format_float(v: float, fmt: str, prec: int) -> str:
    """strconv.FormatFloat(v, fmt, prec, 64) for fmt in b e E f g G x X; prec -1 is the shortest."""
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v != v:
        return "NaN"
    if fmt == "b":
        return _fmt_b(v)
    if fmt in "xX":
        return _fmt_x(v, prec, fmt == "X")
    if prec >= 0:
        if fmt in "gG" and prec == 0:
            prec = 1
        return format(v, f".{prec}{fmt}")  # correctly rounded, as Go's
    neg = math.copysign(1.0, v) < 0
    d, dp = _shortest(v)
    if fmt in "eE":
        return _fmt_e(neg, d, dp, max(len(d) - 1, 0), fmt)
    if fmt in "fF":
        return _fmt_f(neg, d, dp, max(len(d) - dp, 0))
    x = dp - 1  # the exponent; %e past the shortest %g's range (0 has no digits and is %f)
    if d and (x < -4 or x >= 6):
        return _fmt_e(neg, d, dp, len(d) - 1, "e" if fmt == "g" else "E")
    return _fmt_f(neg, d, dp, max(len(d) - dp, 0))


def format_g(v: float) -> str:
    """%v of a float64 (strconv 'g', shortest), with a fast path for the common numbers."""
    a = abs(v)
    if 1e-4 <= a < 1e6:
        if v.is_integer():
            return str(int(v))
        return repr(v)  # Python's repr is Go's %v in this range: the same shortest digits, no exponent
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    return format_float(v, "g", -1)
