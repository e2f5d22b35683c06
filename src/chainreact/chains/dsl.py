"""The RuleGo chain DSL, loaded unchanged from JSON or YAML into pydantic models.

Validation collects every problem (file, JSON path, message) before raising one ChainLoadError, so a user
fixes a document in one pass. Node configurations are checked by each component's config model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError


class ChainLoadError(ConfigError):
    """A chain document is invalid; `errors` holds (json_path, message) pairs, all of them."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class NodeDef(_Model):
    id: str = ""
    type: str
    name: str = ""
    debugMode: bool = False
    configuration: dict[str, Any] | None = None
    additionalInfo: dict[str, Any] | None = None


class ConnectionDef(_Model):
    fromId: str
    toId: str
    type: str
    label: str | None = None


class ChainMetadataDef(_Model):
    firstNodeIndex: int = 0
    endpoints: list[Any] | None = None
    nodes: list[NodeDef] = Field(default_factory=list)
    connections: list[ConnectionDef] | None = None
    ruleChainConnections: list[Any] | None = None


class RuleChainInfo(_Model):
    id: str = ""
    name: str = ""
    root: bool = True
    disabled: bool = False
    debugMode: bool = False
    configuration: dict[str, Any] | None = None
    additionalInfo: dict[str, Any] | None = None


class ChainDef(_Model):
    ruleChain: RuleChainInfo
    metadata: ChainMetadataDef = Field(default_factory=ChainMetadataDef)

    @property
    def id(self) -> str:
        return self.ruleChain.id

    @property
    def vars(self) -> dict[str, Any]:
        conf = self.ruleChain.configuration or {}
        v = conf.get("vars")
        return v if isinstance(v, dict) else {}

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def is_chain_document(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("ruleChain"), dict)


def parse_document(text: str | bytes, source: str = "<string>") -> Any:
    """JSON first (the RuleGo format), YAML when the text is not JSON: the document loader's parser, so a
    chain gets the same limits as an agent document (alias bombs, nesting depth, huge numbers)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    from ..config.loader import parse_text

    try:
        return parse_text(text, source)
    except ConfigError as e:
        raise ChainLoadError(str(e), source=source, errors=e.errors) from None


def _loc(loc: tuple[Any, ...]) -> str:
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def chain_from_dict(doc: Any, source: str = "<string>", *, check: bool = True) -> ChainDef:
    """Build and structurally validate a ChainDef; raises ChainLoadError listing every problem.

    Component configurations are checked when the chain is compiled by the engine (they need the
    component registry); `validate_chain` runs both."""
    if not is_chain_document(doc):
        from ..config.kinds import wrong_kind

        wrong = wrong_kind(doc, "chain", source)
        why = str(wrong) if wrong else f"{source}: not a rule chain document (expected an object with a " \
            "'ruleChain' object)"
        raise ChainLoadError(why, source=source, errors=[("$.ruleChain", "missing")])
    try:
        chain = ChainDef.model_validate(doc)
    except ValidationError as e:
        errs = [(_loc(err["loc"]), err["msg"]) for err in e.errors()]
        raise ChainLoadError(_summary(source, errs), source=source, errors=errs) from None
    errs = structural_errors(chain) if check else []
    if errs:
        raise ChainLoadError(_summary(source, errs), source=source, errors=errs)
    return chain


def structural_errors(chain: ChainDef) -> list[tuple[str, str]]:
    errs: list[tuple[str, str]] = []
    nodes = chain.metadata.nodes
    seen: dict[str, int] = {}
    for i, n in enumerate(nodes):
        nid = n.id or f"node{i}"
        if nid in seen:
            errs.append((f"$.metadata.nodes[{i}].id", f"duplicate node id {nid!r} (also nodes[{seen[nid]}])"))
        else:
            seen[nid] = i
    if nodes and not 0 <= chain.metadata.firstNodeIndex < len(nodes):
        errs.append(("$.metadata.firstNodeIndex",
                     f"{chain.metadata.firstNodeIndex} is not the index of a node (0..{len(nodes) - 1})"))
    for i, c in enumerate(chain.metadata.connections or []):
        if c.fromId not in seen:
            errs.append((f"$.metadata.connections[{i}].fromId", f"no node with id {c.fromId!r}"))
        if c.toId not in seen:
            errs.append((f"$.metadata.connections[{i}].toId", f"no node with id {c.toId!r}"))
    return errs


def _summary(source: str, errs: list[tuple[str, str]]) -> str:
    lines = [f"{source}: {len(errs)} problem(s) in the rule chain:"]
    lines += [f"  {path}: {msg}" for path, msg in errs]
    return "\n".join(lines)


def load_chain_file(path: str | Path, *, check: bool = True) -> ChainDef:
    p = Path(path)
    try:
        text = p.read_bytes()
    except OSError as e:
        raise ChainLoadError(f"{p}: cannot read the chain file: {e}", source=str(p)) from e
    return chain_from_dict(parse_document(text, str(p)), str(p), check=check)


def chain_files(path: str | Path) -> list[Path]:
    """The chain files of a folder (*.json, *.yaml, *.yml, sorted), or the file itself."""
    p = Path(path)
    if p.is_dir():
        return sorted(f for f in p.iterdir() if f.suffix in (".json", ".yaml", ".yml") and f.is_file())
    return [p]
