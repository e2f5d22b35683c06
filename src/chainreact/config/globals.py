"""The one parser of `--global KEY=VALUE` / `KEY:=JSON` items and `--globals FILE`s.

It lives in `config` (not in the CLI) so every command and library entry point that takes globals as
text (`run`, `complete`, later the server) builds them the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, UsageError
from ..jsonutil import deep_merge


def parse_global(item: str) -> tuple[list[str], Any]:
    """Parse one `--global` item: `KEY=VALUE` (a string) or `KEY:=JSON` (a JSON value).

    Dotted keys nest: `models.default.url=x` -> ["models", "default", "url"].
    """
    raw_json = False
    if ":=" in item and item.index(":=") + 1 == item.index("="):
        key, value_text = item.split(":=", 1)
        raw_json = True
    elif "=" in item:
        key, value_text = item.split("=", 1)
    else:
        raise UsageError(f"--global {item!r}: expected KEY=VALUE (a string) or KEY:=JSON (a JSON value)")
    parts = key.strip().split(".")
    if not key.strip() or any(not p for p in parts):
        raise UsageError(f"--global {item!r}: empty key or key part (dotted keys look like a.b.c)")
    value: Any = value_text
    if raw_json:
        try:
            value = json.loads(value_text)
        except json.JSONDecodeError as e:
            raise UsageError(f"--global {item!r:.80}: the value after ':=' is not valid JSON ({e.msg})"
                             ) from None
        except (RecursionError, ValueError):  # nesting or an integer beyond what the parser reads
            raise UsageError(f"--global {item!r:.80}: the JSON value is nested too deeply or too large"
                             ) from None
        from .limits import check_document

        try:
            check_document(value, f"--global {key.strip()}")
        except ConfigError as e:
            raise UsageError(str(e)) from None
    return parts, value


def build_globals(items: Sequence[str] | None, files: Sequence[str] | None = None) -> dict[str, Any]:
    """The run's globals: `--globals FILE`s merged in order, then `--global` items on top."""
    result: dict[str, Any] = {}
    for f in files or ():
        result = deep_merge(result, _load_globals_file(f))
    for item in items or ():
        parts, value = parse_global(item)
        node = result
        for i, part in enumerate(parts[:-1]):
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                if nxt is not None:
                    raise UsageError(
                        f"--global {item!r}: {'.'.join(parts[: i + 1])} is already a value, not an object"
                    )
                nxt = node[part] = {}
            node = nxt
        node[parts[-1]] = value
    return result


def _load_globals_file(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--globals {path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    from .loader import parse_text

    try:
        data = parse_text(text, path)
    except ConfigError as e:
        raise UsageError(f"--globals {path}: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"--globals {path}: expected an object at the top level, got {type(data).__name__}")
    return data
