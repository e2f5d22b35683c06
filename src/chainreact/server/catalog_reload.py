"""Reloading served files in a running catalog (the folder watcher's half that knows the catalog).

- A changed or added file is loaded again; what it served before is replaced (an id it no longer
  defines is unloaded). Chains load first, then agents, then flows, as at start.
- A file that no longer loads (bad syntax, a validation error, an id another file already uses) is
  reported in `catalog.problems` (so in /readyz) and its previous version keeps serving.
- A removed file's entries are unloaded.
A replaced agent is not closed at once (runs in flight may still use it): the catalog closes it at
shutdown. A replaced chain lets its messages in flight finish on the old version (the engine does).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import detect_document_kind
from ..config.loader import read_document
from ..errors import ConfigError
from .catalog import Catalog


@dataclass
class ReloadReport:
    loaded: list[str] = field(default_factory=list)  # ids (re)loaded
    removed: list[str] = field(default_factory=list)  # ids unloaded
    problems: list[str] = field(default_factory=list)  # "path: why", as in catalog.problems


def _ids_of(cat: Catalog, path: Path) -> list[str]:
    src = str(path)
    return [i for i, e in cat.entries.items() if e.source == src]


def _forget(lines: list[str], path: Path) -> None:
    prefix = f"{path}: "
    lines[:] = [p for p in lines if not p.startswith(prefix)]


def _unload(cat: Catalog, ident: str, report: ReloadReport) -> None:
    entry = cat.entries.get(ident)
    if entry is not None and entry.kind == "agent":
        cat.retired.append(entry.agent)
    cat.remove(ident)
    report.removed.append(ident)


def _ident(data: Any, kind: str, path: Path) -> str | None:
    if not isinstance(data, dict):
        return None
    if kind == "chain":
        rc = data.get("ruleChain")
        return str(rc["id"]) if isinstance(rc, dict) and rc.get("id") else None
    if kind == "agent":
        return str(data.get("id") or path.stem)
    return str(data.get("id") or data.get("name") or path.stem) if kind == "flow" else None


def apply_changes(cat: Catalog, paths: Iterable[Path]) -> ReloadReport:
    report = ReloadReport()
    parsed: list[tuple[Path, Any, str]] = []
    for path in paths:
        _forget(cat.skipped, path)
        if not path.is_file():
            _forget(cat.problems, path)
            for ident in _ids_of(cat, path):
                _unload(cat, ident, report)
            continue
        try:
            data, _ = read_document(path)
        except ConfigError as e:  # as at start: a file that does not parse did not load, said
            _forget(cat.problems, path)
            _problem(cat, report, path, str(e))
            continue
        try:
            parsed.append((path, data, detect_document_kind(data, source=str(path))))
        except ConfigError as e:
            if _ids_of(cat, path):  # it served something: broken now, the old version keeps serving
                _problem(cat, report, path, str(e))
            else:  # as at start: a file in a folder that is no document of ours is skipped
                _forget(cat.problems, path)
                cat.skipped.append(f"{path}: {str(e).splitlines()[0]}")
    order = {"chain": 0, "agent": 1}  # as at start: chains first (agents and flows use them), flows last
    for path, data, kind in sorted(parsed, key=lambda p: order.get(p[2], 2)):
        _forget(cat.problems, path)
        new_id = _ident(data, kind, path)
        other = cat.entries.get(new_id) if new_id else None
        if other is not None and other.source != str(path):
            _problem(cat, report, path, f"id {new_id!r} is already served from {other.source}")
            continue
        before = {i: cat.entries[i] for i in _ids_of(cat, path)}
        n = len(cat.problems)
        try:
            cat._load(path, data, kind, cat.globals, quiet=True)
        except Exception as e:  # not a ConfigError (a bug, a tool that fails to build): still a report
            cat.problems.append(f"{path}: {type(e).__name__}: {e}")
        if len(cat.problems) > n:  # did not load: _load recorded why; the old entries are untouched
            report.problems.extend(cat.problems[n:])
            cat.problems[n:] = [f"{p} (the previous version keeps serving)" if before else p
                                for p in cat.problems[n:]]
            continue
        # A file defines one id (flows, whose id rules live elsewhere: whatever it serves now).
        now = {new_id} if new_id else set(_ids_of(cat, path))
        for old_id, old in before.items():
            if old_id not in now:
                _unload(cat, old_id, report)
            elif cat.entries[old_id].kind == old.kind == "agent" and cat.entries[old_id].obj is not old.obj:
                cat.retired.append(old.agent)
        report.loaded.extend(sorted(now))
    return report


def _problem(cat: Catalog, report: ReloadReport, path: Path, why: str) -> None:
    why = why.removeprefix(f"{path}: ")  # ConfigErrors name their file already
    kept = " (the previous version keeps serving)" if _ids_of(cat, path) else ""
    line = f"{path}: {why}{kept}"
    cat.problems.append(line)
    report.problems.append(line)
