"""Glob patterns for the search tools, with the semantics of `wcmatch.glob` (GLOBSTAR | BRACE | DOTGLOB).

- `*` and `?` match within one name (never `/`); `**` as a whole component matches zero or more
  directories; elsewhere `**` is `*`.
- `[...]` is a POSIX bracket expression: `!` or `^` negates, a `]` right after the opening (or after
  the negation) is a member, `a-z` ranges, `[:alpha:]` classes; it never matches `/`. A `[` without a
  closing `]` is literal.
- `{a,b}` alternatives and `{1..3}` / `{a..c}` sequences expand like bash (nested too); braces without a
  comma or a sequence are literal.
- `\\` escapes the next character.

Own matcher (not pathlib.glob) so the walk can skip `.git`, never follow directory symlinks, and be
checked against the workspace at every step. The translated pattern runs on RE2 (linear time): a
model-supplied `*a*a*a*a*b` would otherwise backtrack for minutes on a long name.
tests/tools/builtin/test_globmatch.py checks the matcher against wcmatch on a corpus.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from .linear_re import LinearPattern, compile_linear

WILDCARDS = frozenset("*?[{\\")  # a backslash makes the component a pattern too (an escape)
MAX_EXPANSIONS = 1000  # brace expansion beyond this is refused (`{a,b}` x 20 would be a million)

_POSIX_CLASSES: dict[str, list[tuple[int, int]]] = {
    "alnum": [(48, 57), (65, 90), (97, 122)],
    "alpha": [(65, 90), (97, 122)],
    "ascii": [(0, 127)],
    "blank": [(9, 9), (32, 32)],
    "cntrl": [(0, 31), (127, 127)],
    "digit": [(48, 57)],
    "graph": [(33, 126)],
    "lower": [(97, 122)],
    "print": [(32, 126)],
    "punct": [(33, 47), (58, 64), (91, 96), (123, 126)],
    "space": [(9, 13), (32, 32)],
    "upper": [(65, 90)],
    "word": [(48, 57), (65, 90), (95, 95), (97, 122)],
    "xdigit": [(48, 57), (65, 70), (97, 102)],
}
_SLASH = ord("/")


class GlobError(ValueError):
    """The pattern cannot be used (too many brace expansions); the message says why."""


def has_wildcard(part: str) -> bool:
    return any(c in WILDCARDS for c in part)


class Glob:
    """A compiled glob; `match(path)` is a match object or None, like `re.Pattern.match`."""

    __slots__ = ("_regex", "pattern")

    def __init__(self, pattern: str, regex: LinearPattern):
        self.pattern = pattern
        self._regex = regex

    def match(self, rel_path: str) -> Any:
        try:
            text = rel_path.encode("utf-8")
        except UnicodeEncodeError:
            # A name that is not UTF-8 (os.fsdecode's surrogates): match its readable form, where each
            # undecodable byte is one U+FFFD character, so `*` and `?` still see it.
            text = rel_path.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode("utf-8")
        return self._regex.match(text)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Glob:
    """A Glob whose `.match(path)` is true when the relative path (with '/' separators) matches."""
    alternatives = expand_braces(pattern)
    body = "|".join(_translate_path(p) for p in dict.fromkeys(alternatives))
    return Glob(pattern, compile_linear(f"(?s:{body})\\z"))


def matches(pattern: str, rel_path: str) -> bool:
    """Patterns without '/' match the base name anywhere (like .gitignore); others the whole path."""
    if "/" not in pattern:
        rel_path = rel_path.rsplit("/", 1)[-1]
    return compile_glob(pattern).match(rel_path) is not None


# --- braces ----------------------------------------------------------------------------------------


def expand_braces(pattern: str) -> list[str]:
    """Bash-style brace expansion; literal text where a brace group is not an expansion."""
    out = _expand(pattern)
    if len(out) > MAX_EXPANSIONS:
        raise GlobError(f"the pattern expands to more than {MAX_EXPANSIONS} alternatives; "
                        "use fewer {...} groups")
    return out


def _unescaped(p: str) -> Iterator[tuple[int, str]]:
    """The characters of `p` that no backslash escapes, with their index (an escape and what it escapes
    are skipped)."""
    i = 0
    while i < len(p):
        if p[i] == "\\":
            i += 2
            continue
        yield i, p[i]
        i += 1


def _expand(p: str) -> list[str]:
    for i, c in _unescaped(p):
        if c == "{":
            end = _closing_brace(p, i)
            if end != -1:
                inner = p[i + 1 : end]
                items = _split_commas(inner)
                if len(items) > 1:
                    choices = [x for item in items for x in _expand(item)]
                else:
                    choices = _sequence(inner) or []
                if choices:
                    head = p[:i]
                    tails = _expand(p[end + 1 :])
                    if len(choices) * len(tails) > MAX_EXPANSIONS:
                        raise GlobError(f"the pattern expands to more than {MAX_EXPANSIONS} alternatives; "
                                        "use fewer {...} groups")
                    return [head + c + t for c in choices for t in tails]
    return [p]


def _closing_brace(p: str, start: int) -> int:
    depth = 0
    for i, c in _unescaped(p):
        if i < start:
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_commas(body: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    start = 0
    for i, c in _unescaped(body):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return parts


def _sequence(body: str) -> list[str] | None:
    """`1..5`, `05..10`, `a..e`, with an optional `..step`; None when `body` is not a sequence."""
    parts = body.split("..")
    if len(parts) not in (2, 3):
        return None
    step = 1
    if len(parts) == 3:
        if not _is_int(parts[2]):
            return None
        step = abs(int(parts[2])) or 1
    a, b = parts[0], parts[1]
    if _is_int(a) and _is_int(b):
        x, y = int(a), int(b)
        if abs(y - x) // step + 1 > MAX_EXPANSIONS:
            raise GlobError(f"the sequence {{{body}}} has more than {MAX_EXPANSIONS} items")
        width = max(len(a), len(b)) if (_padded(a) or _padded(b)) else 0
        rng = range(x, y + 1, step) if x <= y else range(x, y - 1, -step)
        return [str(n).zfill(width) if n >= 0 else "-" + str(-n).zfill(width - 1) for n in rng]
    if len(a) == 1 and len(b) == 1 and a.isalpha() == b.isalpha() and a.isascii() and b.isascii():
        x, y = ord(a), ord(b)
        rng = range(x, y + 1, step) if x <= y else range(x, y - 1, -step)
        return [chr(n) for n in rng]
    return None


def _is_int(s: str) -> bool:
    return s.lstrip("-").isdigit() and s.count("-") <= 1 and s.isascii()


def _padded(s: str) -> bool:
    digits = s.lstrip("-")
    return len(digits) > 1 and digits.startswith("0")


# --- translation -----------------------------------------------------------------------------------


def _translate_path(p: str) -> str:
    parts = p.split("/")
    out: list[str] = []
    last = len(parts) - 1
    for n, part in enumerate(parts):
        if part == "**":
            # Zero or more whole directories; at the end, everything below.
            out.append(".*" if n == last else "(?:.*/)?")
            continue
        out.append(_translate_name(part))
        if n != last:
            out.append("/")
    return "".join(out)


def _translate_name(p: str) -> str:
    out: list[str] = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\" and i + 1 < n:
            out.append(_literal(p[i + 1]))
            i += 2
            continue
        if c == "*":
            while i + 1 < n and p[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            parsed = _bracket(p, i)
            if parsed is None:
                out.append(_literal(c))
            else:
                regex, i = parsed
                out.append(regex)
                continue
        else:
            out.append(_literal(c))
        i += 1
    return "".join(out)


def _bracket(p: str, start: int) -> tuple[str, int] | None:
    """(regex, index after the closing ']') for the bracket expression at `start`, or None if unclosed."""
    i = start + 1
    n = len(p)
    negate = i < n and p[i] in "!^"
    if negate:
        i += 1
    ranges: list[tuple[int, int]] = []
    first = True
    while i < n:
        c = p[i]
        if c == "]" and not first:
            return _class(ranges, negate), i + 1
        first = False
        if c == "[" and p.startswith("[:", i):
            close = p.find(":]", i + 2)
            name = p[i + 2 : close] if close != -1 else ""
            if name in _POSIX_CLASSES:
                ranges.extend(_POSIX_CLASSES[name])
                i = close + 2
                continue
        if c == "\\" and i + 1 < n:
            i += 1
            c = p[i]
        lo = ord(c)
        i += 1
        if i + 1 < n and p[i] == "-" and p[i + 1] != "]":
            hi_char = p[i + 1]
            i += 2
            if hi_char == "\\" and i < n:
                hi_char = p[i]
                i += 1
            hi = ord(hi_char)
            if lo <= hi:  # a reversed range matches nothing, as in wcmatch
                ranges.append((lo, hi))
            continue
        ranges.append((lo, lo))
    return None


def _class(ranges: list[tuple[int, int]], negate: bool) -> str:
    """An RE2 class for the code point ranges that never matches '/'."""
    if negate:
        body = "".join(_range(lo, hi) for lo, hi in ranges)
        return f"[^/{body}]"
    kept: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if lo <= _SLASH <= hi:
            if lo < _SLASH:
                kept.append((lo, _SLASH - 1))
            if hi > _SLASH:
                kept.append((_SLASH + 1, hi))
        else:
            kept.append((lo, hi))
    if not kept:
        return r"[^\x00-\x{10ffff}]"  # matches nothing
    return "[" + "".join(_range(lo, hi) for lo, hi in kept) + "]"


def _range(lo: int, hi: int) -> str:
    return f"\\x{{{lo:x}}}" if lo == hi else f"\\x{{{lo:x}}}-\\x{{{hi:x}}}"


def _literal(c: str) -> str:
    return c if c.isalnum() or c == "_" else f"\\x{{{ord(c):x}}}"
