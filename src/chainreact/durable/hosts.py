"""What a worker serves: its agents, rule chains and flows, by name, and the state store for event logs.

    AgentHost([agent], store=store)      agents by name (and each a RunPlan of I/O functions, made once)
    ChainHost(engine, [agent], store=)   the engine's loaded chains by id, and agents (its agent nodes too)
    FlowHost([flow])                     flows by id (each flow has its own store), and the agents of
                                         their agent nodes in use (NodeAgents)

A name the worker does not serve fails the activity at once (non-retryable), saying what it serves and
that a worker with the document must poll the queue. HOSTS holds this process's AgentHost per task queue:
the workflow code finds an agent's loop-hook middleware there (durable/hooks.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from temporalio.exceptions import ApplicationError

from ..agent.agent import Agent
from ..agent.middleware import AgentContext, Middleware
from ..agent.plan import RunPlan
from ..flows.tooling import AskForTools, ToolBudget
from ..tools.base import Tool
from .chain_plan import parse_agent_key
from .codec import JSON

if TYPE_CHECKING:
    from ..chains.engine import Chain, RuleEngine
    from ..flows.engine import Flow
    from ..flows.model import AIAgentNode
    from ..state.base import Store

T = TypeVar("T")


def not_served(kind: str, name: str, known: Iterable[str], what: str = "its document",
               error_type: str = "") -> ApplicationError:
    """The failure of an activity asking for something this worker does not serve (never retried: another
    attempt would find the same worker's documents)."""
    serves = ", ".join(sorted(known)) or "none"
    return ApplicationError(f"{kind} {name!r} is not served by this worker (it serves: {serves}); start a "
                            f"worker with {what} on this task queue",
                            type=error_type or "Unknown" + kind.title(), non_retryable=True)


class Served(Generic[T]):
    """Items by name; two different items under one name are an error."""

    kind = "item"
    key = "name"  # what tells items apart: their "name" or their "id"

    def __init__(self, items: Iterable[T] | Mapping[str, T], name_of: Callable[[T], str]) -> None:
        self.items: dict[str, T] = {}
        for name, item in (items.items() if isinstance(items, Mapping) else ((name_of(i), i) for i in items)):
            self.add(item, name)

    def add(self, item: T, name: str) -> None:
        if name in self.items and self.items[name] is not item:
            by = "with id" if self.key == "id" else "named"
            raise ValueError(f"two {self.kind}s {by} {name!r} in one worker: give each document a distinct "
                             f"{self.key}")
        self.items[name] = item

    def get(self, name: str) -> T:
        item = self.items.get(name)
        if item is None:
            raise not_served(self.kind, name, self.items)
        return item


class AgentHost(Served[Agent]):
    """The agents a worker serves (by name) and the optional state store for event logs."""

    kind = "agent"

    def __init__(self, agents: Iterable[Agent] | Mapping[str, Agent] = (), *, store: Store | None = None):
        self.store = store
        self._io: dict[str, RunPlan] = {}
        self._retries: dict[str, int] = {}
        self._lock = asyncio.Lock()
        super().__init__(agents, lambda a: a.name)
        self.agents = self.items

    def add(self, item: Agent, name: str | None = None) -> None:
        super().add(item, name or item.name)

    def agent(self, name: str) -> Agent:
        return self.get(name)

    async def io_plan(self, name: str) -> RunPlan:
        """The agent's I/O functions (model client with wrap_model, tools with wrap_tool_call), made once."""
        plan = self._io.get(name)
        if plan is None:
            async with self._lock:
                plan = self._io.get(name)
                if plan is None:
                    plan = await self.agent(name).plan()
                    client = plan.client
                    if client is not None and hasattr(client, "max_retries"):
                        # Temporal retries the activity (maxRetries + 1 attempts); the client must not too.
                        self._retries[name] = int(client.max_retries)
                        client.max_retries = 0
                    self._io[name] = plan
        return plan

    def model_retries(self, name: str, default: int) -> int:
        """The document's retries per model call (-1: none), before the worker turned the client's off."""
        return max(-1, self._retries.get(name, default))

    def tool(self, plan: RunPlan, name: str) -> Tool | None:
        for t in (*plan.tools, *plan.deferred_tools):
            if t.name == name:
                return t
        return None

    async def aclose(self) -> None:
        for agent in self.agents.values():
            await agent.aclose()


class ChainHost(AgentHost):
    """The chains a worker serves (an engine with them loaded), and optionally agents and a state store.
    It also serves each `ai/agent` node's Agent under a derived name (chain_plan.agent_key), so the node
    can run as a child agent workflow whose model and tool calls are the agent activities."""

    def __init__(self, engine: RuleEngine, agents: Iterable[Agent] | Mapping[str, Agent] = (), *,
                 store: Store | None = None):
        super().__init__(agents, store=store)
        self.engine = engine

    def chain(self, chain_id: str) -> Chain:
        chain = self.engine.get(chain_id)
        if chain is None:
            raise not_served("rule chain", chain_id, self.engine.chains, "its chain file", "UnknownChain")
        return chain

    def agent(self, name: str) -> Agent:
        key = parse_agent_key(name)
        if key is None:
            return super().agent(name)
        chain_id, node_id, model, extra = key
        node = self.chain(chain_id).nodes.get(node_id)
        if node is None or not hasattr(node.component, "agent_for"):
            raise ApplicationError(f"rule chain {chain_id!r} has no agent node {node_id!r} on this worker",
                                   type="UnknownAgent", non_retryable=True)
        agent: Agent = node.component.agent_for(model, extra)
        return agent

    async def aclose(self) -> None:
        await super().aclose()
        self.engine.close()


CACHE_SIZE = 32


@dataclass
class NodeAgent:
    """A flow node's agent in a worker, with what its activities use of it."""

    agent: Agent
    plan: RunPlan
    tools: list[Tool]  # as the loop sees them (askUserForToolsInput: wrapped, ask_user added)
    budget: ToolBudget


class NodeAgents:
    """The node agents of runs in flight in this worker, by flow, node and the turn's inputs (LRU)."""

    def __init__(self, size: int = CACHE_SIZE):
        self.size = size
        self._cache: OrderedDict[str, NodeAgent] = OrderedDict()
        self._lock = asyncio.Lock()

    async def get(self, flow: Flow, node: AIAgentNode, env: JSON | None) -> NodeAgent:
        key = hashlib.sha256(json.dumps([flow.id, node.name, env], sort_keys=True, default=str)
                             .encode()).hexdigest()
        async with self._lock:
            io = self._cache.get(key)
            if io is not None:
                self._cache.move_to_end(key)
                return io
            from ..flows.agent_node import build_agent

            budget = ToolBudget(node.maxToolExecutions)
            agent = build_agent(node, "", dict(env or {}), flow=flow.definition, base_dir=flow.base_dir,
                                budget=budget)
            plan = await agent.plan()
            ctx = AgentContext(instruction=plan.instruction, tools=list(plan.tools),
                               return_directly=set(plan.return_directly), agent=plan.agent)
            for m in plan.middleware.before_agent:
                if isinstance(m, AskForTools):  # the tools the model sees; the rest runs in the workflow
                    await m.before_agent(ctx)
            io = self._cache[key] = NodeAgent(agent, plan, ctx.tools, budget)
            while len(self._cache) > self.size:
                _, old = self._cache.popitem(last=False)
                await old.agent.aclose()
            return io

    async def aclose(self) -> None:
        for io in self._cache.values():
            await io.agent.aclose()
        self._cache.clear()


class FlowHost(Served["Flow"]):
    """The flows a worker serves, by flow id."""

    kind = "flow"
    key = "id"

    def __init__(self, flows: Iterable[Flow] | Mapping[str, Flow] = ()):
        super().__init__(flows, lambda f: f.id)
        self.flows = self.items
        self.node_agents = NodeAgents()  # the agents of agent nodes of turns in flight

    def flow(self, flow_id: str) -> Flow:
        return self.get(flow_id)

    async def aclose(self) -> None:
        await self.node_agents.aclose()
        for flow in self.flows.values():
            await flow.aclose()


# The hosts of this process's workers, by task queue: the workflow code finds its agent's loop-hook
# middleware here (chainreact is passed through the sandbox, so this is the same dict in there).
HOSTS: dict[str, AgentHost] = {}


def loop_middleware(task_queue: str, agent: str) -> tuple[Middleware, ...]:
    """The middleware of `agent` in this process's worker for `task_queue`, in order (durable/hooks.py
    decides where each one's loop hooks run)."""
    host = HOSTS.get(task_queue)
    found = host.agents.get(agent) if host is not None else None
    if found is None:
        return ()
    return tuple(found.middleware.all)
