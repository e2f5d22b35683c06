"""An eval dataset: cases `{"name"?, "input", "expect": {...}}` in JSONL (one case a line) or YAML (a list, or
`{"cases": [...]}`). Every case is checked when the file loads; a DatasetError lists each problem with the
file, the line (JSONL) or case index, and the key.

The checks of `expect` (checks.py runs them):

    contains     "text" or ["a", "b"]              the answer contains each (case-sensitive)
    equals       "text", or any JSON value          the answer is exactly it (a JSON value: the answer
                                                    parsed as JSON equals it)
    matches      "RE2 pattern"                      a match anywhere in the answer (linear-time RE2)
    json_schema  {...}                              the answer is JSON valid against the schema
    tool_called  "name", {"name", "arguments"?: {...}}, or a list of them
                                                    each was called (with at least these arguments)
    max_steps    N                                  at most N model calls (of the agent itself)
    max_tokens   N                                  at most N tokens, prompt and completion, in all
    judge        "rubric" or {"rubric": "..."}      a judge model (`--judge DOC`) says the answer
                                                    satisfies the rubric
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError

CHECKS = ("contains", "equals", "matches", "json_schema", "tool_called", "max_steps", "max_tokens", "judge")


class DatasetError(ConfigError):
    """The dataset cannot be used; `errors` holds (where, what) pairs."""


@dataclass
class Case:
    name: str
    input: Any
    expect: dict[str, Any] = field(default_factory=dict)
    index: int = 0


def _problems(case: Any, where: str) -> list[tuple[str, str]]:
    if not isinstance(case, dict):
        return [(where, f"expected a case object {{\"input\", \"expect\"}}, got {type(case).__name__}")]
    out: list[tuple[str, str]] = []
    unknown = sorted(set(case) - {"name", "input", "expect", "metadata"})
    for key in unknown:
        close = difflib.get_close_matches(key, ["name", "input", "expect"], n=1)
        out.append((f"{where}.{key}", "unknown key" + (f" (did you mean {close[0]!r}?)" if close else "")))
    if "input" not in case:
        out.append((f"{where}.input", "missing: what the agent (chain, flow) is given"))
    if "name" in case and not isinstance(case["name"], str):
        out.append((f"{where}.name", "expected a string"))
    expect = case.get("expect", {})
    if not isinstance(expect, dict):
        return [*out, (f"{where}.expect", "expected an object of checks")]
    for kind, spec in expect.items():
        at = f"{where}.expect.{kind}"
        if kind not in CHECKS:
            close = difflib.get_close_matches(kind, CHECKS, n=1)
            out.append((at, f"unknown check (known: {', '.join(CHECKS)})"
                        + (f"; did you mean {close[0]!r}?" if close else "")))
            continue
        problem = _check_problem(kind, spec)
        if problem:
            out.append((at, problem))
    return out


def _check_problem(kind: str, spec: Any) -> str | None:
    if kind == "contains":
        items = spec if isinstance(spec, list) else [spec]
        if not items or not all(isinstance(s, str) for s in items):
            return "expected a string or a list of strings"
    elif kind == "matches":
        if not isinstance(spec, str):
            return "expected an RE2 pattern (a string)"
        from ..tools.builtin.linear_re import PatternError, compile_linear

        try:
            compile_linear(spec)
        except PatternError as e:
            return f"invalid pattern: {e}"
    elif kind == "json_schema":
        from ..tools.jsonschema_lite import compile_schema

        try:
            compile_schema(spec)
        except ConfigError as e:
            return f"invalid JSON schema: {e}"
    elif kind == "tool_called":
        for t in spec if isinstance(spec, list) else [spec]:
            if isinstance(t, str):
                continue
            if not isinstance(t, dict) or not isinstance(t.get("name"), str) or \
                    not isinstance(t.get("arguments", {}), dict) or set(t) - {"name", "arguments"}:
                return 'expected "tool name", {"name": "...", "arguments": {...}} or a list of them'
    elif kind in ("max_steps", "max_tokens"):
        if isinstance(spec, bool) or not isinstance(spec, int) or spec < 0:
            return "expected a non-negative integer"
    elif kind == "judge":
        rubric = spec.get("rubric") if isinstance(spec, dict) else spec
        if not isinstance(rubric, str) or not rubric.strip():
            return 'expected a rubric: "text" or {"rubric": "text"}'
    return None


def load_dataset(path: str | Path) -> list[Case]:
    """The cases of a JSONL or YAML dataset file, each checked; DatasetError lists every problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise DatasetError(f"dataset {p}: cannot read it ({e.strerror or e})") from None
    raw: list[tuple[str, Any]] = []
    errors: list[tuple[str, str]] = []
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise DatasetError(f"dataset {p}: not YAML ({e})") from None
        if isinstance(data, dict) and "cases" in data:
            data = data["cases"]
        if not isinstance(data, list):
            raise DatasetError(f"dataset {p}: expected a list of cases (or {{cases: [...]}})")
        raw = [(f"$[{i}]", c) for i, c in enumerate(data)]
    else:
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            try:
                raw.append((f"line {n}", json.loads(line)))
            except ValueError as e:
                errors.append((f"line {n}", f"not JSON ({e})"))
    cases: list[Case] = []
    names: set[str] = set()
    for i, (where, c) in enumerate(raw):
        found = _problems(c, where)
        errors += found
        if found:
            continue
        name = c.get("name") or f"case {i + 1}"
        if name in names:
            errors.append((f"{where}.name", f"{name!r} is the name of an earlier case too"))
        names.add(name)
        cases.append(Case(name, c["input"], dict(c.get("expect") or {}), i))
    if errors:
        head = "; ".join(f"{w}: {m}" for w, m in errors[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise DatasetError(f"dataset {p}: {len(errors)} problem(s): {head}{more}", source=str(p),
                           errors=errors)
    if not cases:
        raise DatasetError(f"dataset {p}: no cases")
    return cases


__all__ = ["CHECKS", "Case", "DatasetError", "load_dataset"]
