"""JSON Schema `pattern`s (ECMA-262 regular expressions) run on RE2, whose matching time is linear.

A tool's schema is applied to arguments a model wrote, so a pattern must not backtrack: `(a+)+$` on 24
characters took 1.05 s with Python's `re` (doubling per character, the GIL held). RE2 runs every pattern
it accepts in linear time. ECMA syntax is translated where RE2 spells or means it differently, so valid
patterns keep matching what they match in JavaScript:

- `\\s`/`\\S` are ECMA's whitespace (Unicode spaces, line terminators, BOM), not RE2's ASCII set;
- `.` excludes ECMA's line terminators (`\\n`, `\\r`, U+2028, U+2029), not only `\\n`;
- `\\uXXXX` (surrogate pairs joined), `\\u{...}`, `\\cX`, `\\0`, and `[\\b]` (backspace) become RE2 escapes;
- `[^]` (any character) and `[]` (none) are spelled for RE2.

`\\d`, `\\w`, `\\b`, `^` and `$` (end of input only, no trailing-newline exception) already mean the same
in both. A pattern RE2 cannot run (backreferences, lookaround) or that is invalid is an error when the
schema is compiled, saying which; it is never skipped.
"""

from __future__ import annotations

import re

from .builtin.linear_re import LinearPattern, PatternError, RE2Error, compile_re2

_WS = ("\\t\\n\\x{0b}\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}"
       "\\x{3000}\\x{feff}")
_DOT = "[^\\n\\r\\x{2028}\\x{2029}]"
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")


def compile_ecma(pattern: str) -> LinearPattern:
    """`pattern` (ECMA-262 syntax) compiled with RE2; PatternError saying what is wrong or unsupported."""
    try:
        return compile_re2(ecma_to_re2(pattern), shown=pattern)
    except RE2Error as e:
        raise PatternError(_explain(pattern, str(e))) from None


def ecma_to_re2(p: str) -> str:
    out: list[str] = []
    i, n = 0, len(p)
    in_class = False
    while i < n:
        c = p[i]
        if c == "\\" and i + 1 < n:
            text, i = _escape(p, i, in_class)
            out.append(text)
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
        elif c == "[":
            if p.startswith("[^]", i):
                out.append("[\\x{0}-\\x{10ffff}]")
                i += 3
                continue
            if p.startswith("[]", i):
                out.append("[^\\x{0}-\\x{10ffff}]")
                i += 2
                continue
            in_class = True
            out.append(c)
        elif c == ".":
            out.append(_DOT)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _escape(p: str, i: int, in_class: bool) -> tuple[str, int]:
    """The RE2 text of the escape at p[i] (a backslash) and the index after it."""
    e = p[i + 1]
    if e in "sS":
        if in_class:
            return (_WS, i + 2) if e == "s" else ("\\S", i + 2)  # a negated set inside a class: RE2's \S
        return (f"[{_WS}]" if e == "s" else f"[^{_WS}]"), i + 2
    if e == "u":
        if p.startswith("{", i + 2):
            end = p.find("}", i + 3)
            if end > 0:
                return f"\\x{{{p[i + 3:end]}}}", end + 1
        elif _HEX4.fullmatch(p, i + 2, i + 6):
            cp = int(p[i + 2:i + 6], 16)
            if 0xD800 <= cp < 0xDC00 and p.startswith("\\u", i + 6) and _HEX4.fullmatch(p, i + 8, i + 12):
                low = int(p[i + 8:i + 12], 16)
                if 0xDC00 <= low < 0xE000:
                    return f"\\x{{{0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00):x}}}", i + 12
            return f"\\x{{{cp:x}}}", i + 6
    if e == "c" and i + 2 < len(p) and p[i + 2].isascii() and p[i + 2].isalpha():
        return f"\\x{{{ord(p[i + 2]) % 32:x}}}", i + 3
    if e == "0" and not (i + 2 < len(p) and p[i + 2].isdigit()):
        return "\\x{0}", i + 2
    if e == "b" and in_class:
        return "\\x{8}", i + 2
    if e == "/":
        return "/", i + 2
    return p[i:i + 2], i + 2


def _explain(pattern: str, detail: str) -> str:
    if re.search(r"\\[1-9]|\\k<", pattern):
        why = "backreferences (\\1, \\k<name>) are not supported"
    elif re.search(r"\(\?<?[=!]", pattern):
        why = "lookaround ((?=...), (?!...), (?<=...), (?<!...)) is not supported"
    else:
        why = "it is not a regular expression RE2 accepts"
    return (f"pattern {_short(pattern)!r} cannot be used: {why} ({detail}); schema patterns run on RE2, "
            "whose matching time is linear in the input, so that a model's argument cannot stall the "
            "process; rewrite the pattern without it")


def _short(s: str, n: int = 200) -> str:
    return s if len(s) <= n else s[:n] + "…"
