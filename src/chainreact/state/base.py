"""The store interface: what every backend offers, and the logic they share.

A backend implements the abstract `_`-methods (plain rows in, plain rows out); validation, message
encoding, windowing and query building live here once, so both backends behave the same.
"""

from __future__ import annotations

import abc
import re
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..types import Message
from .checkpoint import RUN_STATUSES  # the snapshot owns the statuses; re-exported here
from .codec import drop_orphan_results, dumps, estimate_tokens, loads, message_from_dict, message_to_dict
from .embeddings import Embedder, fuse, pack, rank
from .errors import RunNotFoundError, StateError
from .url import StoreURL

if TYPE_CHECKING:
    from ..agent import Agent, RunResult

MEMORY_TYPES = ("semantic", "episodic", "procedural")
GLOBAL = "global"

# Words that carry no meaning for recall. PostgreSQL's english configuration drops them itself; dropping
# them before either backend sees the query keeps the two rankings alike.
_STOPWORDS_TEXT = (
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it "
    "its me my of on or our so than that the their them then there these they this to was we were what when "
    "where which who whom why will with would you your"
)
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    key: str
    messages: int
    tokens: int  # estimated, see codec.estimate_tokens
    created_at: float
    updated_at: float


@dataclass(slots=True)
class MemoryEntry:
    id: int
    text: str
    scope: str  # "global" or the owner's name
    type: str  # semantic | episodic | procedural
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0
    namespace: str = ""  # the memory instance (a document's memoryId), "" for the default one
    score: float | None = None  # recall's ranking, higher is better; None when listed


@dataclass(slots=True)
class RunRecord:
    run_id: str
    status: str
    version: int  # bumped by every save_run; 0 means no checkpoint yet (events only)
    snapshot: Any  # the JSON value given to save_run; None when listed or not saved yet
    agent: str | None
    session: str | None
    last_event_id: int
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class RunEvent:
    run_id: str
    id: int  # 1, 2, 3 ... per run, in commit order
    type: str
    data: Any
    created_at: float


@dataclass(slots=True)
class StoreInfo:
    url: str  # password masked
    backend: str
    schema_version: int
    latest_version: int
    counts: dict[str, int] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MessageRow:
    role: str
    tokens: int
    data: str


def _key(kind: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise StateError(f"{kind} must be a non-empty string, got {value!r}")
    return value


def search_words(query: str) -> list[str]:
    """The words of a recall query worth searching for, lower-cased, stopwords and duplicates dropped."""
    out: list[str] = []
    for w in _WORD.findall(query.lower()):
        if w not in _STOPWORDS and w not in out:
            out.append(w)
    return out


class Store(abc.ABC):
    """A state store. Open one with `chainreact.state.open_store(url)`; close it (or `async with`) after."""

    backend: ClassVar[str]

    def __init__(self, url: StoreURL):
        self.url = url
        self.embedder: Embedder | None = None  # set by open_store(embedder=...): vectors for memory

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url.masked}>"

    # ------------------------------------------------------------------ lifecycle and schema

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    async def schema_version(self) -> int: ...

    @abc.abstractmethod
    async def migrate(self) -> list[int]:
        """Apply the pending migrations; returns the versions applied (empty when up to date)."""

    @abc.abstractmethod
    async def _counts(self) -> dict[str, int]: ...

    async def info(self) -> StoreInfo:
        from .migrations import LATEST

        version = await self.schema_version()
        counts = await self._counts() if version >= LATEST else {}
        return StoreInfo(self.url.masked, self.backend, version, LATEST, counts)

    # ------------------------------------------------------------------ conversations

    async def append(self, session: str, messages: Message | Sequence[Message]) -> int:
        """Append messages to a session (created on first use), atomically and in order.

        Returns the session's sequence number of the last message appended. Concurrent appends to one
        session are serialised by the database: none is lost and each caller's messages keep their order.
        """
        _key("session", session)
        batch = [messages] if isinstance(messages, Message) else list(messages)
        rows = []
        for i, m in enumerate(batch):
            if not isinstance(m, Message):
                raise StateError(f"append to session {session!r}: item {i} is a {type(m).__name__}, "
                                 "not a chainreact.types.Message")
            rows.append(MessageRow(m.role, estimate_tokens(m), dumps(message_to_dict(m))))
        if not rows:
            return await self._last_seq(session)
        return await self._append(session, rows, time.time())

    async def history(self, session: str, *, last: int | None = None,
                      max_tokens: int | None = None) -> list[Message]:
        """The session's messages, oldest first: all, the last `last`, and/or the last within `max_tokens`
        (estimated). A window never starts with tool results whose call it cut off: those are left out,
        so the window may hold fewer messages than asked. An unknown session has no messages."""
        _key("session", session)
        for name, v in (("last", last), ("max_tokens", max_tokens)):
            if v is not None and (not isinstance(v, int) or v < 0):
                raise StateError(f"history({session!r}): {name} must be a non-negative integer, got {v!r}")
        if last == 0 or max_tokens == 0:
            return []
        rows = await self._tail(session, last, max_tokens)
        msgs = [message_from_dict(loads(r)) for r in rows]
        if last is None and max_tokens is None:
            return msgs
        return drop_orphan_results(msgs)

    @abc.abstractmethod
    async def sessions(self, *, limit: int = 100, offset: int = 0) -> list[SessionInfo]:
        """Sessions, most recently updated first."""

    @abc.abstractmethod
    async def session_info(self, session: str) -> SessionInfo | None: ...

    @abc.abstractmethod
    async def delete_session(self, session: str) -> bool:
        """Delete a session and its messages; False when there was no such session."""

    @abc.abstractmethod
    async def _append(self, session: str, rows: list[MessageRow], now: float) -> int: ...

    @abc.abstractmethod
    async def _last_seq(self, session: str) -> int: ...

    @abc.abstractmethod
    async def _tail(self, session: str, last: int | None, max_tokens: int | None) -> list[str]:
        """The stored JSON of the session's last messages, oldest first."""

    # ------------------------------------------------------------------ session owners

    async def claim_owner(self, key: str, owner: str) -> str:
        """The owner of `key` (a session, named as its wing names it): `owner` if it had none, recorded
        now, else whoever claimed it first. Atomic: of claims at once, from any process, one wins."""
        _key("owned key", key)
        _key("owner", owner)
        return await self._claim_owner(key, owner, time.time())

    async def owners(self, keys: Sequence[str]) -> dict[str, str]:
        """The owners of those of `keys` that have one."""
        return await self._owners(list(keys)) if keys else {}

    @abc.abstractmethod
    async def _claim_owner(self, key: str, owner: str, now: float) -> str: ...

    @abc.abstractmethod
    async def _owners(self, keys: list[str]) -> dict[str, str]: ...

    # ------------------------------------------------------------------ long-term memory

    async def remember(self, text: str, *, scope: str = GLOBAL, type: str = "semantic",
                       metadata: dict[str, Any] | None = None, namespace: str = "") -> MemoryEntry:
        """Store one memory. `scope` is "global" or the owner (an agent's name); `type` one of
        semantic, episodic, procedural; `namespace` the memory instance (a document's memoryId)."""
        if not isinstance(text, str) or not text.strip():
            raise StateError(f"remember: text must be a non-empty string, got {text!r}")
        _key("scope", scope)
        self._check_type(type)
        meta = dict(metadata or {})
        try:
            meta_json = dumps(meta)
        except TypeError as e:
            raise StateError(f"remember: metadata is not JSON-serialisable ({e})") from None
        entry = MemoryEntry(0, text, scope, type, meta, time.time(), namespace)
        vector, model = None, None
        if self.embedder is not None:  # before the insert: a failing endpoint stores nothing
            vector, model = pack((await self.embedder.embed([text]))[0]), self.embedder.model
        entry.id = await self._remember(entry, meta_json, vector, model)
        return entry

    async def recall(self, query: str, k: int = 5, *, scope: str | None = None, type: str | None = None,
                     namespace: str | None = "", include_global: bool = True,
                     mode: str = "text") -> list[MemoryEntry]:
        """The `k` memories that best match `query`, best first.

        `mode`: "text" (full-text ranking, the default), "vector" (cosine similarity of embeddings;
        needs an embedder) or "hybrid" (both, reciprocal-rank fused). `scope=None` searches every
        scope; an owner's scope also searches "global" unless `include_global=False`. `namespace=None`
        searches every namespace. A query with no searchable words returns the most recent memories.
        """
        if not isinstance(k, int) or k < 1:
            raise StateError(f"recall: k must be a positive integer, got {k!r}")
        if type is not None:
            self._check_type(type)
        if mode not in ("text", "vector", "hybrid"):
            raise StateError(f"recall: mode {mode!r} is not one of text, vector, hybrid")
        scopes: list[str] | None = None
        if scope is not None:
            scopes = [scope] + ([GLOBAL] if include_global and scope != GLOBAL else [])
        words = search_words(query or "")
        if mode == "text" or not words:
            return await self._recall(words, k, scopes, type, namespace)
        if self.embedder is None:
            raise StateError(f"recall(mode={mode!r}) needs an embeddings endpoint: open the store with "
                             "open_store(url, embedder=OpenAIEmbedder(url, model))")
        qv = (await self.embedder.embed([query]))[0]
        candidates = await self._vector_candidates(scopes, type, namespace, self.embedder.model)
        by_vector = []
        for entry, score in rank(qv, candidates, k if mode == "vector" else 3 * k):
            entry.score = score
            by_vector.append(entry)
        if mode == "vector":
            return by_vector
        by_text = await self._recall(words, 3 * k, scopes, type, namespace)
        out = []
        for entry, score in fuse(by_text, by_vector, k=k, key=lambda e: e.id):
            entry.score = score
            out.append(entry)
        return out

    async def embed_missing(self, *, batch: int = 64) -> int:
        """Give every memory without a vector of the current embedder's model one; returns how many."""
        if self.embedder is None:
            raise StateError("embed_missing needs an embeddings endpoint: open_store(url, embedder=...)")
        done = 0
        while True:
            rows = await self._missing_vectors(self.embedder.model, batch)
            if not rows:
                return done
            vectors = await self.embedder.embed([text for _, text in rows])
            model = self.embedder.model
            await self._put_vectors([(mid, model, pack(v))
                                     for (mid, _), v in zip(rows, vectors, strict=True)])
            done += len(rows)

    async def forget(self, memory_id: int | None = None, *, scope: str | None = None,
                     namespace: str | None = None) -> int:
        """Delete one memory by id, or every memory of a scope (and namespace). Returns how many went."""
        if memory_id is None and scope is None:
            raise StateError("forget: give a memory id or a scope (refusing to forget everything)")
        return await self._forget(memory_id, scope, namespace)

    @abc.abstractmethod
    async def memories(self, *, scope: str | None = None, type: str | None = None,
                       namespace: str | None = None, limit: int = 100) -> list[MemoryEntry]:
        """Memories, newest first, without ranking."""

    @staticmethod
    def _check_type(type: str) -> None:
        if type not in MEMORY_TYPES:
            raise StateError(f"memory type {type!r} is not one of {', '.join(MEMORY_TYPES)}")

    @abc.abstractmethod
    async def _remember(self, entry: MemoryEntry, metadata_json: str, vector: bytes | None,
                        model: str | None) -> int: ...

    @abc.abstractmethod
    async def _vector_candidates(self, scopes: list[str] | None, type: str | None, namespace: str | None,
                                 model: str) -> list[tuple[MemoryEntry, bytes]]: ...

    @abc.abstractmethod
    async def _missing_vectors(self, model: str, limit: int) -> list[tuple[int, str]]: ...

    @abc.abstractmethod
    async def _put_vectors(self, rows: list[tuple[int, str, bytes]]) -> None: ...

    @abc.abstractmethod
    async def _recall(self, words: list[str], k: int, scopes: list[str] | None, type: str | None,
                      namespace: str | None) -> list[MemoryEntry]: ...

    @abc.abstractmethod
    async def _forget(self, memory_id: int | None, scope: str | None, namespace: str | None) -> int: ...

    # ------------------------------------------------------------------ runs: checkpoints and events

    async def save_run(self, run_id: str, snapshot: Any, *, status: str = "running", agent: str | None = None,
                       session: str | None = None, expect_version: int | None = None) -> int:
        """Save a run's checkpoint in one statement (a reader sees the old one or the new one, never half).

        Returns the new version. With `expect_version`, the save happens only if the stored version is
        that one (0: no checkpoint yet), else RunConflictError: two resumers cannot both go on.
        """
        _key("run id", run_id)
        if status not in RUN_STATUSES:
            raise StateError(f"run {run_id!r}: status {status!r} is not one of {', '.join(RUN_STATUSES)}")
        try:
            data = dumps(snapshot)
        except TypeError as e:
            raise StateError(f"run {run_id!r}: the snapshot is not JSON-serialisable ({e}); nothing saved") \
                from None
        return await self._save_run(run_id, data, status, agent, session, expect_version, time.time())

    async def run_agent(self, agent: Agent, input: Any = None, *, session: str | None = None,
                        **kwargs: Any) -> RunResult:
        """`agent.run(input)` checkpointed here (state/runs.py `run_with_store`)."""
        from .runs import run_with_store

        return await run_with_store(agent, self, input, session=session, **kwargs)

    async def resume_run(self, agent: Agent, run_id: str, answers: dict[str, Any] | None = None,
                         **kwargs: Any) -> RunResult:
        """Go on with a saved run (state/runs.py `resume_with_store`); `Agent.resume(..., store=)`."""
        from .runs import resume_with_store

        return await resume_with_store(agent, self, run_id, answers, **kwargs)

    async def load_run(self, run_id: str) -> RunRecord:
        """The run's last checkpoint; RunNotFoundError when the store has no such run."""
        rec = await self.get_run(run_id)
        if rec is None:
            raise RunNotFoundError(f"no run {run_id!r} in the state store {self.url.masked}")
        return rec

    @abc.abstractmethod
    async def get_run(self, run_id: str) -> RunRecord | None: ...

    @abc.abstractmethod
    async def runs(self, *, status: str | None = None, limit: int = 50,
                   prefix: str | None = None) -> list[RunRecord]:
        """Runs, most recently updated first, without their snapshots; with `prefix`, only those whose id
        starts with it (e.g. a flow's sessions: `flow:<flow id>:`, see Flow.sessions)."""

    @abc.abstractmethod
    async def delete_run(self, run_id: str) -> bool:
        """Delete a run's checkpoint and events; False when there was no such run."""

    async def append_event(self, run_id: str, type: str, data: Any = None) -> int:
        """Append one event to the run's log; returns its id (1, 2, 3 ... per run)."""
        return (await self.append_events(run_id, [(type, data)]))[-1]

    async def append_events(self, run_id: str, events: Sequence[tuple[str, Any]]) -> list[int]:
        """Append events atomically; ids are consecutive and committed in order, so a reader that has
        seen id N and asks for events after N misses none."""
        _key("run id", run_id)
        rows = []
        for i, (type, data) in enumerate(events):
            _key(f"event {i} type", type)
            try:
                rows.append((type, dumps(data)))
            except TypeError as e:
                raise StateError(f"run {run_id!r}: event {i} ({type}) is not JSON-serialisable ({e}); "
                                 "nothing appended") from None
        if not rows:
            return []
        last = await self._append_events(run_id, rows, time.time())
        return list(range(last - len(rows) + 1, last + 1))

    async def events(self, run_id: str, *, after: int = 0, limit: int | None = None) -> list[RunEvent]:
        """The run's events with id > `after`, in id order."""
        _key("run id", run_id)
        return await self._events(run_id, after, limit)

    async def follow_events(self, run_id: str, *, after: int = 0, poll: float = 0.1,
                            until_done: bool = True) -> AsyncIterator[RunEvent]:
        """Yield the run's events after `after` as they are appended (polling every `poll` s); with
        `until_done`, stop once the run's status is done, failed or cancelled and no event is left.
        For SSE: pass the client's Last-Event-ID as `after`."""
        import asyncio

        while True:
            batch = await self.events(run_id, after=after, limit=500)
            for ev in batch:
                after = ev.id
                yield ev
            if batch:
                continue
            if until_done:
                rec = await self.get_run(run_id)
                if rec is not None and rec.status in ("done", "failed", "cancelled") \
                        and rec.last_event_id <= after:
                    return
            await asyncio.sleep(poll)

    @abc.abstractmethod
    async def _save_run(self, run_id: str, data: str, status: str, agent: str | None, session: str | None,
                        expect_version: int | None, now: float) -> int: ...

    @abc.abstractmethod
    async def _append_events(self, run_id: str, rows: list[tuple[str, str]], now: float) -> int: ...

    @abc.abstractmethod
    async def _events(self, run_id: str, after: int, limit: int | None) -> list[RunEvent]: ...
