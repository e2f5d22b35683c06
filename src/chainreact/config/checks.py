"""What `chainreact validate` finds in an agent document's `${...}` templates before anything runs.

A run renders these fields (the endpoint when the agent is built, the prompt, messages and tool
descriptors at each run); a `${...}` that does not parse fails that run, and an `include('file')` of a
file that is not there renders as an empty string (a prompt silently lost). Both are reported here with
the field's JSON path. An include whose path is computed (`include(global.prompt)`) or guarded by
`fileExists(...)` in the same expression is left to the run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

# The fields a run renders (config/resolve.py and the agent's per-run rendering).
TEMPLATED_FIELDS = ("url", "key", "model", "systemPrompt", "messages", "images", "params", "failover",
                    "tools")

_INCLUDE = re.compile(r"""\binclude\(\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\s*\)""")


def template_problems(body: Mapping[str, Any], prefix: str, base_dir: Path) -> list[tuple[str, str]]:
    """(JSON path, message) for each `${...}` in the templated fields of `body` (a configuration as
    written, at `prefix`: "$" or "$.configuration") that does not parse or includes a missing file
    (relative paths from `base_dir`, as the run resolves them)."""
    from ..expr import ExprSyntaxError, parse_template

    problems: list[tuple[str, str]] = []
    for key in TEMPLATED_FIELDS:
        if key not in body:
            continue
        for path, text in _strings(body[key], f"{prefix}.{key}"):
            if "${" not in text:
                continue
            try:
                template = parse_template(text)
            except ExprSyntaxError as e:
                problems.append((path, f"{e} (a literal '${{' is written '$${{')"))
                continue
            for part in template.parts:
                if isinstance(part, str) or "fileExists(" in part[1]:
                    continue
                problems.extend((path, msg) for msg in _missing_includes(part[1], base_dir))
    return problems


def _missing_includes(source: str, base_dir: Path) -> Iterator[str]:
    for m in _INCLUDE.finditer(source):
        try:
            name = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError):
            continue
        p = Path(name).expanduser()
        if not p.is_absolute():
            p = base_dir / p
        if not p.is_file():
            yield f"include({name!r}): no such file ({p}); the run would include an empty string"


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


__all__ = ["TEMPLATED_FIELDS", "template_problems"]
