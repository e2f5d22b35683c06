"""The documents named on a command line: files and folders read and told apart by shape, one way for
`chainreact serve` (server/catalog.py) and `chainreact worker` (cli/temporal_cmds.py).

A folder is read recursively (`.json`, `.yaml`, `.yml`); in a folder a file that is no document of ours
(a `package.json`, data) is skipped with why, and one that does not parse (a trailing comma, bad YAML) is
*broken*: what it was meant to be cannot be told, so callers report it as a document that did not load
rather than skip it without a word. A file named on its own must be a document (else a ConfigError).
The documents come back in the order they load in: rule chains first (agents' `rulechain` tools, the MCP
`self` server and flows' rulechain nodes use them), then agents, then flows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .kinds import detect_document_kind
from .loader import read_document

SUFFIXES = (".json", ".yaml", ".yml")
_ORDER = {"chain": 0, "agent": 1, "flow": 2}


@dataclass(slots=True)
class FoundDocument:
    path: Path
    data: Any
    kind: str  # "agent" | "chain" | "flow"
    in_folder: bool  # found in a folder: a caller reports its load errors and goes on


@dataclass(slots=True)
class FoundDocuments:
    documents: list[FoundDocument] = field(default_factory=list)  # chains, then agents, then flows
    skipped: list[str] = field(default_factory=list)  # "path: why" of the files in folders that are not
    broken: list[str] = field(default_factory=list)  # "path: why" of the files in folders that do not parse


def find_documents(paths: Iterable[str | Path]) -> FoundDocuments:
    """Every document of `paths` (module doc). Raises ConfigError for a missing path, or for a file named
    on its own that is no agent, chain or flow document."""
    out = FoundDocuments()
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise ConfigError(f"{path}: no such file or folder")
        in_folder = path.is_dir()
        files = sorted(f for f in path.rglob("*") if f.suffix in SUFFIXES and f.is_file()) if in_folder \
            else [path]
        for f in files:
            try:
                data, _ = read_document(f)
            except ConfigError as e:
                if not in_folder:
                    raise
                out.broken.append(_named(f, str(e)))
                continue
            try:
                kind = detect_document_kind(data, source=str(f))
            except ConfigError as e:
                if not in_folder:
                    raise
                out.skipped.append(_named(f, str(e).splitlines()[0]))
                continue
            out.documents.append(FoundDocument(f, data, kind, in_folder))
    out.documents.sort(key=lambda d: _ORDER.get(d.kind, 3))  # stable: each kind in the order found
    return out


def _named(path: Path, why: str) -> str:
    """`path: why`, the path once (a ConfigError names its file already)."""
    return why if why.startswith(f"{path}: ") else f"{path}: {why}"


def fallback_id(source: str | Path | None, default: str) -> str:
    """The id a document that names none is served under (and `validate` names it by): its file's name
    without the suffix; `default` for a document that came from no file."""
    return Path(source).stem if source and not str(source).startswith("<") else default


__all__ = ["SUFFIXES", "FoundDocument", "FoundDocuments", "fallback_id", "find_documents"]

