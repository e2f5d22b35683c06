"""What every command shares: exit codes, `--global` parsing, output helpers."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..jsonutil import deep_merge

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad command-line input (exit 2)."""


# --------------------------------------------------------------------------- --global parsing


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
            raise UsageError(f"--global {item!r}: the value after ':=' is not valid JSON ({e.msg})") from None
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
    from pathlib import Path

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"--globals {path}: cannot read ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise UsageError(f"--globals {path}: neither JSON nor YAML ({e})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"--globals {path}: expected an object at the top level, got {type(data).__name__}")
    return data


def write(text: str, stream: Any = None) -> None:
    stream = stream or sys.stdout
    stream.write(text)
    stream.flush()


def add_globals(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--global", dest="globals", action="append", default=[], metavar="KEY=VALUE",
        help="a global for templates; dotted keys nest (a.b=x). KEY:=JSON sets a JSON value. Repeatable.",
    )
    p.add_argument(
        "--globals", dest="globals_file", action="append", default=[], metavar="FILE",
        help="JSON/YAML file of globals (merged under --global items). Repeatable.",
    )


# A command module's `register(add)` declares its commands through this: `add(name, func, help)` returns
# the subparser to add arguments to.
AddCommand = Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]
