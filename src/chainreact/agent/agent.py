"""The Agent: configuration, tools and middleware, and the ways to run it.

    agent = Agent.from_config("agent.json", globals={...})      # a document (JSON/YAML/dict)
    agent = Agent(name="calc", instruction="...", model="gpt-4o", url=..., tools=[add])  # in Python

    result = await agent.run("What is 2+3?")        # -> RunResult
    async for event in agent.stream("..."): ...     # typed events
    run = agent.start("..."); run.cancel("after_tools"); await run.result()
    agent.run_sync("...")                           # scripts

An Agent instance is reusable and safe to run concurrently; a run's state lives in its ReactLoop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..config import AgentConfig, AgentDocument, ChatMessage, ModelParams, ToolDescriptor, load_document
from ..tools.base import Tool
from ..types import Event
from .build import AgentRegistry, resolve_tools
from .cancel import CancelHandle, CancelMode, CancelState
from .detection import normalize_mode
from .loop import ReactLoop
from .middleware import Middleware, MiddlewareChain
from .result import RunResult

T = TypeVar("T")


class Agent:
    def __init__(
        self,
        name: str = "agent",
        instruction: str | None = None,
        *,
        description: str = "",
        model: Any = None,
        url: str | None = None,
        key: str | None = None,
        params: ModelParams | Mapping[str, Any] | None = None,
        tools: Sequence[Any] = (),
        middleware: Sequence[Middleware] = (),
        max_steps: int | None = None,
        return_directly: Iterable[str] = (),
        config: AgentConfig | Mapping[str, Any] | None = None,
        globals: Mapping[str, Any] | None = None,
        base_dir: str | Path | None = None,
        agents: AgentRegistry | Mapping[str, Any] | None = None,
        providers: Mapping[str, Any] | None = None,
        stream_tool_call_check: str | None = None,
        keep_think: bool | None = None,
        parallel_tool_calls: bool | None = None,
        max_step_policy: str | None = None,
        max_tool_output: int | None = None,
        detect_window: float = 0.5,
        rule_chain: Mapping[str, Any] | None = None,
    ):
        cfg = config if isinstance(config, AgentConfig) else AgentConfig.model_validate(dict(config or {}))
        update: dict[str, Any] = {}
        if isinstance(model, str):
            update["model"] = model
        for field, value in (("url", url), ("key", key), ("systemPrompt", instruction),
                             ("maxStep", max_steps), ("streamToolCallCheck", stream_tool_call_check),
                             ("parallelToolCalls", parallel_tool_calls), ("maxStepPolicy", max_step_policy),
                             ("maxToolOutputLength", max_tool_output)):
            if value is not None:
                update[field] = value
        if params is not None:
            update["params"] = ModelParams.model_validate(params)
        if keep_think is not None:
            base = update.get("params") or cfg.params
            update["params"] = base.model_copy(update={"keepThink": keep_think})
        if update:
            cfg = AgentConfig.model_validate({**cfg.model_dump(exclude_unset=True), **update})
        self.config = cfg
        self.name = cfg.name or name
        self.description = cfg.description or description
        self.instruction = cfg.systemPrompt
        self.max_steps = cfg.maxStep
        self.max_step_policy = cfg.maxStepPolicy
        self.max_tool_output = cfg.maxToolOutputLength
        self.parallel_tool_calls = cfg.parallelToolCalls
        self.keep_think = cfg.params.keepThink
        self.return_directly = set(cfg.returnDirectly) | set(return_directly)
        self.preset_messages: list[ChatMessage] = list(cfg.messages)
        self.detect_window = detect_window
        self._detect_mode = normalize_mode(cfg.streamToolCallCheck)
        self.globals: dict[str, Any] = dict(globals or {})
        self.base_dir = Path(base_dir) if base_dir else Path.cwd()
        self.agents = agents if isinstance(agents, AgentRegistry) else AgentRegistry(agents)
        self.providers = dict(providers or {})
        self.rule_chain = dict(rule_chain or {})
        self._tool_entries: list[Any] = [*cfg.tools, *tools]
        self._mw = MiddlewareChain(list(middleware))
        self._client: Any = model if model is not None and not isinstance(model, str) else None
        self._tools: list[Tool] = []
        self._ready = False
        self._ready_lock: asyncio.Lock | None = None
        self._skills: Any = None

    # -- construction from documents ------------------------------------------------------------

    @classmethod
    def from_config(
        cls,
        src: str | Path | Mapping[str, Any] | AgentDocument | AgentConfig,
        *,
        globals: Mapping[str, Any] | None = None,
        tools: Sequence[Any] = (),
        middleware: Sequence[Middleware] = (),
        agents: AgentRegistry | Mapping[str, Any] | None = None,
        providers: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Agent:
        """Build an agent from a document: a path (JSON/YAML), a dict, or a loaded document."""
        if isinstance(src, AgentConfig):
            doc = AgentDocument(config=src, name=src.name or "agent")
        elif isinstance(src, AgentDocument):
            doc = src
        else:
            doc = load_document(dict(src) if isinstance(src, Mapping) else src)
        g = dict(globals or {})
        cfg = doc.config
        if any("${" in v for v in (cfg.url, cfg.key, cfg.model)):
            from ..template import TemplateContext, render

            tctx = TemplateContext(globals=g, rule_chain={"id": doc.id, "name": doc.name},
                                   base_dir=doc.base_dir)
            cfg = cfg.model_copy(update={k: render(getattr(cfg, k), tctx) for k in ("url", "key", "model")})
        if agents is None and doc.source:
            agents = AgentRegistry(dirs=[doc.base_dir])
        return cls(
            name=doc.name, config=cfg, tools=tools, middleware=middleware, globals=g,
            base_dir=doc.base_dir, agents=agents, providers=providers,
            rule_chain={"id": doc.id, "name": doc.name}, **kwargs,
        )

    # -- templating -------------------------------------------------------------------------------

    def _template_ctx(self, metadata: Mapping[str, Any] | None = None) -> Any:
        from ..template import TemplateContext

        return TemplateContext(globals=self.globals, rule_chain=self.rule_chain,
                               metadata=dict(metadata or {}), base_dir=self.base_dir)

    def _render_instruction(self, metadata: Mapping[str, Any] | None,
                            session_values: Mapping[str, Any] | None) -> str:
        text = self.instruction
        if session_values is not None:
            # {Key} first: it leaves ${...} alone, and included files never meet {Key} rules.
            from ..template import format_session

            text = format_session(text, dict(session_values))
        if "${" in text:
            from ..template import render

            text = render(text, self._template_ctx(metadata))
        if self._skills is not None:
            from ..tools.skills import inject_catalog

            text = inject_catalog(text, self._skills)
        return text

    def _preset(self, metadata: Mapping[str, Any] | None) -> list[ChatMessage]:
        """Preset messages, with `${...}` in their text rendered for this run."""
        if not any(isinstance(m.content, str) and "${" in m.content for m in self.preset_messages):
            return self.preset_messages
        from ..template import render

        tctx = self._template_ctx(metadata)
        return [m.model_copy(update={"content": render(m.content, tctx)})
                if isinstance(m.content, str) and "${" in m.content else m for m in self.preset_messages]

    def _render_descriptor(self, desc: ToolDescriptor) -> ToolDescriptor:
        from ..template import has_template, render_obj

        data = desc.model_dump(exclude_unset=True)
        if not any(has_template(s) for s in _strings(data)):
            return desc
        return ToolDescriptor.model_validate(render_obj(data, self._template_ctx()))

    # -- lifecycle --------------------------------------------------------------------------------

    async def _ensure_ready(self) -> None:
        if self._ready:
            return
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if self._ready:
                return
            entries = list(self._tool_entries)
            if self.config.skillsDir:
                from ..tools.skills import SkillSet

                skills_dir = self._resolve_path(self.config.skillsDir)
                self._skills = SkillSet(global_dirs=[skills_dir], allow=self.config.skills or None)
                if not any((e == "skill") or getattr(e, "name", None) == "skill" for e in entries):
                    entries.append({"type": "builtin", "name": "skill",
                                    "config": {"globalDirs": [str(skills_dir)],
                                               "skills": list(self.config.skills)}})
            self._tools = await resolve_tools(entries, self)
            if self._client is None:
                from ..llm import ModelClient

                self._client = ModelClient.from_config(self.config)
            self._ready = True

    def _resolve_path(self, p: str) -> Path:
        if "${" in p:
            from ..template import render

            p = render(p, self._template_ctx())
        path = Path(p).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    async def tools(self) -> list[Tool]:
        """The resolved tools (connecting MCP servers if needed)."""
        await self._ensure_ready()
        return list(self._tools)

    async def aclose(self) -> None:
        for t in self._tools:
            await t.aclose()
        if self._client is not None and hasattr(self._client, "aclose"):
            await self._client.aclose()
        self._ready = False
        self._tools = []

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- running ----------------------------------------------------------------------------------

    def _loop(self, streaming: bool, metadata: Mapping[str, Any] | None,
              session_values: Mapping[str, Any] | None, path: tuple[str, ...] = (),
              cancel: CancelState | None = None) -> ReactLoop:
        return ReactLoop(self, streaming=streaming, metadata=dict(metadata or {}),
                         session_values=session_values, cancel=cancel, path=path)

    async def run(self, input: Any = None, *, stream: bool = False, metadata: Mapping[str, Any] | None = None,
                  session_values: Mapping[str, Any] | None = None, path: tuple[str, ...] = ()) -> RunResult:
        """Run to the end and return the result. `stream=True` makes streaming model calls underneath."""
        loop = self._loop(stream, metadata, session_values, path)
        async for _ in loop.events(input):
            pass
        assert loop.result is not None
        return loop.result

    async def stream(self, input: Any = None, *, metadata: Mapping[str, Any] | None = None,
                     session_values: Mapping[str, Any] | None = None) -> AsyncIterator[Event]:
        """Yield the run's events as they happen (streaming model calls)."""
        loop = self._loop(True, metadata, session_values)
        async for ev in loop.events(input):
            yield ev

    def start(self, input: Any = None, *, stream: bool = True, metadata: Mapping[str, Any] | None = None,
              session_values: Mapping[str, Any] | None = None) -> AgentRun:
        """Start a run in a task: iterate it for events, `cancel()` it, await `result()`."""
        return AgentRun(self, input, stream, metadata, session_values)

    def run_sync(self, input: Any = None, **kwargs: Any) -> RunResult:
        """Blocking `run()` for scripts. Uses one background event loop per process, so connection pools
        survive between calls; don't call it from inside a running event loop."""
        return _sync(self.run(input, **kwargs))

    def as_tool(self, name: str | None = None, description: str | None = None, *,
                input_schema: dict[str, Any] | None = None, full_history: bool = False,
                emit_internal_events: bool = False) -> Tool:
        """This agent as a tool of another agent (see as_tool.py)."""
        from .as_tool import AgentTool

        return AgentTool(self, name=name, description=description, input_schema=input_schema,
                         full_history=full_history, emit_internal_events=emit_internal_events)

    def __repr__(self) -> str:
        return f"<Agent {self.name!r} model={self.config.model!r}>"


class AgentRun:
    """A run driven in its own task. Iterate it for events; `cancel()`; `await result()`."""

    def __init__(self, agent: Agent, data: Any, stream: bool, metadata: Mapping[str, Any] | None,
                 session_values: Mapping[str, Any] | None):
        self._cancel = CancelState()
        self._loop = agent._loop(stream, metadata, session_values, cancel=self._cancel)
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._error: BaseException | None = None
        self._task = asyncio.ensure_future(self._drive(data))

    async def _drive(self, data: Any) -> None:
        try:
            async for ev in self._loop.events(data):
                self._queue.put_nowait(ev)
        except asyncio.CancelledError:
            if not self._cancel.requested:
                raise
            self._queue.put_nowait(self._loop._cancelled())  # cancelled before the loop started
        except Exception as e:
            self._error = e
        finally:
            result = self._loop.result
            if result is not None and result.stop_reason == "cancelled":
                self._cancel.outcome = "escalated" if self._cancel.escalated else "cancelled"
            else:
                self._cancel.outcome = "finished"
            self._cancel.finished.set()
            self._queue.put_nowait(None)

    @property
    def run_id(self) -> str:
        return self._loop.run_id

    async def __aiter__(self) -> AsyncIterator[Event]:
        while (ev := await self._queue.get()) is not None:
            yield ev
        if self._error is not None:
            raise self._error

    async def result(self) -> RunResult:
        try:
            await asyncio.shield(self._task)
        except asyncio.CancelledError:
            if not self._task.done():
                raise
        if self._error is not None:
            raise self._error
        assert self._loop.result is not None
        return self._loop.result

    def cancel(self, mode: CancelMode | str = CancelMode.IMMEDIATE, *, timeout: float | None = None
               ) -> CancelHandle:
        """Ask the run to stop at the first safe point of `mode` (flags combine; see cancel.py)."""
        m = CancelMode.parse(mode)
        state = self._cancel

        def escalate() -> None:
            state.mode |= CancelMode.IMMEDIATE
            state.requested = True
            if not self._task.done():
                self._task.cancel()

        if not state.finished.is_set():
            state.mode |= m
            state.requested = True
            if m & CancelMode.IMMEDIATE:
                escalate()
        return CancelHandle(state, escalate, timeout)


def _strings(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


_sync_loop: asyncio.AbstractEventLoop | None = None
_sync_lock = threading.Lock()


def _sync(coro: Coroutine[Any, Any, T]) -> T:
    global _sync_loop
    with _sync_lock:
        if _sync_loop is None:
            _sync_loop = asyncio.new_event_loop()
            threading.Thread(target=_sync_loop.run_forever, name="chainreact-sync", daemon=True).start()
    return asyncio.run_coroutine_threadsafe(coro, _sync_loop).result()
