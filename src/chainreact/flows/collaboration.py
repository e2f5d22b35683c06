"""`multiAgentCollaboration`: a supervising `aiagent` node delegates to collaborator agents, each one a tool
of the supervisor (chainreact's agent-as-tool) named after it and described by its `description`.

A collaborator is another `aiagent` node of the flow (`node`) or a chainreact agent document
(`agentFile`). A node collaborator runs as that node's agent would: its systemMessage and
userIdentityExpression (rendered with the turn's names), its userMessage with `userInput` = the task the
supervisor sends, its model, tools (with its own maxToolExecutions) and its own collaborators; its output
schema is asked for (response_format), and the answer goes to the supervisor as the tool result as it
came. A collaborator does not read or write the session's memory and its outcomes and transitions do not
apply: it answers the supervisor, never the user. Its events nest in the supervisor's stream (`path`
supervisor first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..types import Message
from .exprs import render
from .model import AIAgentNode, CollaboratorDef, FlowDef

MAX_DEPTH = 8  # collaborators of collaborators (validation refuses cycles; this bounds the rest)


def collaborator_tools(node: AIAgentNode, env: dict[str, Any], *, flow: FlowDef | None,
                       base_dir: Path | None, depth: int = 0) -> list[Any]:
    """The supervisor's collaborators as tools (empty without an enabled multiAgentCollaboration)."""
    mac = node.multiAgentCollaboration
    if mac is None or not mac.enabled:
        return []
    from .errors import FlowError

    if depth >= MAX_DEPTH:
        raise FlowError(f"node {node.name!r}: collaborators nested more than {MAX_DEPTH} levels deep")
    tools = []
    for c in mac.collaborators:
        agent = _collaborator_agent(c, env, flow=flow, base_dir=base_dir, depth=depth, owner=node.name)
        tools.append(agent.as_tool(c.name or agent.name, c.description, full_history=c.shareHistory,
                                   emit_internal_events=True, timeout=c.timeout))
    return tools


def _collaborator_agent(c: CollaboratorDef, env: dict[str, Any], *, flow: FlowDef | None,
                        base_dir: Path | None, depth: int, owner: str) -> Any:
    from ..agent import Agent
    from .errors import FlowError

    if c.agentFile:
        path = Path(c.agentFile)
        if not path.is_absolute():
            path = (base_dir or Path.cwd()) / path
        return Agent.from_config(path)
    target = flow.node(c.node) if flow is not None and c.node else None
    if not isinstance(target, AIAgentNode):
        raise FlowError(f"node {owner!r}: collaborator {c.node!r} is not an aiagent node of this flow")
    return node_agent(target, env, flow=flow, base_dir=base_dir, depth=depth + 1)


def node_agent(node: AIAgentNode, env: dict[str, Any], *, flow: FlowDef | None, base_dir: Path | None,
               depth: int) -> Any:
    """An aiagent node as a collaborator's agent (see the module doc)."""
    from ..agent import Agent
    from ..config import AgentConfig
    from .llm import agent_config
    from .prompts import system_message
    from .tooling import ToolBudget

    cfg = agent_config(node, system_prompt=system_message(node, env))
    tools: list[Any] = []
    if node.maxToolExecutions > 0:
        if node.tools:
            cfg["tools"] = [t.descriptor() for t in node.tools]
        tools = collaborator_tools(node, env, flow=flow, base_dir=base_dir, depth=depth)

    def model_input(instruction: str, data: Any) -> list[Message]:
        out = [Message("system", instruction)] if instruction else []
        request = data
        if isinstance(data, dict) and isinstance(data.get("messages"), list) and data["messages"]:
            # shareHistory: the supervisor's conversation as context, then the task.
            *context, last = data["messages"]
            out += [Message("user", str(m.get("content") or "")) for m in context]  # context: user turns
            request = last.get("content") if isinstance(last, dict) else last
        out.append(Message("user", render(node.userMessage, {**env, "userInput": request})))
        return out

    # A fresh budget per delegated task: each task the supervisor sends is one run of this agent.
    return Agent(config=AgentConfig.model_validate(cfg), tools=tools, base_dir=base_dir,
                 middleware=[ToolBudget(node.maxToolExecutions, per_run=True)], gen_model_input=model_input)


__all__ = ["MAX_DEPTH", "collaborator_tools", "node_agent"]
