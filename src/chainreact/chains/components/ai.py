"""AI components: `ai/agent` (the chainreact Agent as a node) and `ai/llm` (one model call, no loop).

Input contract (the agent's): JSON data with `messages` is the conversation; otherwise preset messages
plus the data as the user message. Metadata read: `stream` ("true" = stream frames on Stream),
`sessionKey` + `loadHistory` (conversation history; `sessionScope=node`: this node's own),
`session_model` (another model on the same endpoint), `session_extra_fields` (a JSON object merged over
params.extraFields). The node's step around the run is ai_step.agent_node_step (a durable chain run
takes the same step with another executor); this module is its in-process executor."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

import orjson

from ...types import Message
from ..msg import FAILURE, RuleMsg
from ..sessions import MemorySessionStore, SessionStore, node_session_key, unsent_part
from ..trace import TIMELINE_EVENTS, agent_events
from .ai_step import agent_node_step, streamed_content, unstreamed_part, usage_meta
from .base import Component, NodeConfig, close_soon, register

if TYPE_CHECKING:
    from ...agent import Agent, RunResult
    from ..context import NodeContext
    from ..model import EngineLike


def _session_store(engine: EngineLike) -> SessionStore:
    store = engine.services.get("sessions")
    if store is None:
        store = engine.services["sessions"] = MemorySessionStore()
    return store


MAX_VARIANTS = 32


def _close_later(agent: Agent) -> None:
    close_soon(agent.aclose)


class AgentNodeConfig(NodeConfig):
    """The agent document's fields (url, key, model, systemPrompt, tools, params, ...), checked by the
    agent's own config model at load."""


@register
class AgentNode(Component):
    """Runs the chainreact Agent (ReAct loop) on the message. Sync: Success with the answer (metadata
    `model` and token counts). Stream (metadata stream=true): text frames, tool frames, a warning frame
    (a run that reached maxStep) and an end frame on Stream, then Success with the full text
    (`full_content=true`). Errors: Failure (and, when streaming, the same message on Stream)."""

    type_name = "ai/agent"
    Config = AgentNodeConfig
    stream_capable = True

    @classmethod
    def form_fields(cls) -> dict[str, Any]:
        from ...config import AgentConfig

        return dict(AgentConfig.model_fields)

    def init(self) -> None:
        from ...config import AgentConfig, with_default_endpoint

        raw = self.config.model_dump()
        # pydantic errors name the field; no url: OPENAI_BASE_URL / OPENAI_API_KEY when set (the answer's
        # metadata.model says which model answered)
        self.agent_config = with_default_endpoint(AgentConfig.model_validate(raw))
        # Tools parsed as a run would (an HTTP tool without its endpoint...): the chain fails to load,
        # rather than its first message.
        from ...errors import ConfigError
        from ...tools.check import descriptor_problems

        problems = descriptor_problems(self.agent_config.tools, "$.tools")
        if problems:
            raise ConfigError(f"{len(problems)} problem(s) in the tools", errors=problems)
        self._agents: dict[tuple[str, str], Agent] = {}

    # one Agent per (session_model, session_extra_fields): tools and HTTP pools are shared per variant
    def _agent(self, model: str, extra: str) -> Agent:
        key = (model, extra)
        agent = self._agents.get(key)
        if agent is not None:
            return agent
        from ...agent import Agent
        from ..tools import chain_tools_for

        cfg = self.agent_config
        update: dict[str, Any] = {}
        if model:
            update["model"] = model
            # failover endpoints keep their own model (one that inherited the primary's keeps that one)
            update["failover"] = [f.model_copy(update={"model": f.model or cfg.model}) for f in cfg.failover]
        if extra:
            fields = dict(cfg.params.extraFields or {})
            fields.update(orjson.loads(extra))
            update["params"] = cfg.params.model_copy(update={"extraFields": fields})
        entries, chain_tools = chain_tools_for(self.chain.engine, list(cfg.tools))
        update["tools"] = entries
        cfg = cfg.model_copy(update=update)
        engine = self.chain.engine
        providers = dict(engine.services.get("providers") or {})
        if "self" not in providers:
            from ..tools import EngineToolProvider

            providers["self"] = EngineToolProvider(engine)
        agent = Agent(name=self.node_id, config=cfg, tools=chain_tools, globals=engine.properties,
                      providers=providers, agents=engine.services.get("agents"),
                      rule_chain={"id": self.chain.id, "name": self.chain.name})
        self._agents[key] = agent
        while len(self._agents) > MAX_VARIANTS:  # metadata picks variants: keep the cache bounded
            _close_later(self._agents.pop(next(iter(self._agents))))
        return agent

    def agent_for(self, model: str = "", extra: str = "") -> Agent:
        """The Agent this node runs for metadata session_model / session_extra_fields (normalized JSON):
        the durable layer runs it as a child agent workflow (chainreact.durable.chain_host)."""
        return self._agent(model, extra)

    def close(self) -> None:
        for agent in self._agents.values():
            _close_later(agent)
        self._agents.clear()

    async def on_msg(self, ctx: NodeContext, msg: RuleMsg) -> None:
        await agent_node_step(ctx, msg, self, stream=msg.metadata.get("stream") == "true")

    # -- ai_step.AgentNodeIO, in process --------------------------------------------------------------

    async def run(self, ctx: NodeContext, msg: RuleMsg, model: str, extra: str, data: Any,
                  stream: bool) -> tuple[RunResult, str]:
        agent = self._agent(model, extra)
        used = agent.config.model
        if stream:
            return await self._stream(ctx, msg, agent, data, used), used
        return await agent.run(data, metadata=msg.metadata), used

    async def session_input(self, msg: RuleMsg, data: Any) -> tuple[Any, int]:
        """`data` (the node's input for `msg`) with the session's history in front, and the history's
        length (a durable chain run calls it and `save_history` in activities around its child run)."""
        return await self._with_history(msg, data)

    async def save_history(self, meta: dict[str, str], messages: list[Message], n_history: int) -> None:
        """Store what a run added to the session's conversation (the loaded history is already stored)."""
        key = self._session_key(meta)
        if key:
            new = [m for m in messages if m.role != "system"][n_history:]
            if new:
                await _session_store(self.chain.engine).append(key, new)

    def _session_key(self, meta: dict[str, str]) -> str | None:
        key = meta.get("sessionKey")
        if key and meta.get("sessionScope") == "node":
            return node_session_key(key, self.chain.id, self.node_id)
        return key or None

    async def _with_history(self, msg: RuleMsg, data: Any) -> tuple[Any, int]:
        """The input with the stored conversation in front (loadHistory == "true"), and its length."""
        key = self._session_key(msg.metadata)
        if not key or msg.metadata.get("loadHistory") != "true":
            return data, 0
        history = await _session_store(self.chain.engine).history(key)
        history = [m for m in history if m.role != "system"]
        if not history:
            return data, 0
        old = [m.to_openai() for m in history]
        if isinstance(data, dict):
            new = list(data["messages"])
            system = [m for m in new if isinstance(m, dict) and m.get("role") == "system"]
            rest = [m for m in new if not (isinstance(m, dict) and m.get("role") == "system")]
            return {**data, "messages": system + old + unsent_part(history, rest)}, len(old)
        return {"messages": [*old, {"role": "user", "content": data}]}, len(old)

    async def _stream(self, ctx: NodeContext, msg: RuleMsg, agent: Agent, data: Any, model: str) -> RunResult:
        """The run's frames on Stream as its events come. Each piece of answer text is told once: a
        `preamble` event repeats text already told (a self-healed detection), a sub-agent's text is not
        this node's answer, and an answer the model did not stream (a returnDirectly tool's result, an
        answer settled from a tool result) is told when the run ends. The result's `content` is the text
        told (ai_step.streamed_content): the Success carries what the consumer received."""
        from ...types import events as ev

        run = agent.start(data, stream=True, metadata=msg.metadata)
        sink = agent_events.get()
        told: list[str] = []
        answer = ""  # the text told since the run's last tool call: the answer being written

        def frame(text: str, **meta: str) -> RuleMsg:
            f = msg.copy()
            f.data = text
            f.data_type = "TEXT"
            f.metadata.update(meta)
            return f

        async def text(piece: str) -> None:
            told.append(piece)
            await ctx.tell_stream(frame(piece, chunk="true", model=model, reasoning_content=""))

        try:
            async for e in run:
                if sink is not None and e.type in TIMELINE_EVENTS:
                    sink(self.chain.id, self.node_id, e)
                nested = len(e.path) > 1
                if isinstance(e, ev.TextDelta):
                    if not nested:
                        answer += e.text
                        await text(e.text)
                elif isinstance(e, ev.ReasoningDelta):
                    if not nested:
                        await ctx.tell_stream(frame("", chunk="true", model=model, reasoning_content=e.text))
                elif isinstance(e, ev.ToolCallEvent):
                    if not nested:
                        answer = ""  # text before a tool call was a preamble
                    try:
                        args = orjson.loads(e.call.arguments or "{}")
                    except orjson.JSONDecodeError:
                        args = e.call.arguments
                    body = {"type": "TOOL_CALL_START", "toolCallId": e.call.id, "toolName": e.call.name,
                            "arguments": args}
                    await ctx.tell_stream(frame(orjson.dumps(body).decode(), chunk="true", tool_call="true",
                                                model=model))
                elif isinstance(e, ev.ToolResultEvent):
                    body = {"type": "TOOL_CALL_RESULT", "toolCallId": e.call_id, "toolName": e.name,
                            "content": e.content, "isError": e.is_error, "durationMs": e.duration_ms}
                    await ctx.tell_stream(frame(orjson.dumps(body).decode(), chunk="true", tool_call="true",
                                                model=model))
                elif isinstance(e, ev.RunWarning) and not nested:
                    await ctx.tell_stream(frame(e.message, warning=e.code, model=model))
                elif isinstance(e, ev.Final) and not nested:
                    rest = unstreamed_part(e.content, answer)
                    if rest:
                        await text(rest)
            result = await run.result()
        except asyncio.CancelledError:
            run.cancel()
            raise
        await ctx.tell_stream(frame("", stream_completed="true", model=model, **usage_meta(result.usage)))
        return dataclasses.replace(result, content=streamed_content("".join(told), result.content))


class LlmNodeConfig(AgentNodeConfig):
    """url, key, model, systemPrompt, messages, params: as for ai/agent, without tools."""


@register
class LlmNode(AgentNode):
    """One model call (no tool loop): the agent node without tools."""

    type_name = "ai/llm"
    Config = LlmNodeConfig

    @classmethod
    def form_fields(cls) -> dict[str, Any]:
        return {k: v for k, v in super().form_fields().items() if k != "tools"}

    def init(self) -> None:
        from ...config import AgentConfig, with_default_endpoint

        raw = {k: v for k, v in self.config.model_dump().items() if k != "tools"}
        # no tools: the loop makes one model call
        self.agent_config = with_default_endpoint(AgentConfig.model_validate(raw))
        self._agents = {}


__all__ = ["FAILURE", "AgentNode", "LlmNode", "Message"]
