"""Loading agent documents from JSON or YAML, with errors that name the file and the JSON path."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from .kinds import detect_document_kind, kind_mismatch
from .limits import MAX_DEPTH, MAX_DOCUMENT_BYTES, check_document
from .models import AgentConfig

log = logging.getLogger("chainreact.config")


class UnknownFieldWarning(UserWarning):
    """A document has fields this version does not know; they are ignored."""


@dataclass
class AgentDocument:
    """A loaded agent document: the configuration plus where it came from."""

    config: AgentConfig
    id: str = ""
    name: str = ""
    source: str | None = None  # file path, for messages and relative includes
    unknown_fields: list[str] = field(default_factory=list)
    json_prefix: str = "$"  # where the configuration sits in the file: "$" or "$.configuration"
    resolved: bool = False  # set by resolve_agent_config: templates rendered, never render twice

    @property
    def base_dir(self) -> Path:
        return Path(self.source).resolve().parent if self.source else Path.cwd()


_TYPE_BRANCHES = ("str", "int", "float", "dict", "list")


def _json_path(loc: tuple[Any, ...], prefix: str) -> str:
    out = prefix
    for part in loc:
        # pydantic reports union branches as extra loc parts ("str", "ToolDescriptor"); skip them.
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and (part[:1].isupper() or part in _TYPE_BRANCHES):
            continue
        elif isinstance(part, str) and ("[" in part or "-" in part):
            continue  # e.g. "literal['a','b']" / "function-after[...]" branch markers
        else:
            out += f".{part}"
    return out


def _collect_unknown(model: BaseModel, path: str, out: list[tuple[str, str]]) -> None:
    """(JSON path, "unknown field (did you mean 'x'?)") for each key no model knows, removed from the
    models so nothing downstream sees it."""
    if model.model_extra:
        for k in list(model.model_extra):
            out.append((f"{path}.{k}", unknown_field_message(k, type(model).model_fields)))
            del model.model_extra[k]
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            _collect_unknown(value, f"{path}.{name}", out)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    _collect_unknown(item, f"{path}.{name}[{i}]", out)


def unknown_fields(body: Any, prefix: str = "$") -> list[tuple[str, str]]:
    """(JSON path, "unknown field (did you mean ...?)") for each unknown key of an agent configuration
    `body` found at `prefix` (e.g. a chain node's "$.metadata.nodes[0].configuration"); [] when it is no
    valid configuration (its loader reports that)."""
    try:
        config = AgentConfig.model_validate(body)
    except ValidationError:
        return []
    out: list[tuple[str, str]] = []
    _collect_unknown(config, prefix, out)
    return out


def unknown_field_message(key: str, known: Iterable[str]) -> str:
    """"unknown field", with the closest known name if one is close (`maxSteps`: did you mean 'maxStep'?)."""
    import difflib

    close = difflib.get_close_matches(key, list(known), n=1)
    return "unknown field" + (f" (did you mean {close[0]!r}?)" if close else "")


def parse_text(text: str, source: str | None = None) -> Any:
    """Parse JSON or YAML text (JSON first: it is a subset of YAML but parses faster and errors better).
    The result is checked against limits.check_document (alias bombs, deep nesting, huge numbers)."""
    data = _parse(text, source)
    check_document(data, source)
    return data


def _parse(text: str, source: str | None) -> Any:
    where = source or "<document>"
    stripped = text.lstrip()
    try:
        if stripped.startswith(("{", "[")):
            try:
                return json.loads(text)
            except json.JSONDecodeError as e:
                if source and source.endswith(".json"):
                    raise ConfigError(
                        f"{where}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", source=source
                    ) from None
        import yaml

        from ..yamlutil import load_yaml

        try:
            return load_yaml(text)  # YAML 1.2 booleans: a skill named `no` stays a name
        except yaml.YAMLError as e:
            raise ConfigError(f"{where}: invalid YAML/JSON: {e}", source=source) from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to parse (more than {MAX_DEPTH} levels is refused)",
                          source=source, errors=[("$", "nested too deeply")]) from None
    except ValueError as e:  # e.g. an integer literal beyond Python's digit limit
        msg = "integer out of range (thousands of digits)" if "integer string" in str(e) else str(e)
        raise ConfigError(f"{where}: {msg}", source=source, errors=[("$", msg)]) from None


def read_document(src: str | Path, *, source: str | None = None) -> tuple[Any, str | None]:
    """Parse a document given as a path or as JSON/YAML text (when it is not an existing path and looks
    like a document). Returns (data, source), source being the file path when read from a file."""
    text_src = str(src)
    p = Path(text_src)
    looks_inline = "\n" in text_src or text_src.lstrip().startswith("{")
    if not looks_inline:
        if not p.is_file():
            raise ConfigError(f"{text_src}: no such file (expected a JSON or YAML document)")
        source = source or str(p)
        try:
            if p.stat().st_size > MAX_DOCUMENT_BYTES:
                raise ConfigError(f"{source}: larger than {MAX_DOCUMENT_BYTES // 2**20} MiB; not a document "
                                  "this loader reads", source=source)
            text_src = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{source}: not UTF-8 text", source=source) from None
        except OSError as e:
            raise ConfigError(f"{source}: cannot read ({e.strerror or e})", source=source) from None
    return parse_text(text_src, source), source


def load_document(src: str | Path | dict[str, Any], *, source: str | None = None,
                  lenient: bool = False) -> AgentDocument:
    """Load an agent document: a bare agent configuration or an `ai/agent` rule-chain node. Rule chains,
    flows and other JSON (a package.json) are refused (see kinds.detect_document_kind).

    `src` is a path, a dict, or JSON/YAML text (when it is not an existing path and looks like a document).
    Raises ConfigError listing every problem as `file: $.json.path: message`. A field no model knows is
    one of them (`$.maxSteps: unknown field (did you mean 'maxStep'?)`), unless `lenient=True` or the
    document says `"unknownFields": "warn"`: then they are ignored with one UnknownFieldWarning naming them
    (for documents written for another tool or a newer version that carry foreign fields).
    """
    data: Any
    if isinstance(src, dict):
        data = src
        check_document(data, source)
    else:
        data, source = read_document(src, source=source)
    where = source or "<document>"
    if isinstance(data, dict) and isinstance(data.get("configuration"), dict) \
            and data.get("type", "ai/agent") != "ai/agent":
        raise ConfigError(
            f"{where}: $.type: expected 'ai/agent', got {data.get('type')!r}", source=source,
            errors=[("$.type", "expected 'ai/agent'")],
        )
    kind = detect_document_kind(data, source=source)  # neither agent, chain nor flow: says what was expected
    if kind != "agent":
        raise kind_mismatch(kind, "agent", source)
    is_node = isinstance(data.get("configuration"), dict)
    prefix = "$.configuration" if is_node else "$"
    body = data["configuration"] if is_node else data
    try:
        config = AgentConfig.model_validate(body)
    except ValidationError as e:
        _raise_invalid(e, prefix, source)
    unknown: list[tuple[str, str]] = []
    _collect_unknown(config, prefix, unknown)
    if is_node:
        known_node = ("id", "type", "name", "configuration", "debugMode", "additionalInfo")
        unknown.extend((f"$.{k}", unknown_field_message(k, known_node)) for k in data if k not in known_node)
    if unknown and not (lenient or config.unknownFields == "warn"):
        lines = "\n".join(f"  {where}: {p}: {m}" for p, m in unknown)
        raise ConfigError(
            f"{where}: {len(unknown)} unknown field(s) (a document that carries foreign fields on purpose "
            f"says \"unknownFields\": \"warn\"; `chainreact validate --lenient`):\n{lines}",
            source=source, errors=unknown)
    if unknown:
        warnings.warn(f"{where}: unknown field(s) ignored: {', '.join(p for p, _ in unknown)}",
                      UnknownFieldWarning, stacklevel=2)
    name = config.name or (str(data.get("name") or "") if is_node else "") or "agent"
    return AgentDocument(
        config=config,
        id=str(data.get("id") or "") if is_node else "",
        name=name,
        source=source,
        unknown_fields=[p for p, _ in unknown],
        json_prefix=prefix,
    )


def _raise_invalid(e: ValidationError, prefix: str, source: str | None) -> NoReturn:
    where = source or "<document>"
    errors = []
    for err in e.errors():
        path = _json_path(err["loc"], prefix)
        msg = err["msg"]
        if "input" in err and err["type"] not in ("missing",):
            msg += f" (got {err['input']!r:.80})"
        errors.append((path, msg))
    # Union branches repeat the same path; keep the first message per path, and drop a path's
    # error when a deeper one explains it ("tools[1]: not a string" beside "tools[1].type: ...").
    seen: dict[str, str] = {}
    for path, msg in errors:
        if not any(p != path and p.startswith((path + ".", path + "[")) for p, _ in errors):
            seen.setdefault(path, msg)
    lines = "\n".join(f"  {where}: {p}: {m}" for p, m in seen.items())
    raise ConfigError(
        f"{where}: invalid agent configuration ({len(seen)} error(s)):\n{lines}",
        source=source,
        errors=list(seen.items()),
    ) from None

