"""Go's fmt printer (pp) over the template's values: how each type prints under each verb and flag, and
Go's bad-verb form (`%!d(string=x)`); Sprint and Sprintln. The format string itself: printf.py.

`%p` has no addresses to print here: it answers as a bad verb (`%!p(type=value)`) for every value."""

from __future__ import annotations

from typing import Any

from .strconv import can_backquote, format_float, format_g, go_bytes, quote, quote_rune, valid_rune
from .values import MISSING, SIZED_INTS, GoUint, StrMap, type_name

_LDIGITS = "0123456789abcdefx"
_UDIGITS = "0123456789ABCDEFX"


class Printer:
    """Go's pp: one printer's buffer and current flags."""

    __slots__ = (
        "buf",
        "minus",
        "plus",
        "plus_v",
        "prec",
        "prec_present",
        "sharp",
        "sharp_v",
        "space",
        "wid",
        "wid_present",
        "zero",
    )

    def __init__(self) -> None:
        self.buf: list[str] = []
        self.clear()

    def clear(self) -> None:
        self.minus = self.plus = self.sharp = self.space = self.zero = False
        self.plus_v = self.sharp_v = False
        self.wid = self.prec = 0
        self.wid_present = self.prec_present = False

    # ---- padding -----------------------------------------------------------------------------------

    def padding(self, n: int) -> None:
        if n > 0:
            self.buf.append(("0" if self.zero and not self.minus else " ") * n)

    def pad(self, s: str) -> None:
        if not self.wid_present or self.wid == 0:
            self.buf.append(s)
            return
        width = self.wid - len(s)
        if self.minus:
            self.buf.append(s)
            self.padding(width)
        else:
            self.padding(width)
            self.buf.append(s)

    # ---- basic formatters (Go's fmt type) ----------------------------------------------------------

    def fmt_integer(self, u: int, base: int, negative: bool, verb: str, digits: str) -> None:
        if self.prec_present:
            prec = self.prec
            if prec == 0 and u == 0:
                zero, self.zero = self.zero, False
                self.padding(self.wid)
                self.zero = zero
                return
        elif self.zero and not self.minus and self.wid_present:
            prec = self.wid - (1 if negative or self.plus or self.space else 0)
        else:
            prec = 0
        if base == 10:
            s = str(u)
        elif base == 16:
            s = format(u, "x") if digits is _LDIGITS else format(u, "X")
        elif base == 8:
            s = format(u, "o")
        else:
            s = format(u, "b")
        if len(s) < prec:
            s = "0" * (prec - len(s)) + s
        if self.sharp:
            if base == 2:
                s = "0b" + s
            elif base == 8:
                if s[0] != "0":
                    s = "0" + s
            elif base == 16:
                s = "0" + digits[16] + s
        if verb == "O":
            s = "0o" + s
        if negative:
            s = "-" + s
        elif self.plus:
            s = "+" + s
        elif self.space:
            s = " " + s
        zero, self.zero = self.zero, False
        self.pad(s)
        self.zero = zero

    def fmt_unicode(self, u: int) -> None:
        prec = 4
        if self.prec_present and self.prec > 4:
            prec = self.prec
        s = "U+" + format(u, "X").rjust(prec, "0")
        if self.sharp and u <= 0x10FFFF and valid_rune(u) and chr(u).isprintable():
            s += " '" + chr(u) + "'"
        zero, self.zero = self.zero, False
        self.pad(s)
        self.zero = zero

    def fmt_s(self, s: str) -> None:
        if self.prec_present:
            s = s[:self.prec]
        self.pad(s)

    def fmt_sx(self, s: str, digits: str) -> None:
        b = go_bytes(s)
        length = len(b)
        if self.prec_present and self.prec < length:
            length = self.prec
        width = 2 * length
        if width <= 0:
            if self.wid_present:
                self.padding(self.wid)
            return
        if self.space:
            if self.sharp:
                width *= 2
            width += length - 1
        elif self.sharp:
            width += 2
        if self.wid_present and self.wid > width and not self.minus:
            self.padding(self.wid - width)
        out = []
        prefix = "0" + digits[16]
        if self.sharp:
            out.append(prefix)
        for i in range(length):
            if self.space and i > 0:
                out.append(" ")
                if self.sharp:
                    out.append(prefix)
            c = b[i]
            out.append(digits[c >> 4] + digits[c & 0xF])
        self.buf.append("".join(out))
        if self.wid_present and self.wid > width and self.minus:
            self.padding(self.wid - width)

    def fmt_q(self, s: str) -> None:
        if self.prec_present:
            s = s[:self.prec]
        if self.sharp and can_backquote(s):
            self.pad("`" + s + "`")
        else:
            self.pad(quote(s, self.plus))

    def fmt_float(self, v: float, verb: str, prec: int) -> None:
        if self.prec_present:
            prec = self.prec
        num = format_float(v, verb, prec)
        num = num if num[0] in "+-" else "+" + num
        if self.space and num[0] == "+" and not self.plus:
            num = " " + num[1:]
        if num[1] == "I" or num[1] == "N":
            zero, self.zero = self.zero, False
            if num[1] == "N" and not self.space and not self.plus:
                num = num[1:]
            self.pad(num)
            self.zero = zero
            return
        if self.sharp and verb != "b":
            num = _sharp_float(num, verb, prec)
        if self.plus or num[0] != "+":
            if self.zero and not self.minus and self.wid_present and self.wid > len(num):
                self.buf.append(num[0])
                self.padding(self.wid - len(num))
                self.buf.append(num[1:])
                return
            self.pad(num)
            return
        self.pad(num[1:])

    # ---- by type (Go's pp methods) -----------------------------------------------------------------

    def bad_verb(self, verb: str, arg: Any) -> None:
        self.buf.append("%!" + verb + "(")
        if arg is None or arg is MISSING:
            self.buf.append("<nil>")
        else:
            self.buf.append(type_name(arg) + "=")
            self.print_arg(arg, "v")
        self.buf.append(")")

    def print_int(self, v: int, verb: str) -> None:
        signed = not isinstance(v, GoUint)
        if verb in "vdboOxX":
            if verb == "v" and self.sharp_v and not signed:
                sharp, self.sharp = self.sharp, True
                self.fmt_integer(v, 16, False, "v", _LDIGITS)
                self.sharp = sharp
                return
            base = {"v": 10, "d": 10, "b": 2, "o": 8, "O": 8, "x": 16, "X": 16}[verb]
            self.fmt_integer(abs(v), base, v < 0, verb, _UDIGITS if verb == "X" else _LDIGITS)
            return
        u = v & 0xFFFFFFFFFFFFFFFF
        if verb == "c":
            self.pad(chr(u) if valid_rune(u) else "\ufffd")
        elif verb == "q":
            self.pad(quote_rune(u if u <= 0x10FFFF else 0xFFFD, self.plus))
        elif verb == "U":
            self.fmt_unicode(u)
        else:
            self.bad_verb(verb, v)

    def print_float(self, v: float, verb: str) -> None:
        if verb == "v":
            if not (self.wid_present or self.prec_present or self.plus or self.space or self.sharp):
                self.buf.append(format_g(v))
            else:
                self.fmt_float(v, "g", -1)
        elif verb in "bgGxX":
            self.fmt_float(v, verb, -1)
        elif verb in "feE":
            self.fmt_float(v, verb, 6)
        elif verb == "F":
            self.fmt_float(v, "f", 6)
        else:
            self.bad_verb(verb, v)

    def print_complex(self, v: complex, verb: str) -> None:
        if verb not in "vbgGxXfFeE":
            self.bad_verb(verb, v)
            return
        plus = self.plus
        self.buf.append("(")
        self.print_float(v.real, verb)
        self.plus = True
        self.print_float(v.imag, verb)
        self.buf.append("i)")
        self.plus = plus

    def print_str(self, v: str, verb: str) -> None:
        if verb == "v":
            if self.sharp_v:
                self.fmt_q(v)
            else:
                self.fmt_s(v)
        elif verb == "s":
            self.fmt_s(v)
        elif verb == "x":
            self.fmt_sx(v, _LDIGITS)
        elif verb == "X":
            self.fmt_sx(v, _UDIGITS)
        elif verb == "q":
            self.fmt_q(v)
        else:
            self.bad_verb(verb, v)

    def print_arg(self, arg: Any, verb: str, depth: int = 0) -> None:
        """printArg (depth 0) and printValue (inside maps and slices)."""
        if arg is None or arg is MISSING:
            if depth > 0:  # a nil interface inside a container
                self.buf.append("interface {}(nil)" if self.sharp_v else "<nil>")
            elif verb in "Tv":
                self.pad("<nil>")
            else:
                self.bad_verb(verb, None)
            return
        if depth == 0:
            if verb == "T":
                self.fmt_s(type_name(arg))
                return
            if verb == "p":
                self.bad_verb(verb, arg)
                return
        t = type(arg)
        if t is str:
            self.print_str(arg, verb)
        elif t is float:
            self.print_float(arg, verb)
        elif t is bool:
            if verb in "tv":
                self.pad("true" if arg else "false")
            else:
                self.bad_verb(verb, arg)
        elif t is int or isinstance(arg, SIZED_INTS):
            self.print_int(arg, verb)
        elif isinstance(arg, dict):
            self.print_map(arg, verb, depth)
        elif isinstance(arg, (list, tuple)):
            self.print_list(arg, verb, depth)
        elif t is complex:
            self.print_complex(arg, verb)
        else:
            self.buf.append("?" + type_name(arg) + "?")

    def print_map(self, m: dict[str, Any], verb: str, depth: int) -> None:
        if self.sharp_v:
            self.buf.append(type_name(m) + "{")
        else:
            self.buf.append("map[")
        for i, k in enumerate(sorted(m)):
            if i:
                self.buf.append(", " if self.sharp_v else " ")
            self.print_arg(k, verb, depth + 1)
            self.buf.append(":")
            self.print_arg(m[k], verb, depth + 1 if isinstance(m, StrMap) else depth + 2)
        self.buf.append("}" if self.sharp_v else "]")

    def print_list(self, v: list[Any] | tuple[Any, ...], verb: str, depth: int) -> None:
        if self.sharp_v:
            self.buf.append("[]interface {}{")
            sep = ", "
        else:
            self.buf.append("[")
            sep = " "
        for i, x in enumerate(v):
            if i:
                self.buf.append(sep)
            self.print_arg(x, verb, depth + 2)
        self.buf.append("}" if self.sharp_v else "]")


def _sharp_float(num: str, verb: str, prec: int) -> str:
    """The '#' flag: always a decimal point; %g and %x keep their trailing zeros."""
    digits = 0
    if verb in "vgGx":
        digits = 6 if prec == -1 else prec
    tail = ""
    body = num
    for i in range(1, len(num)):
        c = num[i]
        if c in "pP" or (c in "eE" and verb not in "xX"):
            body, tail = num[:i], num[i:]
            break
    has_point = "." in body
    seen = False
    for c in body[1:]:
        if c == ".":
            continue
        if c != "0":
            seen = True
        if seen:
            digits -= 1
    if not has_point:
        if len(body) == 2 and body[1] == "0":
            digits -= 1
        body += "."
    if digits > 0:
        body += "0" * digits
    return body + tail


def sprint_one(v: Any) -> str:
    """fmt.Sprint(v) of one value: what an action prints."""
    t = type(v)
    if t is str:
        return v
    if t is float:
        return format_g(v)
    if t is int:
        return str(v)
    if t is bool:
        return "true" if v else "false"
    p = Printer()
    p.print_arg(v, "v")
    return "".join(p.buf)


def sprint(*a: Any) -> str:
    p = Printer()
    prev_string = False
    for n, arg in enumerate(a):
        is_string = type(arg) is str
        if n > 0 and not is_string and not prev_string:
            p.buf.append(" ")
        p.print_arg(arg, "v")
        prev_string = is_string
    return "".join(p.buf)


def sprintln(*a: Any) -> str:
    p = Printer()
    for n, arg in enumerate(a):
        if n > 0:
            p.buf.append(" ")
        p.print_arg(arg, "v")
    p.buf.append("\n")
    return "".join(p.buf)
