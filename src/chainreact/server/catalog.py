"""What a server serves: agents, rule chains and flows loaded from files or folders, by id.

A document's kind comes from its shape (config.detect_document_kind). Agents are keyed by their node id
(else the file name); chains by `ruleChain.id`; flows by their `id` (else `name`, else the file name). A
broken file is reported with its path and the rest still load; an id given twice is an error naming both
files. A flow entry holds the validated `Flow`; the server binds it to its state store on first use
(server/flows_runtime.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..config import fallback_id, find_documents
from ..errors import ConfigError

if TYPE_CHECKING:
    from ..agent.agent import Agent
    from ..chains.engine import RuleEngine
    from ..flows.engine import Flow
    from .ops_stats import RunObserver


@dataclass(slots=True)
class Entry:
    id: str
    kind: str  # "agent" | "chain" | "flow"
    source: str
    obj: Agent | str | Flow  # an Agent, the chain id in the engine, or a chainreact.flows.Flow
    description: str = ""

    @property
    def agent(self) -> Agent:
        """The Agent of an agent entry (callers pick entries by `kind` first)."""
        return cast("Agent", self._of("agent"))

    @property
    def flow(self) -> Flow:
        """The Flow of a flow entry."""
        return cast("Flow", self._of("flow"))

    def _of(self, kind: str) -> Agent | str | Flow:
        if self.kind != kind:
            raise TypeError(f"catalog entry {self.id!r} is a {self.kind}, not a {kind}")
        return self.obj


@dataclass
class Catalog:
    entries: dict[str, Entry] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # files that did not load, with why
    skipped: list[str] = field(default_factory=list)  # files in folders that are no document of ours
    engine: RuleEngine | None = None  # created when the first chain loads
    globals: dict[str, Any] = field(default_factory=dict)  # kept for reloads (catalog_reload.py)
    # Told about every run, model call and tool call of the agents built here (server/ops_stats.py).
    observers: list[RunObserver] = field(default_factory=list)
    retired: list[Agent] = field(default_factory=list)  # replaced agents: runs in flight may still use them

    @classmethod
    def load(cls, paths: Iterable[str | Path], *, globals: Mapping[str, Any] | None = None) -> Catalog:
        cat = cls()
        # Files and folders told apart by shape, chains first (agents' rulechain tools, the MCP `self`
        # provider and flows' rulechain nodes use the loaded chains); `chainreact worker` reads them the same.
        found = find_documents(paths)
        cat.skipped.extend(found.skipped)
        cat.problems.extend(found.broken)  # a file that does not parse did not load: said, never skipped
        g = cat.globals = dict(globals or {})
        for doc in found.documents:
            cat._load(doc.path, doc.data, doc.kind, g, quiet=doc.in_folder)
        return cat

    def _load(self, path: Path, data: Any, kind: str, globals_: dict[str, Any], *, quiet: bool) -> None:
        try:
            if kind == "agent":
                from ..chains import agent_from_document
                from .ops_stats import ObserverMiddleware

                ident = (data.get("id") if isinstance(data, dict) else None) or fallback_id(path, "agent")
                observe = [ObserverMiddleware(self.observers, str(ident))]
                agent = agent_from_document(path, globals=globals_, engine=self.engine, middleware=observe)
                self._add(Entry(str(ident), "agent", str(path), agent, agent.description))
            elif kind == "chain":
                engine = self.chain_engine(globals_)
                chain = engine.load(path)
                info = chain.definition.ruleChain
                desc = (info.additionalInfo or {}).get("description") or info.name or ""
                self._add(Entry(chain.id, "chain", str(path), chain.id, str(desc)))
            else:
                from ..flows import Flow

                flow = Flow.load(path)
                self._add(Entry(flow.id, "flow", str(path), flow, flow.definition.description
                                or flow.definition.name))
        except ConfigError as e:
            if not quiet:
                raise
            self.problems.append(f"{path}: {e}")

    def chain_engine(self, globals_: Mapping[str, Any] | None = None) -> RuleEngine:
        if self.engine is None:
            from ..chains import RuleEngine

            self.engine = RuleEngine(properties=dict(globals_ or {}))
        return self.engine

    @property
    def chains(self) -> RuleEngine:
        """The engine of the served chains, for callers that hold a chain's entry (it exists then)."""
        if self.engine is None:
            raise LookupError("no rule chain is served")
        return self.engine

    def _add(self, entry: Entry) -> None:
        old = self.entries.get(entry.id)
        if old is not None and old.source != entry.source:
            raise ConfigError(f"id {entry.id!r} is defined twice: in {old.source} and in {entry.source}; "
                              "ids must be unique across the served files")
        self.entries[entry.id] = entry

    def add_chain(self, chain_id: str, source: str) -> Entry:
        """Register a chain loaded into the engine at run time (POST /api/v1/rules/{id})."""
        entry = Entry(chain_id, "chain", source, chain_id)
        self.entries[chain_id] = entry
        return entry

    def remove(self, ident: str) -> bool:
        entry = self.entries.pop(ident, None)
        if entry is None:
            return False
        if entry.kind == "chain" and self.engine is not None:
            self.engine.remove(ident)
        return True

    async def aclose(self) -> None:
        for agent in [*self.retired, *(e.agent for e in self.entries.values() if e.kind == "agent")]:
            await agent.aclose()
        if self.engine is not None:
            self.engine.close()
