"""Loop-hook middleware in durable runs: in the workflow, or in an activity (`Middleware.durable`).

    "workflow"  (default) the hook runs in the workflow code, replayed with it: deterministic, no I/O
    "activity"  the hook runs in the worker, in the activity `chainreact.agent.hook`: it may do I/O; what
                it changes (the run state, the instruction, the tool list, the deferred tools) comes back to
                the workflow and is recorded in the history, so a replay does not run it again
    "worker"    left out of durable runs (hooks that trace or time one process)

An activity hook sees the run state as data: messages, tool specs, the tools by name (the worker's own
Tool objects), return_directly, step and `values` (which must be JSON then). The workflow applies what
comes back; a tool name the agent does not have is dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..agent.middleware import AgentContext, Middleware, MiddlewareChain, RunState
from ..errors import ChainreactError
from ..tools.base import Tool
from .codec import JSON, messages_from_list, messages_to_list, result_from_dict, result_to_dict

if TYPE_CHECKING:
    from ..agent.result import RunResult

LOOP_HOOKS = ("before_agent", "before_model", "after_model", "after_agent", "on_agent_error")
HOOK_ACTIVITY = "chainreact.agent.hook"


def mode(m: Middleware) -> str:
    return str(getattr(m, "durable", "workflow"))


def overridden(m: Middleware, hook: str) -> bool:
    return getattr(type(m), hook) is not getattr(Middleware, hook)


def state_to_dict(state: RunState | None) -> JSON | None:
    if state is None:
        return None
    return {"messages": messages_to_list(state.messages), "tool_specs": list(state.tool_specs),
            "tools": list(state.tools), "return_directly": sorted(state.return_directly),
            "run_id": state.run_id, "step": state.step, "values": dict(state.values),
            "deferred": list(state.deferred)}


def state_from_dict(d: JSON, tools: Mapping[str, Tool]) -> RunState:
    return RunState(messages=messages_from_list(d["messages"]), tool_specs=list(d["tool_specs"]),
                    tools={n: tools[n] for n in d["tools"] if n in tools},
                    return_directly=set(d["return_directly"]), run_id=d["run_id"], step=int(d["step"]),
                    values=dict(d["values"]), deferred={n: tools[n] for n in d["deferred"] if n in tools})


def apply_state(state: RunState, d: JSON, tools: Mapping[str, Tool]) -> None:
    """Put an activity hook's changes into the workflow's run state (in place: the loop holds it)."""
    new = state_from_dict(d, tools)
    state.messages[:] = new.messages
    state.tool_specs[:] = new.tool_specs
    state.tools.clear()
    state.tools.update(new.tools)
    state.return_directly.clear()
    state.return_directly.update(new.return_directly)
    state.values.clear()
    state.values.update(new.values)
    state.deferred.clear()
    state.deferred.update(new.deferred)


Call = Callable[[JSON], Awaitable[JSON]]


class ActivityHooks(Middleware):
    """In the workflow: stands for middleware number `index` of the agent, each hook an activity call."""

    def __init__(self, index: int, call: Call, tools: Mapping[str, Tool]):
        self.index = index
        self.call = call
        self.tools = tools

    async def _run(self, hook: str, **data: Any) -> JSON:
        return await self.call({"index": self.index, "hook": hook, **data})

    async def before_agent(self, ctx: AgentContext) -> None:
        out = await self._run("before_agent", ctx={
            "instruction": ctx.instruction, "tools": [t.name for t in ctx.tools],
            "return_directly": sorted(ctx.return_directly), "input": ctx.input, "run_id": ctx.run_id,
            "deferred": [t.name for t in ctx.deferred]})
        ctx.instruction = out["instruction"]
        ctx.tools = [self.tools[n] for n in out["tools"] if n in self.tools]
        ctx.return_directly = set(out["return_directly"])
        if "deferred" in out:  # absent in histories recorded before before_agent could change it
            ctx.deferred = [self.tools[n] for n in out["deferred"] if n in self.tools]

    async def before_model(self, state: RunState) -> None:
        apply_state(state, await self._run("before_model", state=state_to_dict(state)), self.tools)

    async def after_model(self, state: RunState) -> None:
        apply_state(state, await self._run("after_model", state=state_to_dict(state)), self.tools)

    async def after_agent(self, state: RunState, result: RunResult) -> None:
        await self._run("after_agent", state=state_to_dict(state), result=result_to_dict(result))

    async def on_agent_error(self, state: RunState | None, error: BaseException | None) -> None:
        err = None if error is None else {"type": type(error).__name__, "message": str(error)}
        await self._run("on_agent_error", state=state_to_dict(state), error=err)


def workflow_chain(middleware: tuple[Middleware, ...], call: Call,
                   tools: Mapping[str, Tool]) -> MiddlewareChain:
    """The workflow's middleware chain, in the agent's order: "workflow" middleware as is, "activity"
    middleware as ActivityHooks (on the hook points it overrides), "worker" middleware left out."""
    items: list[Middleware] = []
    proxies: dict[int, Middleware] = {}
    for i, m in enumerate(middleware):
        if mode(m) == "workflow":
            items.append(m)
        elif mode(m) == "activity":
            proxy = ActivityHooks(i, call, tools)
            proxies[id(proxy)] = m
            items.append(proxy)
    chain = MiddlewareChain(items)
    for hook in LOOP_HOOKS:  # a proxy overrides every hook: keep it only where its middleware does
        hooks: list[Middleware] = getattr(chain, hook)
        hooks[:] = [h for h in hooks if id(h) not in proxies or overridden(proxies[id(h)], hook)]
    return chain


class HookError(ChainreactError):
    """The error a run ended with, as an activity hook's on_agent_error sees it (`error_type`: its class)."""

    def __init__(self, message: str, error_type: str):
        super().__init__(message)
        self.error_type = error_type


async def run_hook(m: Middleware, tools: Mapping[str, Tool], agent: str, req: JSON) -> JSON:
    """In the worker: one loop hook of middleware `m` over the data the workflow sent."""
    hook = req["hook"]
    if hook == "before_agent":
        c = req["ctx"]
        ctx = AgentContext(instruction=c["instruction"], tools=[tools[n] for n in c["tools"] if n in tools],
                           return_directly=set(c["return_directly"]), input=c.get("input"), agent=agent,
                           run_id=c.get("run_id", ""),
                           deferred=[tools[n] for n in c.get("deferred") or () if n in tools])
        await m.before_agent(ctx)
        return {"instruction": ctx.instruction, "tools": [t.name for t in ctx.tools],
                "return_directly": sorted(ctx.return_directly), "deferred": [t.name for t in ctx.deferred]}
    state = state_from_dict(req["state"], tools) if req.get("state") is not None else None
    if hook in ("before_model", "after_model"):
        assert state is not None
        await getattr(m, hook)(state)
        return state_to_dict(state) or {}
    if hook == "after_agent":
        assert state is not None
        await m.after_agent(state, result_from_dict(req["result"]))
        return {}
    if hook == "on_agent_error":
        e = req.get("error")
        error: BaseException | None = None
        if e is not None:
            error = asyncio.CancelledError(e["message"]) if e["type"] == "CancelledError" else \
                HookError(e["message"], e["type"])
        await m.on_agent_error(state, error)
        return {}
    raise ValueError(f"unknown loop hook {hook!r}: one of {', '.join(LOOP_HOOKS)}")
