"""The rule engine: a pool of compiled chains and the API that sends messages through them."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError
from .aspects import Aspect, with_global
from .catalog import builtin_components
from .components.base import Component
from .context import run_message
from .dsl import (
    ChainDef,
    ChainLoadError,
    NodeDef,
    chain_files,
    chain_from_dict,
    load_chain_file,
    structural_errors,
)
from .jsengine import DEFAULT_MEMORY_LIMIT, DEFAULT_TIME_LIMIT
from .lca import lca_of_node
from .loadtime import substitute
from .model import DebugEvent, DebugFn, End, StreamFn
from .msg import RuleMsg

log = logging.getLogger("chainreact.chains")


class Node:
    """A node of a compiled chain: its component and its outgoing routes by relation."""

    __slots__ = ("cache_output", "chain", "component", "debug", "definition", "id", "index", "is_end", "name",
                 "routes", "type")

    def __init__(self, chain: Chain, definition: NodeDef, index: int):
        self.chain = chain
        self.definition = definition
        self.index = index
        self.id = definition.id or f"node{index}"
        self.type = definition.type
        self.name = definition.name
        self.debug = definition.debugMode
        self.is_end = definition.type == "end"
        self.routes: dict[str, list[Node]] = {}
        self.cache_output = False
        self.component: Component = None  # type: ignore[assignment]


class Chain:
    """A loaded, compiled chain (immutable: a reload builds a new one; running messages keep theirs)."""

    def __init__(self, definition: ChainDef, engine: RuleEngine, *, chain_id: str | None = None,
                 source: str = "<string>"):
        self.definition = definition
        self.engine = engine
        self.source = source
        self.id = chain_id or definition.ruleChain.id
        self.name = definition.ruleChain.name
        self.debug = definition.ruleChain.debugMode
        self.disabled = definition.ruleChain.disabled
        self.vars = definition.vars
        self.nodes: dict[str, Node] = {}
        self.parents: dict[str, list[str]] = {}
        self._lca: dict[str, str | None] = {}
        # structure and every node's configuration, reported together
        errors: list[tuple[str, str]] = structural_errors(definition)
        registry = builtin_components()
        chain_info = {"id": self.id, "name": self.name, **(definition.ruleChain.additionalInfo or {})}
        env = {"global": engine.properties, "vars": self.vars, "ruleChain": chain_info}
        node_defs = definition.metadata.nodes
        for i, nd in enumerate(node_defs):
            node = Node(self, nd, i)
            self.nodes[node.id] = node
            cls = registry.get(nd.type)
            if cls is None:
                errors.append((f"$.metadata.nodes[{i}].type",
                               f"unknown node type {nd.type!r} (known: {', '.join(sorted(registry))})"))
                continue
            raw = substitute(nd.configuration or {}, env)
            try:
                config = cls.Config.model_validate(raw)
                node.component = cls(config, node.id, self)
            except ValidationError as e:
                for err in e.errors():
                    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
                    errors.append((f"$.metadata.nodes[{i}].configuration{loc}", f"{err['msg']} ({nd.type})"))
            except ConfigError as e:  # a component's own check, with paths inside its configuration
                at = f"$.metadata.nodes[{i}].configuration"
                errors.extend((at + path.removeprefix("$"), f"{msg} ({nd.type})")
                              for path, msg in e.errors or [("$", str(e))])
            except (ValueError, TypeError, LookupError) as e:
                errors.append((f"$.metadata.nodes[{i}].configuration", f"{nd.type}: {e}"))
        for c in definition.metadata.connections or []:
            src, dst = self.nodes.get(c.fromId), self.nodes.get(c.toId)
            if src is None or dst is None:
                continue  # reported by structural_errors
            src.routes.setdefault(c.type, []).append(dst)
            self.parents.setdefault(dst.id, [])
            if src.id not in self.parents[dst.id]:
                self.parents[dst.id].append(src.id)
        if errors:
            self.close()
            raise ChainLoadError(_summary(source, errors), source=source, errors=errors)
        self.first: Node | None = None
        if node_defs:
            self.first = list(self.nodes.values())[definition.metadata.firstNodeIndex]
        self.has_end_node = any(n.is_end for n in self.nodes.values())
        # Upstream outputs (`nodeId.msg`) are kept only for nodes some configuration names.
        text = str([nd.configuration for nd in node_defs])
        self.referenced_nodes = [nid for nid in self.nodes
                                 if re.search(rf"\b{re.escape(nid)}\.(msg|metadata|data|msgType)\b", text)]
        for nid in self.referenced_nodes:
            self.nodes[nid].cache_output = True

    def lca(self, node_id: str) -> str | None:
        if node_id not in self._lca:
            self._lca[node_id] = lca_of_node(self.parents, node_id)
        return self._lca[node_id]

    def close(self) -> None:
        for n in self.nodes.values():
            if n.component is not None:
                n.component.close()

    def info(self) -> dict[str, Any]:
        rc = self.definition.ruleChain
        return {"id": self.id, "name": rc.name, "disabled": rc.disabled,
                "additionalInfo": rc.additionalInfo or {}}


def _summary(source: str, errs: list[tuple[str, str]]) -> str:
    return "\n".join([f"{source}: {len(errs)} problem(s) in the rule chain:"]
                     + [f"  {p}: {m}" for p, m in errs])


ChainSource = str | Path | dict[str, Any] | ChainDef


class RuleEngine:
    """A pool of chains by id, and the API that runs messages through them.

    `properties` are the `${global.x}` values; `max_nodes` bounds how many nodes one message may pass
    (cycles are allowed); `timeout` (seconds) bounds one message; `on_debug` receives node debug events
    for chains or nodes with debugMode (all nodes with `debug=True`); `aspects` are hooks around every
    message and node (aspects.py), after the global ones (tracing, when switched on)."""

    def __init__(self, *, properties: dict[str, Any] | None = None, on_end_with_failure: bool = True,
                 max_nodes: int = 1000, timeout: float | None = None, on_debug: DebugFn | None = None,
                 debug: bool = False, functions: dict[str, Callable[..., Any]] | None = None,
                 aspects: Sequence[Aspect] = ()):
        self.properties: dict[str, Any] = dict(properties or {})
        self.on_end_with_failure = on_end_with_failure
        self.max_nodes = max_nodes
        self.timeout = timeout
        self.on_debug = on_debug
        self.debug = debug
        self.functions: dict[str, Callable[..., Any]] = dict(functions or {})
        self.js_time_limit = DEFAULT_TIME_LIMIT  # seconds per JavaScript call
        self.js_memory_limit = DEFAULT_MEMORY_LIMIT  # bytes per JavaScript context
        self.services: dict[str, Any] = {}  # hooks for components (agent session store, tool resolver)
        self.aspects: tuple[Aspect, ...] = with_global(aspects)
        self._chains: dict[str, Chain] = {}
        self._aliases: dict[str, str] = {}

    # --- the pool ------------------------------------------------------------------------------------
    def load(self, source: ChainSource, *, chain_id: str | None = None) -> Chain:
        """Load (or replace) one chain from a file path, a JSON/YAML string, a dict or a ChainDef."""
        definition, src = _definition(source)
        chain = Chain(definition, self, chain_id=chain_id, source=src)
        old = self._chains.get(chain.id)
        self._chains[chain.id] = chain
        if chain_id and definition.ruleChain.id and definition.ruleChain.id != chain_id:
            self._aliases[definition.ruleChain.id] = chain_id
        if old is not None and old is not chain:
            old.close()
        return chain

    def load_path(self, path: str | Path) -> list[Chain]:
        """Load a chain file or every chain file of a folder; all problems of all files at once."""
        loaded: list[Chain] = []
        problems: list[ChainLoadError] = []
        for f in chain_files(path):
            try:
                loaded.append(self.load(f))
            except ChainLoadError as e:
                problems.append(e)
        if problems:
            errs = [(f"{e.source}:{p}", m) for e in problems for p, m in (e.errors or [("$", str(e))])]
            raise ChainLoadError("\n".join(str(e) for e in problems), source=str(path), errors=errs)
        return loaded

    reload = load

    def reload_child(self, chain_id: str, node: dict[str, Any] | str) -> Chain:
        """Replace one node of a loaded chain (matched by its `id`), as RuleGo's ReloadChild: the chain is
        rebuilt with that node's new definition; running messages finish on the old version."""
        chain = self.get(chain_id)
        if chain is None:
            raise LookupError(f"ruleChain id={chain_id} not found")
        from .dsl import parse_document

        new = parse_document(node) if isinstance(node, str) else dict(node)
        doc = chain.definition.model_dump(mode="json", exclude_none=True)
        nodes = doc["metadata"]["nodes"]
        idx = next((i for i, n in enumerate(nodes) if (n.get("id") or f"node{i}") == new.get("id")), None)
        if idx is None:
            raise LookupError(f"node id={new.get('id')} not found in chain {chain_id!r}")
        nodes[idx] = new
        return self.load(doc, chain_id=chain.id)

    def get(self, chain_id: str) -> Chain | None:
        c = self._chains.get(chain_id)
        if c is None and chain_id in self._aliases:
            c = self._chains.get(self._aliases[chain_id])
        return c

    def remove(self, chain_id: str) -> None:
        c = self._chains.pop(chain_id, None)
        if c is not None:
            c.close()

    @property
    def chains(self) -> dict[str, Chain]:
        return dict(self._chains)

    def register_function(self, name: str, fn: Callable[..., Any]) -> None:
        """A function for `functions` nodes: fn(ctx, msg), sync or async; it routes with ctx.tell_*."""
        self.functions[name] = fn

    def close(self) -> None:
        for c in self._chains.values():
            c.close()
        self._chains.clear()

    # --- running -------------------------------------------------------------------------------------
    async def run(self, chain_id: str, msg: RuleMsg, *, on_end: Callable[[End], Any] | None = None,
                  on_stream: StreamFn | None = None, on_debug: DebugFn | None = None,
                  timeout: float | None = None, debug: bool | None = None,
                  aspects: Sequence[Aspect] = (), start_node: str | None = None,
                  only_node: bool = False) -> list[End]:
        """Send `msg` from the chain's first node; return every ended branch once all have ended.

        `on_end` fires once per ended branch as it ends; `on_stream` receives Stream frames in order;
        `aspects` run for this message only, after the engine's. `start_node`: the message enters at that
        node instead (RuleGo's WithStartNode; LookupError when the chain has none); `only_node`: that node
        alone runs, its relations end the branch (WithSkipTellNext).
        On timeout or cancellation every branch is cancelled; a timeout adds one Failure end."""
        chain = self.get(chain_id)
        if chain is None:
            raise LookupError(f"ruleChain id={chain_id} not found")
        if chain.disabled:
            raise RuntimeError(f"rule chain {chain_id!r} is disabled")
        return await run_message(self, chain, msg, max_nodes=self.max_nodes,
                                 timeout=timeout if timeout is not None else self.timeout, on_end=on_end,
                                 on_stream=on_stream, on_debug=on_debug or self.on_debug,
                                 debug_all=self.debug if debug is None else debug, aspects=aspects,
                                 start_node=start_node, only_node=only_node)

    def tell(self, chain_id: str, msg: RuleMsg, **kwargs: Any) -> asyncio.Task[list[End]]:
        """Start a message without waiting (inside a running event loop); the task returns the ends."""
        return asyncio.get_running_loop().create_task(self.run(chain_id, msg, **kwargs))

    def tell_and_wait(self, chain_id: str, msg: RuleMsg, **kwargs: Any) -> list[End]:
        """Synchronous facade of `run` (not from inside a running event loop)."""
        return asyncio.run(self.run(chain_id, msg, **kwargs))


def _definition(source: ChainSource) -> tuple[ChainDef, str]:
    if isinstance(source, ChainDef):
        return source, "<chain>"
    if isinstance(source, dict):
        return chain_from_dict(source, check=False), "<dict>"
    looks_inline = isinstance(source, str) and (source.lstrip().startswith(("{", "ruleChain"))
                                                or "\n" in source)
    if isinstance(source, Path) or not looks_inline:
        return load_chain_file(source, check=False), str(source)
    from .dsl import parse_document

    return chain_from_dict(parse_document(source), check=False), "<string>"


def validate_chain(source: ChainSource, *, properties: dict[str, Any] | None = None) -> Chain:
    """Compile a chain without serving it: raises ChainLoadError with every problem."""
    definition, src = _definition(source)
    return Chain(definition, RuleEngine(properties=properties), source=src)


def validate(data: Any, *, source: str | None = None) -> str:
    """`chainreact validate`'s hook: check a parsed chain document; a one-line summary, or ChainLoadError
    (a ConfigError) listing every problem with its JSON path."""
    definition = chain_from_dict(data, source or "<chain>", check=False)
    chain = Chain(definition, RuleEngine(), source=source or "<chain>")
    conns = len(definition.metadata.connections or [])
    chain.close()
    return f"{chain.id!r}, {len(chain.nodes)} node(s), {conns} connection(s)"


__all__ = ["Chain", "DebugEvent", "End", "Iterable", "Node", "RuleEngine", "validate_chain"]
