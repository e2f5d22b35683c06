"""Go's Sprintf: the format string's flags, width, precision, `*` arguments and `[n]` argument indexes, and
Go's error forms (`%!(EXTRA ...)`, `%!v(MISSING)`, `%!d(BADINDEX)`, `%!(NOVERB)`, `%!(BADWIDTH)`).

How Go walks a format depends only on the format and the number of arguments, so a format is compiled
once per argument count into a plan (cached: a template's formats are literals) and the plan is run
against the arguments; only `*` widths and precisions are read from the arguments at run time."""

from __future__ import annotations

from typing import Any

from .gofmt import Printer
from .values import MISSING, SIZED_INTS, type_name

_MAX_WIDTH = 1_000_000  # Go's tooLarge
_CACHE: dict[tuple[str, int], tuple[list[Any], int | None]] = {}
_CACHE_MAX = 1024

# A plan is a list of literal strings and verb steps. A verb step: (flags, width, prec, action, verb, arg)
# where flags is (minus, plus, sharp, space, zero), width and prec are None, ("n", value) or ("a", index)
# (a `*` argument), and action is "print", "%", "badindex", "missing" or "noverb".


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


class _Compiler:
    """Go's doPrintf, walking the format without the arguments' values."""

    def __init__(self, fmt: str, nargs: int):
        self.fmt, self.nargs = fmt, nargs
        self.reordered = False
        self.good_arg_num = True

    def arg_number(self, arg_num: int, i: int) -> tuple[int, int, bool]:
        s = self.fmt
        if i >= len(s) or s[i] != "[":
            return arg_num, i, False
        self.reordered = True
        ok, index, wid = False, 0, 1  # Go's parseArgNumber on s[i:]
        if len(s) - i >= 3:
            close = s.find("]", i + 1)
            if close >= 0:
                width, isnum, newi = _parsenum(s, i + 1, close)
                wid = close - i + 1
                if isnum and newi == close:
                    ok, index = True, width - 1
        if ok and 0 <= index < self.nargs:
            return index, i + wid, True
        self.good_arg_num = False
        return arg_num, i + wid, ok

    def star(self, arg_num: int) -> tuple[tuple[str, int] | None, int]:
        """A `*` width or precision: read from argument arg_num at run time (none left: bad)."""
        if arg_num >= self.nargs:
            return ("a", -1), arg_num
        return ("a", arg_num), arg_num + 1

    def compile(self) -> tuple[list[Any], int | None]:
        fmt, nargs, end = self.fmt, self.nargs, len(self.fmt)
        plan: list[Any] = []
        arg_num = 0
        i = 0
        while i < end:
            self.good_arg_num = True
            j = fmt.find("%", i)
            if j < 0:
                plan.append(fmt[i:])
                break
            if j > i:
                plan.append(fmt[i:j])
            i = j + 1
            minus = plus = sharp = space = zero = False
            simple = None
            while i < end:
                c = fmt[i]
                if c == "#":
                    sharp = True
                elif c == "0":
                    zero = True
                elif c == "+":
                    plus = True
                elif c == "-":
                    minus = True
                elif c == " ":
                    space = True
                else:
                    if "a" <= c <= "z" and arg_num < nargs:
                        simple = c
                    break
                i += 1
            flags = (minus, plus, sharp, space, zero)
            if simple is not None:
                plan.append((flags, None, None, "print", simple, arg_num))
                arg_num += 1
                i += 1
                continue
            arg_num, i, after_index = self.arg_number(arg_num, i)
            width: tuple[str, int] | None = None
            if i < end and fmt[i] == "*":
                i += 1
                width, arg_num = self.star(arg_num)
                after_index = False
            else:
                n, present, i = _parsenum(fmt, i, end)
                if present:
                    width = ("n", n)
                    if after_index:
                        self.good_arg_num = False
            prec: tuple[str, int] | None = None
            if i + 1 < end and fmt[i] == ".":
                i += 1
                if after_index:
                    self.good_arg_num = False
                arg_num, i, after_index = self.arg_number(arg_num, i)
                if i < end and fmt[i] == "*":
                    i += 1
                    prec, arg_num = self.star(arg_num)
                    after_index = False
                else:
                    n, present, i = _parsenum(fmt, i, end)
                    prec = ("n", n if present else 0)
            if not after_index:
                arg_num, i, after_index = self.arg_number(arg_num, i)
            if i >= end:
                plan.append((flags, width, prec, "noverb", "", 0))
                break
            verb = fmt[i]
            i += 1
            if verb == "%":
                action = "%"
            elif not self.good_arg_num:
                action = "badindex"
            elif arg_num >= nargs:
                action = "missing"
            else:
                action = "print"
            plan.append((flags, width, prec, action, verb, arg_num))
            if action == "print":
                arg_num += 1
        extra = arg_num if not self.reordered and arg_num < nargs else None
        return plan, extra


def _star(p: Printer, spec: tuple[str, int], a: tuple[Any, ...]) -> tuple[int, bool]:
    """Go's intFromArg: an int (not too large) or nothing."""
    k = spec[1]
    if k < 0:
        return 0, False
    v = a[k]
    if not (type(v) is int or isinstance(v, SIZED_INTS)) or v > _MAX_WIDTH or v < -_MAX_WIDTH:
        return 0, False
    return int(v), True


def sprintf(fmt: str, *a: Any) -> str:
    key = (fmt, len(a))
    compiled = _CACHE.get(key)
    if compiled is None:
        compiled = _Compiler(fmt, len(a)).compile()
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = compiled
    plan, extra = compiled
    p = Printer()
    buf = p.buf
    for step in plan:
        if type(step) is str:
            buf.append(step)
            continue
        flags, width, prec, action, verb, arg = step
        p.clear()
        p.minus, p.plus, p.sharp, p.space, p.zero = flags
        if width is not None:
            if width[0] == "n":
                p.wid, p.wid_present = width[1], True
            else:
                p.wid, p.wid_present = _star(p, width, a)
                if not p.wid_present:
                    buf.append("%!(BADWIDTH)")
                if p.wid < 0:
                    p.wid, p.minus, p.zero = -p.wid, True, False
        if prec is not None:
            if prec[0] == "n":
                p.prec, p.prec_present = prec[1], True
            else:
                p.prec, p.prec_present = _star(p, prec, a)
                if p.prec < 0:
                    p.prec, p.prec_present = 0, False
                if not p.prec_present:
                    buf.append("%!(BADPREC)")
        if action == "print":
            if verb == "v":
                p.sharp_v, p.sharp = p.sharp, False
                p.plus_v, p.plus = p.plus, False
            p.print_arg(a[arg], verb)
        elif action == "%":
            buf.append("%")
        elif action == "noverb":
            buf.append("%!(NOVERB)")
        else:
            buf.append("%!" + verb + ("(BADINDEX)" if action == "badindex" else "(MISSING)"))
    if extra is not None:
        p.clear()
        buf.append("%!(EXTRA ")
        for k, arg in enumerate(a[extra:]):
            if k:
                buf.append(", ")
            if arg is None or arg is MISSING:
                buf.append("<nil>")
            else:
                buf.append(type_name(arg) + "=")
                p.print_arg(arg, "v")
        buf.append(")")
    return "".join(buf)
