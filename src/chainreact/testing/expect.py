"""`expect` checks: compare a turn's expectations with the request that consumed it.

Matching is partial for dicts (only the keys you name are compared), element-wise for lists (same length),
and equality otherwise. Two keys look outside the body: `@headers` (request headers, names compared
case-insensitively) and `@last_message` (the last entry of `messages`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MISSING = object()


def check_expect(expect: Mapping[str, Any], body: Any, headers: Mapping[str, str]) -> list[str]:
    """Every difference as 'path: expected X, got Y'; empty when the request matches."""
    diffs: list[str] = []
    body_map = body if isinstance(body, Mapping) else {}
    for key, want in expect.items():
        if key == "@headers":
            if not isinstance(want, Mapping):
                diffs.append("@headers: expectation must be a dict of header name -> value")
                continue
            for name, value in want.items():
                got = headers.get(str(name).lower(), _MISSING)
                _match(got, value, f"header {name}", diffs)
        elif key == "@last_message":
            messages = body_map.get("messages")
            got = messages[-1] if isinstance(messages, list) and messages else _MISSING
            _match(got, want, "messages[-1]", diffs)
        else:
            _match(body_map.get(key, _MISSING), want, key, diffs)
    return diffs


def _match(got: Any, want: Any, path: str, diffs: list[str]) -> None:
    if got is _MISSING:
        diffs.append(f"{path}: expected {_show(want)}, but the request has no such field")
    elif isinstance(want, Mapping):
        if not isinstance(got, Mapping):
            diffs.append(f"{path}: expected an object, got {_show(got)}")
            return
        for k, v in want.items():
            _match(got.get(k, _MISSING), v, f"{path}.{k}", diffs)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            diffs.append(f"{path}: expected a list of {len(want)}, got {_show(got)}")
            return
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _match(g, w, f"{path}[{i}]", diffs)
    elif got != want:
        diffs.append(f"{path}: expected {_show(want)}, got {_show(got)}")


def _show(value: Any, limit: int = 200) -> str:
    text = repr(value)
    # Truncate long values but say so, so a reader never mistakes a cut value for the whole one.
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"
