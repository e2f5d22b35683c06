"""One run of an `aiagent` node in this process: the node's steps (node_steps.node_turn) with the I/O done
here, by the node's own Agent.

    async for item in run_agent_node(node, env, store, conversation, ...): ...   # FlowEvents, then an
                                                                                 # AgentOutcome

A durable turn takes the same steps with activities (chainreact.durable.flow_node); what differs is only
where each I/O runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .asking import Pending
from .collaboration import collaborator_tools
from .driver import drive
from .events import FlowEvent
from .llm import agent_config
from .model import AIAgentNode, FlowDef
from .node_steps import AgentOutcome, NodeRun, NodeStart, node_turn, prepare, remember
from .prompts import system_message
from .tooling import AskForTools, ToolBudget

if TYPE_CHECKING:
    from ..agent import Agent
    from ..agent.result import RunResult
    from ..state.base import Store
    from ..types import Message


def build_agent(node: AIAgentNode, system: str, env: dict[str, Any], *, flow: FlowDef | None,
                base_dir: Path | None, budget: ToolBudget) -> Agent:
    """The node's agent for one run: its tools (HTTP/MCP descriptors, collaborators), the tool budget and,
    with askUserForToolsInput, the asking tools."""
    from ..agent import Agent
    from ..config import AgentConfig

    cfg = agent_config(node, system_prompt=system)
    tools: list[Any] = []
    middleware: list[Any] = [budget]
    if node.maxToolExecutions > 0:
        if node.tools:
            cfg["tools"] = [t.descriptor() for t in node.tools]
        tools = collaborator_tools(node, env, flow=flow, base_dir=base_dir)
        if node.askUserForToolsInput:
            middleware.append(AskForTools())
    return Agent(config=AgentConfig.model_validate(cfg), tools=tools, middleware=middleware,
                 base_dir=base_dir)


class LocalNodeIO(NodeRun):
    """node_steps.NodeIO in this process: the node's Agent runs here, checkpointed in the store when the
    run may stop to ask (then another process may have to go on with it)."""

    def __init__(self, node: AIAgentNode, env: dict[str, Any], store: Store, conversation: str, *,
                 base_dir: Path | None, flow: FlowDef | None, session_key: str | None, agent_events: bool):
        super().__init__(node, env, session_key=session_key, agent_events=agent_events)
        self.store = store
        self.conversation = conversation
        self.base_dir = base_dir
        self.flow = flow
        self.agent: Agent | None = None
        self.resumed: Pending | None = None  # the stored run the next run() goes on with
        self.result: RunResult | None = None

    def _agent(self, system: str) -> Agent:
        self.agent = build_agent(self.node, system, self.env, flow=self.flow, base_dir=self.base_dir,
                                 budget=self.budget)
        return self.agent

    async def start(self) -> NodeStart:
        start = await prepare(self.node, self.env, self.store, self.conversation, self.base_dir)
        self._agent(start.system)
        return start

    async def resume(self, pending: Pending) -> None:
        self.budget = ToolBudget(self.node.maxToolExecutions, pending.tools_used)
        self.resumed = pending
        self._agent(system_message(self.node, self.env))

    async def run(self, messages: list[Message] | None) -> AsyncIterator[FlowEvent]:
        assert self.agent is not None
        resumed, self.resumed = self.resumed, None
        store = self.store if self.node.askUserForToolsInput else None
        async for item in drive(self.agent, self.node.name, messages, store=store, session=self.session_key,
                                run_id=resumed.run_id if resumed is not None else None,
                                answers=resumed.answers if resumed is not None else None,
                                extra={"flowNode": self.node.name}, agent_events=self.agent_events):
            if isinstance(item, FlowEvent):
                yield item
            else:
                self.result = item  # drive's last item

    async def suspend(self, result: RunResult) -> str:
        return str(result.metadata["run_id"])  # the checkpointer saved it at its `interrupted` safe point

    async def finish(self, key: str, user_text: str, content: str, text: str | None,
                     memories: list[str]) -> list[str]:
        return await remember(self.node, self.env, self.store, self.base_dir, key=key, user_text=user_text,
                              content=content, text=text, memories=memories)

    async def aclose(self) -> None:
        if self.agent is not None:
            await self.agent.aclose()


async def run_agent_node(node: AIAgentNode, env: dict[str, Any], store: Store, conversation: str, *,
                         base_dir: Path | None = None, flow: FlowDef | None = None,
                         pending: Pending | None = None, session_key: str | None = None,
                         agent_events: bool = False) -> AsyncIterator[FlowEvent | AgentOutcome]:
    """Run the node once on the turn's input (`conversation` is the session's default memory key), or,
    with `pending`, take the turn's input as the answer to the question the node's run waits on.
    `agent_events`: streaming model calls, every agent event passed on as an `agent` FlowEvent."""
    io = LocalNodeIO(node, env, store, conversation, base_dir=base_dir, flow=flow, session_key=session_key,
                     agent_events=agent_events)
    async for item in node_turn(node, env, io, pending):
        yield item


__all__ = ["LocalNodeIO", "build_agent", "run_agent_node"]
