"""The Agent: configuration, tools and middleware, and the ways to run it.

    agent = Agent.from_config("agent.json", globals={...})      # a document (JSON/YAML/dict)
    agent = Agent(name="calc", instruction="...", model="gpt-4o", url=..., tools=[add])  # in Python

    result = await agent.run("What is 2+3?")        # -> RunResult
    async for event in agent.stream("..."): ...     # typed events
    run = agent.start("..."); run.cancel("after_tools"); await run.result()
    agent.run_sync("...")                           # scripts

An Agent instance is reusable and safe to run concurrently. It never runs anything itself: for each run
it makes an immutable RunPlan (`await agent.plan(...)`, plan.py) and a ReactLoop runs that plan, so the
loop, agent-as-tool and AgentRun read the plan, not the Agent's private state.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config import AgentConfig, AgentDocument, ChatMessage, ModelParams, ToolDescriptor
from ..tools.base import Tool
from ..types import Event
from .build import AgentRegistry, resolve_tools
from .detection import DRAIN, normalize_mode
from .interrupt import CheckpointFn, Resume
from .loop import ReactLoop
from .middleware import Middleware, MiddlewareChain, with_global
from .plan import Detection, Limits, RunPlan, apply_plan_hooks, plan_hooks, planning_error
from .result import RunResult
from .run import AgentRun, run_sync
from .run_options import RunOptions
from .special_tools import ExitTool, ToolSearchTool
from .tool_exec import LocalToolIO


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
        source: str | None = None,
        gen_model_input: Callable[[str, Any], Any] | None = None,
        output_key: str | None = None,
        exit_tool: bool | Tool = False,
        deferred_tools: Sequence[Any] = (),
        should_retry: Callable[[Exception], bool] | None = None,
        should_failover: Callable[[Exception], bool] | None = None,
        get_failover_model: Callable[[Exception], Any] | None = None,
        checkpoint: CheckpointFn | None = None,
    ):
        cfg = config if isinstance(config, AgentConfig) else _validated_config(config or {})
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
        # keepThink applies to the text format only (the ai/agent node's params): a JSON answer keeps no
        # reasoning, so it stays parseable.
        self.keep_think = cfg.params.keepThink and cfg.params.responseFormat == "text"
        self.return_directly = set(cfg.returnDirectly) | set(return_directly)
        self.preset_messages: list[ChatMessage] = list(cfg.messages)
        self.detect_window = detect_window
        # The configured mode; a self-heal switches this instance to drain for its later runs.
        self.detect_mode = normalize_mode(cfg.streamToolCallCheck)
        self.globals: dict[str, Any] = dict(globals or {})
        self.base_dir = Path(base_dir) if base_dir else Path.cwd()
        self.agents = agents if isinstance(agents, AgentRegistry) else AgentRegistry(agents)
        self.providers = dict(providers or {})
        self.rule_chain = dict(rule_chain or {})
        self.source = source  # the document's file, for error messages
        # ChatModelAgent extension points (docs/agent.md, "Extension points").
        self.gen_model_input = gen_model_input
        self.checkpoint = checkpoint  # awaited at every safe point of every run (interrupt.py)
        self.output_key = output_key
        exit_ = ExitTool() if exit_tool is True else exit_tool or None
        if exit_ is not None:
            self.return_directly.add(exit_.name)
        self._deferred_entries = list(deferred_tools)
        self._deferred: list[Tool] = []
        # Retry/failover callbacks for the model client this agent creates (llm/client.py).
        self._client_hooks: dict[str, Any] = {
            "should_retry": should_retry, "should_failover": should_failover,
            "get_failover_model": get_failover_model}
        self._tool_entries: list[Any] = [*cfg.tools, *tools, *([exit_] if exit_ is not None else [])]
        self._mw = MiddlewareChain(with_global(middleware))
        self._tool_io = LocalToolIO(self._mw)
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
        """Build an agent from a document: a path (JSON/YAML), a dict, or a loaded document. Endpoint
        templates are rendered by the one path every entry point shares (config.resolve_agent_config)."""
        from ..config import resolve_agent_config

        g = dict(globals or {})
        doc = resolve_agent_config(src, g)
        cfg = doc.config
        if agents is None and doc.source:
            agents = AgentRegistry(dirs=[doc.base_dir])
        return cls(
            name=doc.name, config=cfg, tools=tools, middleware=middleware, globals=g,
            base_dir=doc.base_dir, agents=agents, providers=providers,
            rule_chain={"id": doc.id, "name": doc.name}, source=doc.source, **kwargs,
        )

    # -- templating -------------------------------------------------------------------------------

    def _template_ctx(self, metadata: Mapping[str, Any] | None = None) -> Any:
        from ..template import TemplateContext

        return TemplateContext(globals=self.globals, rule_chain=self.rule_chain,
                               metadata=dict(metadata or {}), base_dir=self.base_dir, source=self.source)

    def _render_instruction(self, metadata: Mapping[str, Any] | None,
                            session_values: Mapping[str, Any] | None) -> str:
        text = self.instruction
        if session_values is not None:
            # One pass for {Key} and ${...}: session values are data (never evaluated), and included
            # files never meet {Key} rules.
            from ..template import render_session

            text = render_session(text, dict(session_values), self._template_ctx(metadata))
        elif "${" in text:
            from ..template import render

            text = render(text, self._template_ctx(metadata))
        if self._skills is not None:
            from ..tools.skills import inject_catalog

            text = inject_catalog(text, self._skills)
        return text

    def _inject_catalog(self, text: str) -> str:
        from ..tools.skills import inject_catalog

        return inject_catalog(text, self._skills)

    def _preset(self, metadata: Mapping[str, Any] | None) -> list[ChatMessage]:
        """Preset messages, with `${...}` in their text rendered for this run."""
        if not any(isinstance(m.content, str) and "${" in m.content for m in self.preset_messages):
            return self.preset_messages
        from ..template import render

        tctx = self._template_ctx(metadata)
        return [m.model_copy(update={"content": render(m.content, tctx)})
                if isinstance(m.content, str) and "${" in m.content else m for m in self.preset_messages]

    def render_descriptor(self, desc: ToolDescriptor) -> ToolDescriptor:
        """A tool descriptor with its `${...}` rendered (build.py calls it for every descriptor)."""
        from ..template import has_template, render_obj

        data = desc.model_dump(exclude_unset=True)
        if not any(has_template(s) for s in _strings(data)):
            return desc
        return ToolDescriptor.model_validate(render_obj(data, self._template_ctx()))

    # -- lifecycle --------------------------------------------------------------------------------

    @property
    def agent_id(self) -> str:
        return str(self.rule_chain.get("id") or self.name)

    @property
    def middleware(self) -> MiddlewareChain:
        """The run's middleware (global first), sorted by hook point."""
        return self._mw

    def load_sub_agent(self, found: Any) -> Agent:
        """An agent-registry entry (a document, a path, an Agent) as an Agent sharing our globals."""
        if isinstance(found, Agent):
            return found
        return Agent.from_config(found, globals=self.globals, agents=self.agents, providers=self.providers)

    async def prepare(self) -> None:
        """Resolve the tools (connecting MCP servers) and create the model client, once per instance."""
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
            if self._deferred_entries:
                self._deferred = await resolve_tools(self._deferred_entries, self)
                entries.append(ToolSearchTool(self._deferred))
            self._tools = await resolve_tools(entries, self)
            if self._client is None:
                from ..llm import ModelClient

                self._client = ModelClient.from_config(self.config, **self._client_hooks)
            self._ready = True

    def _resolve_path(self, p: str) -> Path:
        if "${" in p:
            from ..template import render

            p = render(p, self._template_ctx())
        path = Path(p).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    async def tools(self) -> list[Tool]:
        """The resolved tools (connecting MCP servers if needed)."""
        await self.prepare()
        return list(self._tools)

    async def aclose(self) -> None:
        for t in [*self._tools, *self._deferred]:
            await t.aclose()
        if self._client is not None and hasattr(self._client, "aclose"):
            await self._client.aclose()
        self._ready = False
        self._tools = []
        self._deferred = []

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- running ----------------------------------------------------------------------------------

    async def plan(self, *, metadata: Mapping[str, Any] | None = None,
                   session_values: Mapping[str, Any] | None = None,
                   checkpoint: CheckpointFn | None = None, options: RunOptions | None = None) -> RunPlan:
        """The immutable plan of one run: instruction and preset messages rendered with `metadata` and
        `session_values`, the resolved tools, limits, middleware, detection and the I/O functions.
        `options`: the caller's external tools, tool choice and answer format (run_options.py)."""
        await self.prepare()
        client = self._client
        # The in-process I/O: the client's own `call` with wrap_model bound, no frame of ours added.
        model: Any = functools.partial(client.call, wrap=self._mw.model_wrapper())
        tools = tuple(self._tools)
        if options is not None:
            tools, model = options.apply(tools, model)
        plan = RunPlan(
            agent=self.name,
            instruction=self._render_instruction(metadata, session_values),
            preset=tuple(self._preset(metadata)),
            tools=tools,
            return_directly=frozenset(self.return_directly),
            middleware=self._mw,
            limits=Limits(self.max_steps, self.max_step_policy, self.max_tool_output,
                          self.parallel_tool_calls),
            detection=Detection(self.detect_mode, self.detect_window),
            keep_think=self.keep_think,
            gen_model_input=self.gen_model_input,
            deferred_tools=tuple(self._deferred),
            output_key=self.output_key,
            metadata=dict(metadata or {}),
            session_values=session_values,
            model=model,
            call_tool=self._tool_io,
            system_hook=self._inject_catalog if self._skills is not None else None,
            client=client,
            on_self_heal=self._self_healed,
            checkpoint=checkpoint or self.checkpoint,
        )
        return apply_plan_hooks(plan) if plan_hooks.get() else plan

    def _self_healed(self) -> None:
        self.detect_mode = DRAIN

    async def run(self, input: Any = None, *, stream: bool = False, metadata: Mapping[str, Any] | None = None,
                  session_values: Mapping[str, Any] | None = None, path: tuple[str, ...] = (),
                  resume: Resume | None = None, checkpoint: CheckpointFn | None = None,
                  options: RunOptions | None = None) -> RunResult:
        """Run to the end and return the result. `stream=True` makes streaming model calls underneath.
        `resume` goes on from a checkpoint instead of `input`; `checkpoint` is awaited at safe points;
        `options` adds the caller's tools, tool choice and answer format (run_options.py)."""
        plan = await self.plan(metadata=metadata, session_values=session_values, checkpoint=checkpoint,
                               options=options)
        loop = ReactLoop(plan, streaming=stream, path=path, run_id=resume.run_id if resume else None)
        async for _ in loop.events(input, resume):
            pass
        assert loop.result is not None
        return loop.result

    async def stream(self, input: Any = None, *, metadata: Mapping[str, Any] | None = None,
                     session_values: Mapping[str, Any] | None = None, resume: Resume | None = None,
                     checkpoint: CheckpointFn | None = None, options: RunOptions | None = None
                     ) -> AsyncIterator[Event]:
        """Yield the run's events as they happen (streaming model calls)."""
        try:
            plan = await self.plan(metadata=metadata, session_values=session_values, checkpoint=checkpoint,
                                   options=options)
        except Exception as e:
            yield planning_error(self.name, e)
            raise
        loop = ReactLoop(plan, streaming=True, run_id=resume.run_id if resume else None)
        # aclosing: a caller that stops reading closes the run now, in its context (middleware cleans up)
        async with contextlib.aclosing(loop.events(input, resume)) as events:
            async for ev in events:
                yield ev

    def start(self, input: Any = None, *, stream: bool = True, metadata: Mapping[str, Any] | None = None,
              session_values: Mapping[str, Any] | None = None, resume: Resume | None = None,
              checkpoint: CheckpointFn | None = None, options: RunOptions | None = None) -> AgentRun:
        """Start a run in a task: iterate it for events, `cancel()` it, await `result()`."""
        make_plan = functools.partial(self.plan, metadata=metadata, session_values=session_values,
                                      checkpoint=checkpoint, options=options)
        return AgentRun(self.name, make_plan, input, stream, resume)

    async def resume(self, run_id: str, answers: Mapping[str, Any] | None = None, *, store: Any,
                     **kwargs: Any) -> RunResult:
        """Go on with a run saved in `store` (a chainreact.state Store: anything with `resume_run(agent,
        run_id, answers, **kwargs)`): an interrupted run with `answers` by question id, or one whose
        process died. Answers are checked before anything runs; `stream=True` as for `run`."""
        result: RunResult = await store.resume_run(self, run_id, dict(answers or {}), **kwargs)
        return result

    def resume_sync(self, run_id: str, answers: Mapping[str, Any] | None = None, *, store: Any,
                    **kwargs: Any) -> RunResult:
        """Blocking `resume()` for scripts: `store` is a `chainreact.state.SyncStore`, whose own loop runs
        the rest of the run (an async store's connections belong to the caller's loop, so it is refused)."""
        from ..errors import ConfigError

        pending = store.resume_run(self, run_id, dict(answers or {}), **kwargs)
        if inspect.isawaitable(pending):
            if inspect.iscoroutine(pending):
                pending.close()
            raise ConfigError("Agent.resume_sync(store=...) needs a chainreact.state.SyncStore; "
                              "with an async store, use `await agent.resume(...)`")
        result: RunResult = pending
        return result

    def run_sync(self, input: Any = None, **kwargs: Any) -> RunResult:
        """Blocking `run()` for scripts. Uses one background event loop per process, so connection pools
        survive between calls; don't call it from inside a running event loop."""
        return run_sync(self.run(input, **kwargs))

    def as_tool(self, name: str | None = None, description: str | None = None, *,
                input_schema: dict[str, Any] | None = None, full_history: bool = False,
                emit_internal_events: bool = False, timeout: float | None = None) -> Tool:
        """This agent as a tool of another agent (see as_tool.py); `timeout` in seconds."""
        from .as_tool import AgentTool

        return AgentTool(self, name=name, description=description, input_schema=input_schema,
                         full_history=full_history, emit_internal_events=emit_internal_events,
                         timeout=timeout)

    def __repr__(self) -> str:
        return f"<Agent {self.name!r} model={self.config.model!r}>"


def _validated_config(data: Mapping[str, Any]) -> AgentConfig:
    """`Agent(config={...})` is checked like a document, but strictly: a misspelt key is an error here
    (in Python a typo is a bug), naming the key, its path and the closest field."""
    import difflib

    from pydantic import BaseModel, ValidationError

    from ..errors import ConfigError

    try:
        cfg = AgentConfig.model_validate(dict(data))
    except ValidationError as e:
        problems = [f"config.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()]
        raise ConfigError("Agent(config=...): invalid configuration: " + "; ".join(problems[:5]),
                          errors=[(p.split(":", 1)[0], p.split(": ", 1)[1]) for p in problems]) from None
    unknown: list[str] = []

    def walk(model: BaseModel, path: str) -> None:
        for key in model.model_extra or {}:
            close = difflib.get_close_matches(key, list(type(model).model_fields), n=1)
            unknown.append(f"{path}.{key}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        for name in type(model).model_fields:
            value = getattr(model, name)
            for i, item in enumerate(value if isinstance(value, list) else [value]):
                if isinstance(item, BaseModel):
                    walk(item, f"{path}.{name}[{i}]" if isinstance(value, list) else f"{path}.{name}")

    walk(cfg, "config")
    if unknown:
        raise ConfigError(f"Agent(config=...): unknown field(s): {', '.join(unknown)}; the field names are "
                          "the document's (camelCase, e.g. maxStep, systemPrompt)",
                          errors=[(u.split(" ")[0], "unknown field") for u in unknown])
    return cfg


def _strings(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
