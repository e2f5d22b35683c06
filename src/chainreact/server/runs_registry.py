"""The runs a server process is driving: started, followed, cancelled, resumed, and stopped at shutdown.

Every agent run the server starts (runs API or chat completions) is an `AgentRun` registered here while it
lives. A persisted run is checkpointed in the state store (state/runs.py's StoreCheckpointer) and its
events are appended to the store's event log in batches (one write per batch, not per token), so
`GET /api/v1/runs/{id}/events` can replay and live-tail it with gap-free ids. In-process listeners (the
chat completions routes) get the events directly, without the store.

When a run ends: its last events are written first, then its new messages are appended to its session,
then its final status (done, failed, cancelled, or left interrupted) is saved; a follower that sees the
final status has therefore seen every event, and a client's next request sees the session. A run that
is cancelled (by a client, a disconnect or shutdown) ends with its history repaired (every tool call
answered) and saved like any other end.

A chat completion run that is not kept (no `--state`) is still saved if it stops to ask (interrupted), so
it can be resumed through the runs API. With the private in-memory store (no `--state`), the runs that
stopped (done, failed, cancelled, interrupted) are pruned: each is deleted `ttl` seconds after it stopped,
and the oldest go first past `max_runs` (`Pruning`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..agent.recording import IO_EVENT
from ..types import Event
from .run_events import EventWriter, fan_out_event
from .run_handle import RunHandle

if TYPE_CHECKING:
    from ..agent import Agent, Checkpoint, RunOptions, RunResult
    from ..agent.interrupt import CheckpointFn
    from ..chains import RuleEngine
    from ..state import RunRecord, Store
    from ..state.runs import StoreCheckpointer
    from .runs_chains import ChainResult

log = logging.getLogger("chainreact.server.runs")

RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
OPTIONS = "options"  # the checkpoint `extra` key of a run's RunOptions
FINAL_STATUSES = ("done", "failed", "cancelled")
SHUTDOWN_CANCEL_WAIT = 10.0  # seconds a cancelled run gets, after the grace period, to save its state


SaveEnd = Callable[[Any, "BaseException | None"], Awaitable[None]]  # (result, error) -> saved


def agent_session(target: str, key: str | None) -> str | None:
    """The store key of agent `target`'s conversation named `key`. One per agent: OpenAI clients put their
    end-user's id in `user`, so one user talking to two agents of a server must not hand one agent the
    other's answers as its own (chains' nodes are kept apart the same way: chains/sessions.py)."""
    return None if key is None else f"agent:{target}:{key}"


def shown_session(target: str | None, stored: str | None) -> str | None:
    """The session key a client gave, from its store key (agent_session); other keys as they are."""
    prefix = f"agent:{target}:"
    return stored[len(prefix):] if stored is not None and stored.startswith(prefix) else stored


class RunDispatcher(Protocol):
    """Runs the registry hands elsewhere instead of running them in process (`serve --temporal`: the
    TemporalDispatcher of server/durable_dispatch.py, for agents and chains; its flows go through
    flows_runtime.DurableServedFlow)."""

    def serves(self, kind: str, target: str) -> bool:
        """Whether a run of this `kind` (agent, chain) and catalog id is dispatched."""

    def start(self, registry: RunRegistry, kind: str, target: str, obj: Agent | RuleEngine, data: Any, *,
              session: str | None, detached: bool, stream: bool, listen: bool) -> LiveRun:
        """Start it and return the LiveRun (made with `registry.launch`), at once: the work is in its task."""

    def owns(self, record: RunRecord) -> bool:
        """Whether a stored run record (state store) is one of this dispatcher's runs."""

    async def resume(self, registry: RunRegistry, record: RunRecord, target: str, obj: Agent,
                     answers: dict[str, Any], *, detached: bool, listen: bool = False) -> LiveRun:
        """Answer an interrupted run of ours and follow it again (`listen`: as `start`'s); StateError for
        refused answers."""

    async def cancel(self, run_id: str, mode: str, timeout: float | None) -> None:
        """Cancel a run of ours that this process is not following (ValueError: unknown mode)."""

    async def amend_view(self, view: dict[str, Any], record: RunRecord,
                         live: LiveRun | None) -> dict[str, Any]:
        """GET /api/v1/runs/{id} for a run of ours: status and result where the record lacks them."""

    async def run(self, kind: str, obj: Agent, data: Any) -> RunResult:
        """Run to the end (MCP tool calls): the RunResult."""


class RegistryClosed(Exception):
    """The server is shutting down: no new run is started."""


@dataclass(frozen=True)
class Pruning:
    """How long the runs of a private store are kept once they stopped, and how many at most."""

    ttl: float = 3600.0  # seconds after a run stopped
    max_runs: int = 1000  # stopped runs kept; the oldest are deleted first

    def __post_init__(self) -> None:
        if not self.ttl > 0 or self.max_runs < 0:
            raise ValueError(f"runs pruning: ttl must be > 0 seconds and max_runs >= 0, got {self.ttl}, "
                             f"{self.max_runs}")


class _KeepInterrupted:
    """The checkpointer of a run that is not kept: saves only its `interrupted` safe point, so a run that
    stops to ask can be resumed (and costs nothing otherwise)."""

    def __init__(self, inner: CheckpointFn):
        self.inner = inner

    async def __call__(self, cp: Checkpoint) -> None:
        if cp.point == "interrupted":
            await self.inner(cp)


@dataclass(eq=False)
class LiveRun:
    run_id: str
    target: str  # the catalog id of the agent or chain
    session: str | None
    detached: bool
    persist: bool
    handle: RunHandle
    kind: str = "agent"  # agent | chain
    log_events: bool = True  # (when persisted) events in the store's event log
    last_id: int = 0  # the last event id written to the store
    status: str = "running"
    result: RunResult | ChainResult | None = None  # once ended
    error: str | None = None
    task: asyncio.Task[None] | None = None
    created_at: float = field(default_factory=time.time)
    listeners: list[asyncio.Queue[Event | None]] = field(default_factory=list)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def notify(self) -> None:
        # Followers wait on the current event; a fresh one replaces it for the next change.
        self.wake.set()
        self.wake = asyncio.Event()


class RunRegistry:
    """`store`: the state store (opened by the runs routes at startup). `sessions`: whether chat `user`
    keys and run `session` fields read and write conversation history (only with a store the operator
    chose: `--state` / $CHAINREACT_STATE). `persist_chats`: chat completion runs are checkpointed too.
    `grace`: seconds in-flight runs get to finish at shutdown before they are cancelled. `prune`: delete
    stopped runs (a private store)."""

    def __init__(self, *, grace: float = 30.0, sessions: bool = False, persist_chats: bool = False,
                 prune: Pruning | None = None):
        self.store: Store | None = None
        self.grace = grace
        self.sessions = sessions
        self.persist_chats = persist_chats
        self.prune = prune  # None: runs are kept (the operator's store)
        self.stopped: OrderedDict[str, float] = OrderedDict()  # run id -> when it stopped (with `prune`)
        self.live: dict[str, LiveRun] = {}
        self.closing = False
        self.shutdown_started: float | None = None
        # Runs handed elsewhere instead of run in process (`serve --temporal`: server/durable_dispatch.py).
        self.dispatcher: RunDispatcher | None = None

    @property
    def db(self) -> Store:
        """The state store, once open (the runs routes open it when the app starts)."""
        if self.store is None:
            from ..state import StateError

            raise StateError("the server's state store is not open yet: it opens when the app starts")
        return self.store

    # ------------------------------------------------------------------ starting

    def start_agent(self, agent: Agent, target: str, data: Any, *, session: str | None = None,
                    detached: bool = False, persist: bool = True, stream: bool = True,
                    listen: bool = False, events: bool = True, resumable: bool = False,
                    keep: Callable[[Event], bool] | None = None,
                    options: RunOptions | None = None) -> LiveRun:
        """Start `agent` on `data` in the background; `listen` subscribes a queue (live.listeners[0])
        before the first event can be produced, which gets the events `keep` accepts (default: all; a
        listener that wakes only for what it uses costs less). `persist`: checkpoints and final status
        in the store; `events` (with `persist`): its events in the store's event log too. `resumable`
        (without `persist`): saved if it stops to ask, so it can be resumed. `options`: RunOptions (not
        for dispatched runs: the routes refuse them), kept in the checkpoints for the run's resumes."""
        from ..state.runs import StoreCheckpointer, recording

        if self.closing:
            raise RegistryClosed
        if self.dispatcher is not None and self.dispatcher.serves("agent", target):
            return self.dispatcher.start(self, "agent", target, agent, data, session=session,
                                         detached=detached, stream=stream, listen=listen)
        extra = {"target": target} if options is None else {"target": target, OPTIONS: options.to_dict()}
        ckpt = StoreCheckpointer(self.store, session=session, extra=extra) if persist or resumable else None
        with recording(ckpt if persist else None, agent, data):  # kept with the run: `runs export`
            handle = agent.start(data, stream=stream, options=options,
                                 checkpoint=ckpt if persist or ckpt is None else _KeepInterrupted(ckpt))
        live = LiveRun(handle.run_id, target, session, detached, persist, handle, log_events=events)
        return self._launch(live, functools.partial(self._save_end, live, agent, ckpt), listen, keep)

    def start_chain(self, engine: RuleEngine, chain_id: str, body: dict[str, Any], *, detached: bool = False,
                    session: str | None = None, metadata: dict[str, str] | None = None) -> LiveRun:
        """Start rule chain `chain_id` on an OpenAI chat request `body` (message `metadata`: its session)
        in the background (runs_chains.py); its events are logged and its end saved like an agent run's
        (no checkpoints: not resumable). Its agent nodes keep their session themselves."""
        from .runs_chains import ChainRun

        if self.closing:
            raise RegistryClosed
        if self.dispatcher is not None and self.dispatcher.serves("chain", chain_id):
            # A durable chain run (serve --temporal): the runs routes refuse a session for it.
            return self.dispatcher.start(self, "chain", chain_id, engine, body, session=None,
                                         detached=detached, stream=True, listen=False)
        handle = ChainRun(engine, chain_id, body, metadata)
        live = LiveRun(handle.run_id, chain_id, session, detached, True, handle, kind="chain")
        return self._launch(live, functools.partial(self.save_chain_end, live), False)

    async def resume_agent(self, agent: Agent, target: str, run_id: str, answers: dict[str, Any], *,
                           detached: bool = False, listen: bool = False, events: bool = True,
                           keep: Callable[[Event], bool] | None = None,
                           options: RunOptions | None = None) -> LiveRun:
        """Go on with an interrupted run (or one whose process died) in the background. Raises the
        store's errors (StateError for refused answers, RunConflictError when claimed elsewhere).
        Arguments as for `start_agent`; without `options` the run keeps those it was started with."""
        from ..agent import RunOptions
        from ..state import RunConflictError
        from ..state.runs import claim_resume

        if self.closing:
            raise RegistryClosed
        if run_id in self.live:
            raise RunConflictError(f"run {run_id!r} is running in this server: cancel it or wait for it")
        self.stopped.pop(run_id, None)  # running again: not pruned while it runs
        before = await self.db.get_run(run_id)
        if self.dispatcher is not None and before is not None and self.dispatcher.owns(before):
            return await self.dispatcher.resume(self, before, target, agent, answers, detached=detached,
                                                listen=listen)
        resume, ckpt = await claim_resume(agent, self.store, run_id, answers)
        if options is None:
            options = RunOptions.from_dict(ckpt.extra.get(OPTIONS))
        else:
            ckpt.extra[OPTIONS] = options.to_dict()
        handle = agent.start(resume=resume, checkpoint=ckpt, stream=True, options=options)
        live = LiveRun(run_id, target, ckpt.session, detached, True, handle, log_events=events,
                       last_id=before.last_event_id if before is not None else 0)
        return self._launch(live, functools.partial(self._save_end, live, agent, ckpt), listen, keep)

    def launch(self, live: LiveRun, save_end: SaveEnd, listen: bool = False) -> LiveRun:
        """Drive a run made elsewhere (a dispatcher's) like the registry's own: registered, its events to
        its listeners, `save_end(result, error)` at its end."""
        return self._launch(live, save_end, listen)

    def _launch(self, live: LiveRun, save_end: SaveEnd, listen: bool,
                keep: Callable[[Event], bool] | None = None) -> LiveRun:
        if listen:
            live.listeners.append(asyncio.Queue())
        self.live[live.run_id] = live
        writer = EventWriter(self.db, live) if live.persist and live.log_events else None
        fan_out = functools.partial(fan_out_event, live.listeners, writer, keep)
        forward = getattr(live.handle, "forward", None)
        if forward is not None:
            # An AgentRun hands its events over in its own task: no task switch per event on their way
            # to the listeners. Set now, before the run's task first runs.
            forward(fan_out)
        live.task = asyncio.ensure_future(self._drive(live, save_end, writer,
                                                      None if forward is not None else fan_out))
        return live

    async def _drive(self, live: LiveRun, save_end: SaveEnd, writer: EventWriter | None,
                     fan_out: Callable[[Event | None], None] | None) -> None:
        result, error = None, None
        try:
            if fan_out is not None:  # a handle that is iterated (a ChainRun)
                async for ev in live.handle:
                    fan_out(ev)
            result = await live.handle.result()
        except Exception as e:
            error = e
        try:
            if writer is not None:
                await writer.close()
            if live.session and self.sessions and live.kind == "agent" and result is not None \
                    and result.stop_reason != "interrupted":
                from ..state.runs import session_messages

                await self.db.append(live.session, session_messages(result.messages))
            if live.persist:  # last: a follower that sees the final status has everything else
                await save_end(result, error)
        except Exception:
            log.exception("run %s: could not save its end", live.run_id)
        finally:
            live.result = result
            live.error = None if error is None else (str(error) or type(error).__name__)
            live.status = "failed" if result is None else \
                {"cancelled": "cancelled", "interrupted": "interrupted"}.get(result.stop_reason, "done")
            self.live.pop(live.run_id, None)
            for q in live.listeners:
                q.put_nowait(None)
            live.ended.set()
            live.notify()
        if self.prune is not None and (live.persist or live.status == "interrupted"):
            self.stopped[live.run_id] = time.monotonic()
            self.stopped.move_to_end(live.run_id)
            try:
                await self.prune_stopped()
            except Exception:
                log.exception("pruning stopped runs failed")

    async def save_chain_end(self, live: LiveRun, result: ChainResult | None,
                             error: BaseException | None) -> None:
        """The end of a run without checkpoints (a chain run, a flow turn: its kind is `live.kind`)."""
        from ..state.checkpoint import RunSnapshot, save_snapshot

        extra: dict[str, Any] = {"target": live.target, "kind": live.kind,
                                 "io": getattr(live.handle, "io", [])}
        if result is not None:
            extra.update(content=result.content, stop_reason=result.stop_reason)
            status = "cancelled" if result.stop_reason == "cancelled" else "done"
        else:
            extra["error"] = str(error) or type(error).__name__
            status = "failed"
        await save_snapshot(self.store, RunSnapshot(live.run_id, status, session=live.session, extra=extra))

    async def _save_end(self, live: LiveRun, agent: Agent, ckpt: StoreCheckpointer | None,
                        result: RunResult | None, error: BaseException | None) -> None:
        from ..state.checkpoint import RunSnapshot, save_snapshot

        assert ckpt is not None  # a persisted run has a checkpointer (start_agent, resume_agent)
        if result is not None:
            await ckpt.finish(result, live.run_id, agent.name)
            return
        await ckpt.finish(None, live.run_id, agent.name, error)
        if ckpt.last is None:  # failed before its first safe point: still a final status for followers
            snap = RunSnapshot(live.run_id, "failed", agent=agent.name, session=live.session,
                               extra={**ckpt.extra, "error": f"{type(error).__name__}: {error}"})
            await save_snapshot(self.store, snap, expect_version=ckpt.version)

    # ------------------------------------------------------------------ pruning

    async def prune_stopped(self, now: float | None = None) -> int:
        """Delete the stopped runs past the TTL, then the oldest past the maximum count; how many."""
        if self.prune is None:
            return 0
        now = time.monotonic() if now is None else now
        doomed: list[str] = []
        for run_id, stopped_at in self.stopped.items():  # oldest first
            if now - stopped_at < self.prune.ttl and len(self.stopped) - len(doomed) <= self.prune.max_runs:
                break
            doomed.append(run_id)
        for run_id in doomed:
            del self.stopped[run_id]
            await self.db.delete_run(run_id)
        return len(doomed)

    async def prune_forever(self) -> None:
        """Prune now and then, so runs expire also while no other run ends (a background task)."""
        assert self.prune is not None
        while True:
            await asyncio.sleep(min(max(self.prune.ttl / 4, 0.05), 60.0))
            try:
                await self.prune_stopped()
            except Exception:
                log.exception("pruning stopped runs failed")

    # ------------------------------------------------------------------ following, cancelling

    async def listen(self, live: LiveRun) -> AsyncIterator[Event]:
        """The run's events as they happen, for the listener subscribed at start. Leaving early (a client
        went away) cancels the run unless it is detached, and waits until its end is saved."""
        q = live.listeners[0]
        try:
            while (ev := await q.get()) is not None:
                yield ev
        finally:
            await self.release(live)

    async def listen_batches(self, live: LiveRun, most: int = 256) -> AsyncGenerator[list[Event], None]:
        """`listen`, with the events that are ready together in one list (at most `most`), so a consumer
        that writes them to a socket makes one write per burst of the model's stream."""
        q = live.listeners[0]
        try:
            while True:
                batch = [await q.get()]
                while len(batch) < most and not q.empty():
                    batch.append(q.get_nowait())
                ended = batch[-1] is None
                events = [ev for ev in batch if ev is not None]
                if events:
                    yield events
                if ended:
                    return
        finally:
            await self.release(live)

    async def release(self, live: LiveRun) -> None:
        """The client attached to `live` is gone: cancel the run (unless detached) and wait for its end."""
        if live.detached or live.ended.is_set() or live.task is None:
            return
        live.handle.cancel("immediate")
        try:
            await asyncio.shield(live.task)
        except asyncio.CancelledError:
            pass  # cancelled again (forced shutdown): the run's task still saves its end on its own

    def cancel(self, run_id: str, mode: str, timeout: float | None = None) -> LiveRun | None:
        """Ask a live run to stop (modes of chainreact.agent: immediate, after_model, after_tools,
        combined with |); None when it is not running here. ValueError for an unknown mode."""
        live = self.live.get(run_id)
        if live is not None:
            live.handle.cancel(mode, timeout=timeout)
        return live

    async def follow(self, run_id: str, after: int = 0) -> AsyncIterator[Any]:
        """The run's stored events with id > `after`, then the new ones as they are written, until the run
        stops (done, failed, cancelled, interrupted) and every event of it was given."""
        poll = 0.05
        while True:
            live = self.live.get(run_id)
            wake = live.wake if live is not None else None
            batch = await self.db.events(run_id, after=after, limit=500)
            for ev in batch:
                after = ev.id
                if ev.type != IO_EVENT:  # a durable run's recording (`runs export`), not an event of it
                    yield ev
            if batch:
                continue
            if wake is not None:
                try:
                    await asyncio.wait_for(wake.wait(), 1.0)
                except TimeoutError:
                    pass
                continue
            rec = await self.db.get_run(run_id)
            if rec is None or (rec.status != "running" and rec.last_event_id <= after):
                return
            # running in the store but not here: another process (or one that died); poll
            await asyncio.sleep(poll)
            poll = min(poll * 2, 1.0)

    async def view(self, run_id: str) -> dict[str, Any] | None:
        """What GET /api/v1/runs/{id} answers: status, result, error, questions (None: no such run)."""
        live = self.live.get(run_id)
        rec = await self.db.get_run(run_id) if self.store is not None else None
        if rec is None and live is None:
            return None
        snap = (rec.snapshot if rec is not None else None) or {}
        extra = snap.get("extra") or {}
        status = rec.status if rec is not None else "running"
        if live is not None and status != "interrupted":
            status = "running"
        kind = extra.get("kind") or (live.kind if live else "agent")
        target = extra.get("target") or (live.target if live else None)
        stored_session = (rec.session if rec else None) or (live.session if live else None)
        out: dict[str, Any] = {
            "id": run_id, "object": "run", "kind": kind, "target": target,
            "agent": target if kind == "agent" else None, "chain": target if kind == "chain" else None,
            "status": status,
            "session": shown_session(target, stored_session),
            "detached": live.detached if live else None, "live": live is not None,
            "result": None, "error": extra.get("error"), "questions": snap.get("questions") or [],
            "last_event_id": max(rec.last_event_id if rec else 0, live.last_id if live else 0),
            "created_at": rec.created_at if rec else (live.created_at if live else None),
            "updated_at": rec.updated_at if rec else None,
        }
        if status in ("done", "cancelled") and "content" in extra:
            out["result"] = {"content": extra.get("content"), "stop_reason": extra.get("stop_reason")}
        if self.dispatcher is not None and rec is not None and self.dispatcher.owns(rec):
            out = await self.dispatcher.amend_view(out, rec, live)
        return out

    # ------------------------------------------------------------------ shutdown

    def begin_shutdown(self) -> None:
        """Refuse new runs from now on; the grace period starts (safe to call from a signal handler)."""
        self.closing = True
        if self.shutdown_started is None:
            self.shutdown_started = time.monotonic()

    async def shutdown(self) -> None:
        """Let live runs finish until the grace period is over, then cancel the rest and wait for them to
        save their (repaired) history and cancelled status."""
        self.begin_shutdown()
        assert self.shutdown_started is not None
        tasks = [r.task for r in self.live.values() if r.task is not None]
        left = self.shutdown_started + self.grace - time.monotonic()
        if tasks and left > 0:
            await asyncio.wait(tasks, timeout=left)
        remaining = list(self.live.values())
        for r in remaining:
            durable = self.dispatcher is not None and self.dispatcher.serves(r.kind, r.target)
            log.warning("run %s of %s: %s at shutdown (grace period of %ss over)", r.run_id, r.target,
                        "left to the workers" if durable else "cancelled", self.grace)
            r.handle.cancel("immediate")  # a durable run's handle stops following it instead
        tasks = [r.task for r in remaining if r.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=SHUTDOWN_CANCEL_WAIT)
