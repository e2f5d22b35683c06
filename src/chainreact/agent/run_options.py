"""What a caller adds to one run of an agent: tools the caller runs itself (external tools), the tool choice,
and an answer format (answer_format.py).

    options = RunOptions(external_tools([{"name": "get_weather", "parameters": {...}}]),
                         tool_choice="auto", answer=answer_format({"type": "json_object"}))
    run = agent.start(messages, options=options)

**External tools.** The model is offered them beside the agent's own tools. When it calls one, nothing
runs here: the step's other calls (the agent's own tools) run first, then the run stops like an interrupt
(interrupt.py): `stop_reason == "interrupted"`, and every question of `result.interruption` is of kind
`external` (`pending_external(result)` gives the calls). Whoever holds the run's checkpoint goes on with it
by answering each call with its result (the answer: the result's text; `{"content": str, "is_error":
bool}` marks an error): `Resume(..., answers={call id: result})`, or a store's `resume_run`. The same run
then continues with those results, and the model may call external tools again. This is how an OpenAI
client's own `tools` work against `chainreact serve` (server/client_tools.py), and what the AG-UI and A2A
faces build on.

**Tool choice.** OpenAI's `tool_choice`: `"none"` and `"auto"` hold for every model call of the run;
`"required"` and a named function (`{"type": "function", "function": {"name": ...}}`) only for the first
model call (of the run, or of a resumed segment), `"auto"` after it: a run forced to call a tool at every
step could never answer. (The OpenAI Agents SDK resets a forced choice after a tool call the same way.)

Options change only how this run's model is called and which tools it has (`RunOptions.apply`, from
`Agent.plan`); the loop is the same. `to_dict`/`from_dict` keep them with a run's checkpoint, so a run
resumed later (another request, another process) has the same tools and format.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import ConfigError
from ..tools.base import Tool, ToolContext, ToolOutput
from ..types import REPORTED, Message, ModelResponse, RetryEvent, StreamItem, ToolCall, Usage
from .answer_format import AnswerFormat, AnswerFormatError, format_from_dict
from .interrupt import ANSWER, ToolInterrupt

EXTERNAL = "external"  # the Question.kind of a call to an external tool
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CHOICES = ("none", "auto", "required")


class ExternalTool(Tool):
    """A tool the caller runs: offered to the model, never run here (see the module doc)."""

    def __init__(self, name: str, description: str = "", parameters: dict[str, Any] | None = None,
                 strict: bool | None = None):
        self.name = name
        self.description = description
        self.parameters = parameters if parameters is not None else {"type": "object", "properties": {}}
        self.strict = strict

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        if ANSWER in ctx.state:  # resumed: the caller's result
            return external_result(ctx.state[ANSWER])
        raise ToolInterrupt(f"{self.name} is the caller's tool: send its result", kind=EXTERNAL,
                            data={"tool": self.name, "arguments": args})

    def spec(self) -> dict[str, Any]:
        spec = super().spec()
        if self.strict is not None:
            spec["function"]["strict"] = self.strict
        return spec

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters,
                "strict": self.strict}


def external_result(answer: Any) -> ToolOutput:
    """A caller's result for an external call as the tool's output: text as is, `{"content", "is_error"}`
    as an error result when is_error is true, anything else as JSON."""
    if isinstance(answer, str):
        return ToolOutput(answer)
    if isinstance(answer, dict) and set(answer) <= {"content", "is_error"} and "content" in answer:
        content = answer["content"]
        text = content if isinstance(content, str) else orjson.dumps(content).decode()
        return ToolOutput(text, bool(answer.get("is_error")))
    return ToolOutput(orjson.dumps(answer).decode())


def external_tools(specs: Sequence[Any], where: str = "tools") -> list[ExternalTool]:
    """OpenAI function tool definitions as ExternalTools: each `{"type": "function", "function": {"name",
    "description"?, "parameters"?, "strict"?}}` (chat completions) or the same fields flat beside
    `"type": "function"` (the Responses API). ConfigError naming the entry and field that is wrong."""
    tools: list[ExternalTool] = []
    seen: set[str] = set()
    for i, spec in enumerate(specs):
        at = f"{where}[{i}]"
        if not isinstance(spec, dict) or spec.get("type", "function") != "function":
            kind = spec.get("type") if isinstance(spec, dict) else type(spec).__name__
            raise ConfigError(f"{at}: only function tools can be offered to the model, got {kind!r}")
        fn = spec.get("function", spec)
        if "function" in spec:
            at += ".function"
        if not isinstance(fn, dict):
            raise ConfigError(f"{at} must be an object with a 'name'")
        name = fn.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(f"{at}.name must be 1 to 64 letters, digits, '_' or '-', got {name!r}")
        if name in seen:
            raise ConfigError(f"{at}.name: two tools are named {name!r}")
        seen.add(name)
        desc = fn.get("description") or ""
        params = fn.get("parameters")
        strict = fn.get("strict")
        if not isinstance(desc, str):
            raise ConfigError(f"{at}.description must be a string")
        if params is not None and not isinstance(params, dict):
            raise ConfigError(f"{at}.parameters must be a JSON Schema object")
        if strict is not None and not isinstance(strict, bool):
            raise ConfigError(f"{at}.strict must be true or false")
        tools.append(ExternalTool(name, desc, params, strict))
    return tools


def check_tool_choice(choice: Any, names: Sequence[str], where: str = "tool_choice") -> None:
    """ConfigError unless `choice` is none/auto/required or names one of `names` as a function."""
    if choice is None or choice in _CHOICES:
        return
    if isinstance(choice, dict) and choice.get("type") == "function":
        fn = choice.get("function", choice)  # chat: {"function": {"name"}}; Responses: {"name"}
        name = fn.get("name") if isinstance(fn, dict) else None
        if name in names:
            return
        raise ConfigError(f"{where} names the function {name!r}, which is not among the tools "
                          f"({', '.join(names) or 'none'})")
    raise ConfigError(f"{where} must be none, auto, required or {{\"type\": \"function\", \"function\": "
                      f"{{\"name\": ...}}}}, got {choice!r}")


def chat_tool_choice(choice: Any) -> Any:
    """A tool choice in the chat completions form (the Responses API names the function flat)."""
    if isinstance(choice, dict) and choice.get("type") == "function" and "function" not in choice:
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice


@dataclass(frozen=True, slots=True)
class RunOptions:
    external: tuple[ExternalTool, ...] = ()
    tool_choice: str | dict[str, Any] | None = None
    answer: AnswerFormat | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # the caller's own JSON, kept with the run

    def apply(self, tools: tuple[Tool, ...], model: Any) -> tuple[tuple[Tool, ...], Any]:
        """The run's tools and model call with these options (Agent.plan). ConfigError when an external
        tool has the name of one of the agent's own tools."""
        own = {t.name for t in tools}
        clash = sorted(own & {t.name for t in self.external})
        if clash:
            raise ConfigError(f"tools: {', '.join(map(repr, clash))} is already a tool of the agent; give "
                              "the caller's tool another name")
        if self.tool_choice is None and self.answer is None:
            return (*tools, *self.external), model
        return (*tools, *self.external), RunModel(model, self.tool_choice, self.answer)

    def to_dict(self) -> dict[str, Any]:
        return {"external": [t.to_dict() for t in self.external], "tool_choice": self.tool_choice,
                "answer": self.answer.to_dict() if self.answer is not None else None, "extra": self.extra}

    @classmethod
    def from_dict(cls, data: Any) -> RunOptions | None:
        if not isinstance(data, dict):
            return None
        tools = tuple(ExternalTool(t["name"], t.get("description") or "", t.get("parameters"),
                                   t.get("strict"))
                      for t in data.get("external") or () if isinstance(t, dict) and t.get("name"))
        return cls(tools, data.get("tool_choice"), format_from_dict(data.get("answer")),
                   dict(data.get("extra") or {}))


def pending_external(result: Any) -> list[ToolCall] | None:
    """The external calls an interrupted run waits on, when it waits on nothing else; otherwise None."""
    intr = getattr(result, "interruption", None)
    if intr is None or not intr.questions or any(q.kind != EXTERNAL for q in intr.questions):
        return None
    waiting = {q.id for q in intr.questions}
    return [c for c in intr.pending if c.id in waiting]


class RunModel:
    """`plan.model` with a run's tool choice and answer format (see the module docs)."""

    __slots__ = ("answer", "calls", "choice", "model")

    def __init__(self, model: Any, choice: str | dict[str, Any] | None, answer: AnswerFormat | None):
        self.model, self.choice, self.answer = model, choice, answer
        self.calls = 0

    def __call__(self, messages: list[Message], tools: list[dict[str, Any]] | None, *, stream: bool,
                 on_event: Callable[[Any], None]) -> AsyncGenerator[StreamItem, None]:
        choice = self.choice
        if self.calls > 0 and choice not in (None, "none", "auto"):
            choice = "auto"  # a forced choice holds for the first call only
        self.calls += 1
        return self._call(messages, tools, stream, on_event, chat_tool_choice(choice))

    async def _call(self, messages: list[Message], tools: list[dict[str, Any]] | None, stream: bool,
                    on_event: Callable[[Any], None], choice: Any) -> AsyncGenerator[StreamItem, None]:
        fmt = self.answer
        override = fmt.params() if fmt is not None else None
        usage: Usage | None = None
        attempt = 1
        while True:
            response: ModelResponse | None = None
            async with aclosing(self.model(messages, tools, stream=stream, on_event=on_event,
                                           tool_choice=choice, params_override=override)) as items:
                async for item in items:
                    if isinstance(item, ModelResponse):
                        response = item
                    else:
                        yield item
            assert response is not None, "model call ended without a response"
            if response.usage is not None:
                usage = usage or Usage()
                usage.add(response.usage)
            msg = response.message
            if fmt is None or msg.tool_calls:
                response.usage = usage
                yield response
                return
            text, problems = fmt.check(msg.text)
            if not problems or attempt > fmt.retries:
                if problems and fmt.strict:
                    raise AnswerFormatError(problems, attempt)
                if text != msg.text:
                    msg.content = text
                response.usage = usage
                yield response
                return
            why = "; ".join(problems[:3])
            on_event(RetryEvent(endpoint=response.endpoint or "", attempt=attempt, delay=0.0,
                                error=f"the answer does not match the response format: {why}",
                                error_type=AnswerFormatError.__name__))
            yield REPORTED  # handed on now, before the re-ask's call
            attempt += 1
            messages = [*messages, msg, Message("user", fmt.reask(problems))]
