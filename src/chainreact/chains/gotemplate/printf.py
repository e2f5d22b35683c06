"""Go's Sprintf: the format string's flags, width, precision, `*` arguments and `[n]` argument indexes, and
Go's error forms (`%!(EXTRA ...)`, `%!v(MISSING)`, `%!d(BADINDEX)`, `%!(NOVERB)`, `%!(BADWIDTH)`)."""

from __future__ import annotations

from typing import Any

from .gofmt import Printer
from .values import MISSING, GoUint, type_name

_MAX_WIDTH = 1_000_000  # Go's tooLarge


def _parsenum(s: str, i: int, end: int) -> tuple[int, bool, int]:
    if i >= end:
        return 0, False, end
    num, isnum = 0, False
    while i < end and "0" <= s[i] <= "9":
        if num > _MAX_WIDTH or num < -_MAX_WIDTH:
            return 0, False, end
        num = num * 10 + ord(s[i]) - 48
        isnum = True
        i += 1
    return num, isnum, i


def _int_from_arg(a: tuple[Any, ...], n: int) -> tuple[int, bool, int]:
    if n >= len(a):
        return 0, False, n
    v = a[n]
    ok = type(v) is int or isinstance(v, GoUint)
    num = v if ok else 0
    if num > _MAX_WIDTH or num < -_MAX_WIDTH:
        return 0, False, n + 1
    return num, ok, n + 1


def _arg_number(p: Printer, arg_num: int, s: str, i: int, nargs: int) -> tuple[int, int, bool]:
    if i >= len(s) or s[i] != "[":
        return arg_num, i, False
    p.reordered = True
    ok, index, wid = False, 0, 1  # Go's parseArgNumber on s[i:]
    if len(s) - i >= 3:
        close = s.find("]", i + 1)
        if close >= 0:
            width, isnum, newi = _parsenum(s, i + 1, close)
            wid = close - i + 1
            if isnum and newi == close:
                ok, index = True, width - 1
    if ok and 0 <= index < nargs:
        return index, i + wid, True
    p.good_arg_num = False
    return arg_num, i + wid, ok


def sprintf(fmt: str, *a: Any) -> str:
    p = Printer()
    end = len(fmt)
    arg_num = 0
    after_index = False
    p.reordered = False
    i = 0
    buf = p.buf
    while i < end:
        p.good_arg_num = True
        j = fmt.find("%", i)
        if j < 0:
            buf.append(fmt[i:])
            break
        if j > i:
            buf.append(fmt[i:j])
        i = j + 1
        p.clear()
        simple = False
        while i < end:
            c = fmt[i]
            if c == "#":
                p.sharp = True
            elif c == "0":
                p.zero = True
            elif c == "+":
                p.plus = True
            elif c == "-":
                p.minus = True
            elif c == " ":
                p.space = True
            else:
                if "a" <= c <= "z" and arg_num < len(a):
                    if c == "v":
                        p.sharp_v, p.sharp = p.sharp, False
                        p.plus_v, p.plus = p.plus, False
                    p.print_arg(a[arg_num], c)
                    arg_num += 1
                    i += 1
                    simple = True
                break
            i += 1
        if simple:
            continue
        arg_num, i, after_index = _arg_number(p, arg_num, fmt, i, len(a))
        if i < end and fmt[i] == "*":
            i += 1
            p.wid, p.wid_present, arg_num = _int_from_arg(a, arg_num)
            if not p.wid_present:
                buf.append("%!(BADWIDTH)")
            if p.wid < 0:
                p.wid, p.minus, p.zero = -p.wid, True, False
            after_index = False
        else:
            p.wid, p.wid_present, i = _parsenum(fmt, i, end)
            if after_index and p.wid_present:
                p.good_arg_num = False
        if i + 1 < end and fmt[i] == ".":
            i += 1
            if after_index:
                p.good_arg_num = False
            arg_num, i, after_index = _arg_number(p, arg_num, fmt, i, len(a))
            if i < end and fmt[i] == "*":
                i += 1
                p.prec, p.prec_present, arg_num = _int_from_arg(a, arg_num)
                if p.prec < 0:
                    p.prec, p.prec_present = 0, False
                if not p.prec_present:
                    buf.append("%!(BADPREC)")
                after_index = False
            else:
                p.prec, p.prec_present, i = _parsenum(fmt, i, end)
                if not p.prec_present:
                    p.prec, p.prec_present = 0, True
        if not after_index:
            arg_num, i, after_index = _arg_number(p, arg_num, fmt, i, len(a))
        if i >= end:
            buf.append("%!(NOVERB)")
            break
        verb = fmt[i]
        i += 1
        if verb == "%":
            buf.append("%")
        elif not p.good_arg_num:
            buf.append("%!" + verb + "(BADINDEX)")
        elif arg_num >= len(a):
            buf.append("%!" + verb + "(MISSING)")
        else:
            if verb == "v":
                p.sharp_v, p.sharp = p.sharp, False
                p.plus_v, p.plus = p.plus, False
            p.print_arg(a[arg_num], verb)
            arg_num += 1
    if not p.reordered and arg_num < len(a):
        p.clear()
        buf.append("%!(EXTRA ")
        for k, arg in enumerate(a[arg_num:]):
            if k:
                buf.append(", ")
            if arg is None or arg is MISSING:
                buf.append("<nil>")
            else:
                buf.append(type_name(arg) + "=")
                p.print_arg(arg, "v")
        buf.append(")")
    return "".join(buf)
