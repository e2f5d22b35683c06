"""What every command shares: exit codes, `--global` parsing, output helpers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import UsageError

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

__all__ = ["EXIT_FAIL", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "AddCommand", "UsageError",
           "add_globals", "build_globals", "parse_global", "write"]


# --------------------------------------------------------------------------- --global parsing
# The parser lives in chainreact.config.globals (one parser for every entry point); these wrappers import
# it on first use, because importing chainreact.config loads pydantic and `--help` must stay fast.


def parse_global(item: str) -> tuple[list[str], Any]:
    """Parse one `--global` item: `KEY=VALUE` (a string) or `KEY:=JSON` (a JSON value)."""
    from ..config.globals import parse_global as parse

    return parse(item)


def build_globals(items: Sequence[str] | None, files: Sequence[str] | None = None) -> dict[str, Any]:
    """The run's globals: `--globals FILE`s merged in order, then `--global` items on top."""
    from ..config.globals import build_globals as build

    return build(items, files)


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
