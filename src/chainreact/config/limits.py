"""Bounds on what a parsed document may be, checked before anything walks it (issue 10 item 6).

YAML aliases let a few hundred bytes stand for billions of values (shared references that every later
walk, copy or serialisation expands), or for a structure that contains itself; JSON and YAML both allow
nesting deep enough to exhaust the interpreter's stack, and integers longer than any field can hold.
`check_document` walks the data once, counting values as a full expansion would, and stops at the first
value over a bound with a ConfigError naming its JSON path.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ConfigError

MAX_VALUES = 100_000  # values in the document once YAML aliases are expanded
MAX_DEPTH = 100  # nested objects/arrays
MAX_INT = 2**63 - 1  # the largest integer any field (or a provider's int64) can hold
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024


def check_document(data: Any, source: str | None = None) -> None:
    """Raise ConfigError if `data` expands beyond MAX_VALUES, nests deeper than MAX_DEPTH, contains itself,
    or holds an integer beyond ±MAX_INT or a float that is not finite."""
    _Walk(source).visit(data, "$", 0)


class _Walk:
    __slots__ = ("count", "source", "stack")

    def __init__(self, source: str | None):
        self.source = source
        self.count = 0
        self.stack: set[int] = set()  # ids of the containers on the current path (cycle detection)

    def fail(self, path: str, message: str) -> ConfigError:
        where = self.source or "<document>"
        return ConfigError(f"{where}: {path}: {message}", source=self.source, errors=[(path, message)])

    def visit(self, value: Any, path: str, depth: int) -> None:
        self.count += 1
        if self.count > MAX_VALUES:
            raise self.fail(path, f"the document expands to more than {MAX_VALUES} values (YAML aliases "
                                  "that repeat large parts?); refused")
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return
        if isinstance(value, int):
            if not -MAX_INT <= value <= MAX_INT:
                raise self.fail(path, f"integer out of range (more than {len(str(MAX_INT))} digits)")
            return
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.fail(path, f"expected a finite number, got {value}")
            return
        if not isinstance(value, dict | list | tuple):
            return
        if depth >= MAX_DEPTH:
            raise self.fail(path, f"nested more than {MAX_DEPTH} levels deep; refused")
        key = id(value)
        if key in self.stack:
            raise self.fail(path, "the value contains itself (a recursive YAML alias); refused")
        self.stack.add(key)
        if isinstance(value, dict):
            for k, v in value.items():
                self.visit(v, f"{path}.{k}", depth + 1)
        else:
            for i, v in enumerate(value):
                self.visit(v, f"{path}[{i}]", depth + 1)
        self.stack.discard(key)
