"""Glob patterns for the search tools: `**` across directories, `*`/`?` within a name, `[...]`, `{a,b}`.

Own matcher (not pathlib.glob) so the walk can skip `.git`, never follow directory symlinks, and be
checked against the workspace at every step.
"""

from __future__ import annotations

import re
from functools import lru_cache

WILDCARDS = frozenset("*?[{")


def has_wildcard(part: str) -> bool:
    return any(c in WILDCARDS for c in part)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching whole relative paths (with '/' separators) against `pattern`."""
    return re.compile("(?s:" + _translate(pattern) + r")\Z")


def _translate(p: str) -> str:
    out: list[str] = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if p.startswith("**", i):
            j = i + 2
            whole_component = (i == 0 or p[i - 1] == "/") and (j == n or p[j] == "/")
            if whole_component and j == n:
                out.append(".*")
                i = j
            elif whole_component:
                out.append("(?:.*/)?")  # zero or more directories
                i = j + 1
            else:
                out.append("[^/]*")
                i = j
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = p.find("]", i + 2 if p.startswith(("[!", "[^"), i) else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = p[i + 1 : end]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[^/{body}]" if negate else f"[{body}]")
                i = end + 1
                continue
        elif c == "{":
            end = _matching_brace(p, i)
            if end == -1:
                out.append(re.escape(c))
            else:
                alternatives = _split_top_level(p[i + 1 : end])
                out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
                i = end + 1
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _matching_brace(p: str, start: int) -> int:
    depth = 0
    for j in range(start, len(p)):
        if p[j] == "{":
            depth += 1
        elif p[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _split_top_level(body: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in body:
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def matches(pattern: str, rel_path: str) -> bool:
    """Patterns without '/' match the base name anywhere (like .gitignore); others the whole path."""
    if "/" not in pattern:
        rel_path = rel_path.rsplit("/", 1)[-1]
    return compile_glob(pattern).match(rel_path) is not None
