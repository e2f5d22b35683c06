"""`chainreact serve --temporal ADDRESS`: the server's agent runs dispatched to Temporal workers.

The server keeps its routes, its run registry and its state store; what changes is who runs an agent.
With a dispatcher installed (`RunRegistry.dispatcher`, also at `ServerContext.dispatch`), the
registry asks it `serves(kind, target)` before running anything in process, and a run it serves becomes a
workflow on the task queue (chainreact.durable), executed by `chainreact worker` processes:

    start (runs API, chat completions)   DurableAgent.start(...); the record names its catalog target
    events (SSE, chat streaming)         read from the state store's event log, where the workers write
                                         them (workers and server share `--state`); followers are woken
                                         as new events arrive
    cancel (three modes)                 DurableRun.cancel: workflow cancellation or the `cancel` signal;
                                         also for runs this process is not following (another server
                                         started them, or this one restarted)
    resume of an interrupted run         the workflow's `answer` update (checked there first)
    GET /api/v1/runs/{id}                the store's record; while it says running and no one here
                                         follows the run, the workflow's own status (describe)
    MCP tool calls                       DurableAgent.run

A durable run is not this process's to lose: once shutdown has begun (after the grace period, and for
clients that go away meanwhile) the server stops following such runs instead of cancelling them; they end
in the workers. Outside shutdown, a client leaving a run it owns cancels it, as in process.

Rule chains (kind `chain`): the registry's ChainRun, the chat routes, RuleGo's execute/notify and MCP run
the chain as a DurableChain workflow (start_chain; frames.chain_frames(durable=...)); streamed, its Stream
frames are read from the store as the workers log them. A ChainRun (runs API) is recorded before its
workflow starts (`owns`: any server can cancel it, immediately); its end is saved as the registry's ordinary
chain record, or, left at shutdown, by the workflow's last activity (durable/chain_end.py).
Flows (kind `flow`): FlowRuntime hands the routes a flows_runtime.DurableServedFlow, whose
turns are DurableFlow workflows (`flow`); a client leaving a turn cancels it (not at shutdown).
The followed agent run itself: durable_runs.DurableAgentRun.

The registry's hook (runs of kind agent and chain): a dispatcher whose `serves(kind, id)` is true gets
`start(registry, kind, ...)` from the registry, returns a LiveRun launched with `registry.launch`, and marks
its stored runs so that `owns(record)` recognises them (the protocol: runs_registry.RunDispatcher).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..errors import ConfigError
from ..types import ErrorEvent
from .durable_runs import FORMAT, DurableAgentRun, LeftRunning
from .runs_registry import LiveRun, RunRegistry

if TYPE_CHECKING:
    from temporalio.client import Client

    from ..agent import Agent
    from ..agent.result import RunResult
    from ..chains import RuleEngine, RuleMsg
    from ..durable import DurableAgent, DurableChain, DurableChainRun, DurableFlow, DurableOptions
    from ..state import RunRecord, Store
    from .catalog import Catalog
    from .config import ServerConfig
    from .runs_chains import ChainResult

log = logging.getLogger("chainreact.server.durable")

DESCRIBE_TIMEOUT = 5.0


def install(config: ServerConfig, catalog: Catalog, registry: RunRegistry,
            spawn: Callable[[Any], Any]) -> TemporalDispatcher | None:
    """The Temporal dispatcher of `registry` when the app was made with `temporal=ADDRESS` (with
    `task_queue`, `namespace`, `heartbeat_timeout`, and `state`, which it needs), else None. The caller
    connects it at startup (`connect`)."""
    from .config import DEFAULT_TASK_QUEUE

    address = config.temporal
    if not address:
        return None
    state = config.state
    if not state or ":memory:" in str(state):
        raise ConfigError("--temporal needs --state URL: the workers write the runs' events to that store "
                          "and the server reads them there (give the workers the same --state)")
    d = TemporalDispatcher(catalog, str(address), str(config.task_queue or DEFAULT_TASK_QUEUE),
                           namespace=str(config.namespace or "default"), spawn=spawn,
                           heartbeat_timeout=config.heartbeat_timeout)
    d.registry = registry
    registry.dispatcher = d
    return d


def new_run_id(name: str) -> str:
    return f"{re.sub(r'[^A-Za-z0-9_-]', '_', name)[:40]}-{secrets.token_hex(8)}"


class TemporalDispatcher:
    """Agent runs, rule chain runs and flow turns as workflows on `task_queue` at `address` (module doc)."""

    kinds = frozenset({"agent", "chain", "flow"})

    def __init__(self, catalog: Catalog, address: str, task_queue: str, *, namespace: str = "default",
                 spawn: Callable[[Any], Any] | None = None, heartbeat_timeout: float | None = None):
        self.catalog = catalog
        self.heartbeat_timeout = heartbeat_timeout
        self.address = address
        self.task_queue = task_queue
        self.namespace = namespace
        self.client: Client | None = None
        self.registry: RunRegistry | None = None
        self.spawn = spawn or asyncio.ensure_future

    async def connect(self) -> None:
        from ..durable import connect

        try:
            self.client = await connect(self.address, namespace=self.namespace)
        except Exception as e:
            raise ConfigError(f"--temporal {self.address}: cannot reach the Temporal server ({e})") from e

    @property
    def connected(self) -> Client:
        """The Temporal client (connect() made it when the app started)."""
        if self.client is None:
            raise ConfigError(f"--temporal {self.address}: not connected to the Temporal server")
        return self.client

    def _options(self) -> DurableOptions:
        from ..durable import DurableOptions

        return DurableOptions() if self.heartbeat_timeout is None else \
            DurableOptions(heartbeat_timeout=float(self.heartbeat_timeout))

    def agent(self, name: str) -> DurableAgent:
        from ..durable import DurableAgent

        return DurableAgent(name, client=self.connected, task_queue=self.task_queue, namespace=self.namespace,
                            options=self._options())

    @property
    def store(self) -> Store:
        """The registry's state store (opened at startup), which the workers write to."""
        if self.registry is None:
            raise ConfigError("the Temporal dispatcher has no run registry: install() gives it one")
        return self.registry.db

    @property
    def closing(self) -> bool:
        return self.registry is not None and self.registry.closing

    # -- the protocol ---------------------------------------------------------------------------------

    def serves(self, kind: str, target: str) -> bool:
        return kind in self.kinds

    def chain(self, chain_id: str) -> DurableChain:
        from ..durable import DurableChain

        return DurableChain(chain_id, client=self.connected, task_queue=self.task_queue,
                            namespace=self.namespace, options=self._options())

    def flow(self, flow_id: str) -> DurableFlow:
        """A DurableFlow: the turns of served flow `flow_id` (flows_runtime.DurableServedFlow)."""
        from ..durable import DurableFlow

        return DurableFlow(flow_id, client=self.connected, task_queue=self.task_queue,
                           namespace=self.namespace, options=self._options())

    async def start_chain(self, chain_id: str, msg: RuleMsg, *, run_id: str | None = None,
                          stream: bool = False, trace: bool = False) -> DurableChainRun:
        """A DurableChainRun of `msg` through chain `chain_id` (frames.chain_frames, the RuleGo routes);
        `stream`: its frames logged live, in the store. `run_id`: a registry run's (runs_chains.ChainRun),
        recorded first as a durable chain run, so that any server can cancel it (`owns`, `cancel`).
        `trace` (with `stream`): its timeline logged too (chains/trace.py)."""
        if run_id is not None:
            await self.store.save_run(run_id, {"format": FORMAT, "workflow_id": run_id,
                                               "extra": {"target": chain_id, "kind": "chain"}},
                                      status="running")
        return await self.chain(chain_id).start(msg, run_id=run_id, stream=stream, record=run_id is not None,
                                                trace=trace and stream)

    def start(self, registry: RunRegistry, kind: str, target: str, obj: Agent | RuleEngine, data: Any, *,
              session: str | None, detached: bool, stream: bool, listen: bool) -> LiveRun:
        if kind == "chain":
            # The registry's chain run (runs_chains.ChainRun: its events logged by this server, its end
            # saved as an in-process chain run's), with the chain a workflow whose id is the run id.
            # While it runs its record is one of `owns`'s (start_chain): any server may cancel it.
            from .runs_chains import ChainRun

            chain_run = ChainRun(cast("RuleEngine", obj), target, data, None, durable=self)  # kind says which
            live = LiveRun(chain_run.run_id, target, None, detached, True, chain_run, kind="chain")
            return registry.launch(live, functools.partial(self._save_chain_end, live), listen)
        name = cast("Agent", obj).name
        run_id = new_run_id(name)
        handle = DurableAgentRun(self, name, run_id, new={"input": data, "stream": stream, "target": target,
                                                          "session": session})
        live = LiveRun(run_id, target, session, detached, True, handle, log_events=False)
        handle.on_events = functools.partial(_seen, live)
        return registry.launch(live, functools.partial(self._save_end, live, handle), listen)

    def owns(self, record: RunRecord) -> bool:
        snap = record.snapshot
        return isinstance(snap, dict) and snap.get("format") == FORMAT

    async def resume(self, registry: RunRegistry, record: RunRecord, target: str, obj: Agent,
                     answers: dict[str, Any], *, detached: bool, listen: bool = False) -> LiveRun:
        from ..durable import DurableRunError
        from ..state import StateError

        run = await self.agent(obj.name).get(record.run_id)
        try:
            await run.answer(answers)
        except DurableRunError as e:  # refused by the workflow: nothing changed
            raise StateError(str(e)) from None
        # Running again (the workers' next status write follows; _save_end settles it at the end).
        await self.store.save_run(record.run_id, record.snapshot, status="running")
        handle = DurableAgentRun(self, obj.name, record.run_id, after=record.last_event_id)
        live = LiveRun(record.run_id, target, record.session, detached, True, handle, log_events=False,
                       last_id=record.last_event_id)
        handle.on_events = functools.partial(_seen, live)
        return registry.launch(live, functools.partial(self._save_end, live, handle), listen)

    async def cancel(self, run_id: str, mode: str, timeout: float | None) -> None:
        from ..agent.cancel import CancelMode

        CancelMode.parse(mode)  # ValueError before anything is sent
        live = self.registry.live.get(run_id) if self.registry is not None else None
        if live is not None and live.kind == "chain":
            live.handle.cancel()  # its workflow is cancelled by the task that follows it (frames.py)
            return
        if live is not None and isinstance(live.handle, DurableAgentRun):
            await live.handle.send_cancel(mode, timeout)  # once its workflow has started
            return
        # Any workflow: an agent run (its modes) or a chain run (immediate only: the runs route checks).
        run = await self.agent("").get(run_id)
        await run.cancel(mode, timeout=timeout)

    async def amend_view(self, view: dict[str, Any], record: RunRecord,
                         live: LiveRun | None) -> dict[str, Any]:
        snap = record.snapshot if isinstance(record.snapshot, dict) else {}
        view["durable"] = True
        if view.get("target") is None:  # the workers' records name the agent, not its catalog id
            view["target"] = view["agent"] = self._target_of(record.agent)
        if live is None and view["status"] in ("running", "interrupted"):
            view["status"] = await self._workflow_status(record.run_id, view)
        result = snap.get("result") or {}
        if view["status"] in ("done", "cancelled") and result:
            view["result"] = {"content": result.get("content"), "stop_reason": result.get("stop_reason")}
        if view["status"] == "interrupted" and (result.get("interruption") or {}).get("questions"):
            view["questions"] = result["interruption"]["questions"]
        return view

    async def run(self, kind: str, obj: Agent, data: Any) -> RunResult:
        if kind != "agent":
            raise ValueError(f"TemporalDispatcher.run: kind {kind!r}: only agents (chains: start_chain)")
        return await self.agent(obj.name).run(data)

    # -- helpers --------------------------------------------------------------------------------------

    def _target_of(self, agent_name: str | None) -> str | None:
        for entry in self.catalog.entries.values():
            if entry.kind == "agent" and entry.agent.name == agent_name:
                return str(entry.id)
        return agent_name

    async def _workflow_status(self, run_id: str, view: dict[str, Any]) -> str:
        """The status of a run the store calls running or interrupted and nobody here follows, from its
        workflow: a closed workflow's word wins over a record its end did not reach."""
        from temporalio.client import WorkflowExecutionStatus as S

        status = view["status"]
        try:
            async with asyncio.timeout(DESCRIBE_TIMEOUT):
                handle = self.connected.get_workflow_handle(run_id)
                desc = await handle.describe()
                if desc.status in (S.RUNNING, S.CONTINUED_AS_NEW):
                    return str(status)
                if desc.status == S.COMPLETED:
                    out = (await handle.result()).get("result") or {}
                    return {"cancelled": "cancelled", "interrupted": "interrupted"}.get(
                        str(out.get("stop_reason")), "done")
        except Exception as e:  # Temporal unreachable, or no such workflow: the store's word stands
            log.warning("run %s: cannot ask Temporal for its status: %s", run_id, e)
            return str(status)
        if desc.status == S.CANCELED:
            return "cancelled"
        if not view.get("error"):
            view["error"] = f"the workflow ended {desc.status.name.lower() if desc.status else 'unknown'}"
        return "failed"

    async def _save_chain_end(self, live: LiveRun, result: ChainResult | None,
                              error: BaseException | None) -> None:
        """A chain run's end as this server saw it (the registry's chain record), or, left at shutdown,
        the record handed to the workers, which write its end (durable/chain_end.py)."""
        from ..durable.chain_end import leave

        if isinstance(error, LeftRunning):
            await leave(self.store, live.run_id)
            return
        assert self.registry is not None
        await self.registry.save_chain_end(live, result, error)

    async def _save_end(self, live: LiveRun, handle: DurableAgentRun, result: RunResult | None,
                        error: BaseException | None) -> None:
        """The run's end as this server saw it. The workers have written the status already when they log
        events; this settles what they could not: no store on their side, an interrupt whose status write
        is still on its way, a failure before the run's loop started (then also an `error` event)."""
        from ..durable.codec import result_to_dict

        if isinstance(error, LeftRunning):
            return
        base: dict[str, Any] = {"format": FORMAT, "workflow_id": live.run_id}
        if result is not None:
            status = {"cancelled": "cancelled", "interrupted": "interrupted"}.get(result.stop_reason, "done")
            rec = await self.store.get_run(live.run_id)
            if rec is None or rec.status != status:
                await self.store.save_run(live.run_id, {**base, "result": result_to_dict(result)},
                                          status=status, agent=handle.name)
            return
        text = str(error) or type(error).__name__
        if handle.stop is None:
            err = ErrorEvent(run_id=live.run_id, agent=handle.name, path=(handle.name,), error=text,
                             error_type=getattr(error, "error_type", "") or type(error).__name__)
            await self.store.append_events(live.run_id, [(err.type, err.to_dict())])
        await self.store.save_run(live.run_id, {**base, "extra": {"target": live.target, "kind": "agent",
                                                                  "error": text}},
                                  status="failed", agent=handle.name)


def _seen(live: LiveRun, last_id: int) -> None:
    live.last_id = max(live.last_id, last_id)
    live.notify()
