"""OTelMiddleware: GenAI semantic-convention spans for agent runs, model calls and tool calls.

    invoke_agent {agent}            INTERNAL, one per run (before_agent .. after_agent / on_agent_error)
      chat {model}                  CLIENT, one per model attempt (wrap_model: retries and failovers each
                                    get their own span, a failed one with error status)
      execute_tool {tool}           INTERNAL, one per tool execution (wrap_tool_call)
        invoke_agent {sub-agent}    an agent used as a tool runs inside its tool's span

The run's span is made current in the run's context (OTel context + our ContextVar) in before_agent and
restored when the run ends, so model and tool spans, and a sub-agent's whole tree, nest under it without
any change to the loop. Parallel tool calls run in tasks that copy that context.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ..agent.interrupt import ToolInterrupt
from ..agent.middleware import AgentContext, Middleware, ModelFn, RunState, ToolCallInfo, ToolFn
from ..tools.base import ToolOutput
from ..types import ModelResponse, StreamItem
from ..version import __version__
from . import attributes as A
from .content import messages_json, output_json, to_json

if TYPE_CHECKING:
    from ..agent.result import RunResult
    from ..llm.request import ModelRequest

TRACER_NAME = "chainreact"


@dataclass(slots=True)
class _Run:
    span: Span
    otel_token: object
    run_id: str
    own_token: Token[_Run | None] | None = None
    model: str | None = None


_RUN: ContextVar[_Run | None] = ContextVar("chainreact_otel_run", default=None)


def content_from_env() -> bool:
    return os.environ.get("CHAINREACT_OTEL_CONTENT", "") not in ("", "0", "false")


class OTelMiddleware(Middleware):
    """Spans for every run of the agent it is given to: `Agent(..., middleware=[OTelMiddleware()])`.

    - tracer_provider: where spans go; default the global one (`opentelemetry.trace.set_tracer_provider`,
      or what `chainreact.observability.enable()` configured from the OTEL_* environment variables)
    - capture_content: record messages, tool arguments and results (default: CHAINREACT_OTEL_CONTENT=1)
    - provider_name: `gen_ai.provider.name`; chainreact speaks the OpenAI chat-completions protocol
    """

    durable = "worker"  # a run's span lives in one process: not in durable workflow code (wrap hooks only)

    def __init__(self, *, tracer_provider: trace.TracerProvider | None = None,
                 capture_content: bool | None = None, provider_name: str = "openai"):
        self.tracer = trace.get_tracer(TRACER_NAME, __version__, tracer_provider=tracer_provider)
        self.capture_content = content_from_env() if capture_content is None else capture_content
        self.provider_name = provider_name

    # -- the run -----------------------------------------------------------------------------------

    async def before_agent(self, ctx: AgentContext) -> None:
        attrs: dict[str, Any] = {A.OPERATION: "invoke_agent", A.PROVIDER: self.provider_name,
                                 A.SYSTEM: self.provider_name, A.AGENT_NAME: ctx.agent, A.RUN_ID: ctx.run_id}
        span = self.tracer.start_span(f"invoke_agent {ctx.agent}", kind=SpanKind.INTERNAL, attributes=attrs)
        run = _Run(span, otel_context.attach(trace.set_span_in_context(span)), ctx.run_id)
        run.own_token = _RUN.set(run)

    def _end_run(self) -> _Run | None:
        run = _RUN.get()
        if run is None:
            return None
        if run.own_token is not None:
            try:
                _RUN.reset(run.own_token)
            except ValueError:  # ended in another context than it started: leave that context alone
                _RUN.set(None)
        otel_context.detach(run.otel_token)  # type: ignore[arg-type]
        run.span.end()
        return run

    async def after_agent(self, state: RunState, result: RunResult) -> None:
        run = _RUN.get()
        if run is None or run.run_id != state.run_id:  # not ours (ended already: an outer run's span)
            return
        span = run.span
        usage = result.usage
        span.set_attribute(A.INPUT_TOKENS, usage.prompt_tokens)
        span.set_attribute(A.OUTPUT_TOKENS, usage.completion_tokens)
        span.set_attribute(A.STOP_REASON, result.stop_reason)
        span.set_attribute(A.STEPS, result.steps)
        if run.model:
            span.set_attribute(A.REQUEST_MODEL, run.model)
        if self.capture_content:
            span.set_attribute(A.OUTPUT_MESSAGES, to_json(
                [{"role": "assistant", "parts": [{"type": "text", "content": result.content}],
                  "finish_reason": result.stop_reason}]))
        self._end_run()

    async def on_agent_error(self, state: RunState | None, error: BaseException | None) -> None:
        run = _RUN.get()
        if run is None or (state is not None and run.run_id != state.run_id):
            return  # not ours: this run's span has ended already (closed after its answer)
        span = run.span
        if run.model:
            span.set_attribute(A.REQUEST_MODEL, run.model)
        if state is not None:
            span.set_attribute(A.STEPS, state.step)
        if error is None:  # interrupted: waits for answers; the resume is a run (and a span) of its own
            span.set_attribute(A.STOP_REASON, "interrupted")
        elif isinstance(error, GeneratorExit):  # the caller stopped reading the run's events
            span.set_attribute(A.STOP_REASON, "closed")
        elif _is_cancel(error):
            span.set_attribute(A.STOP_REASON, "cancelled")  # a cancelled run is not a failed one
        else:
            span.set_attribute(A.ERROR_TYPE, type(error).__name__)
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, str(error)))
        self._end_run()

    # -- one model attempt -------------------------------------------------------------------------

    def wrap_model(self, call: ModelFn) -> ModelFn:
        tracer, provider, content = self.tracer, self.provider_name, self.capture_content

        async def traced(req: ModelRequest) -> AsyncIterator[StreamItem]:
            run = _RUN.get()
            if run is not None and run.model is None:
                run.model = req.model
            span = tracer.start_span(f"chat {req.model}", kind=SpanKind.CLIENT,
                                     attributes=_request_attributes(req, provider))
            if content:
                span.set_attribute(A.INPUT_MESSAGES, messages_json(req.messages))
            try:
                async for item in call(req):
                    if isinstance(item, ModelResponse):
                        _response_attributes(span, item, content)
                    yield item
            except GeneratorExit:  # the caller stopped reading (cancel): not an error of the model
                raise
            except BaseException as e:
                _failed(span, e)
                raise
            finally:
                span.end()

        return traced

    # -- one tool execution ------------------------------------------------------------------------

    def wrap_tool_call(self, call: ToolFn, info: ToolCallInfo) -> ToolFn:
        tracer, content = self.tracer, self.capture_content

        async def traced(args: dict[str, Any]) -> ToolOutput:
            attrs: dict[str, Any] = {A.OPERATION: "execute_tool", A.TOOL_NAME: info.name,
                                     A.TOOL_CALL_ID: info.call_id, A.TOOL_TYPE: "function"}
            if info.tool.description:
                attrs[A.TOOL_DESCRIPTION] = info.tool.description
            if content:
                attrs[A.TOOL_ARGUMENTS] = to_json(args)
            # record_exception/set_status_on_exception off: we set them ourselves, once, with error.type.
            with tracer.start_as_current_span(f"execute_tool {info.name}", kind=SpanKind.INTERNAL,
                                              attributes=attrs, record_exception=False,
                                              set_status_on_exception=False) as span:
                try:
                    out = await call(args)
                except ToolInterrupt as ask:  # waits for an answer: not a failure
                    span.set_attribute(A.INTERRUPT, ask.kind)
                    raise
                except BaseException as e:
                    _failed(span, e)
                    raise
                if out.is_error:  # the tool answered with an error result (the model sees it)
                    span.set_attribute(A.ERROR_TYPE, "tool_error")
                    span.set_status(Status(StatusCode.ERROR, out.content[:200]))
                if content:
                    span.set_attribute(A.TOOL_RESULT, out.content)
                return out

        return traced


def _failed(span: Span, e: BaseException) -> None:
    """A model or tool call's span ended by `e`: its type recorded; a failure (not a cancel) as the error."""
    span.set_attribute(A.ERROR_TYPE, type(e).__name__)
    if not _is_cancel(e):
        span.record_exception(e)
        span.set_status(Status(StatusCode.ERROR, str(e)))


def _is_cancel(e: BaseException) -> bool:
    import asyncio

    return isinstance(e, asyncio.CancelledError) or type(e).__name__ == "_RunCancelled"


def _request_attributes(req: ModelRequest, provider: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {A.OPERATION: "chat", A.PROVIDER: provider, A.SYSTEM: provider,
                             A.REQUEST_MODEL: req.model, A.ATTEMPT: req.attempt, A.ENDPOINT: req.endpoint}
    p = req.params
    attrs[A.REQUEST_TEMPERATURE] = p.temperature
    attrs[A.REQUEST_TOP_P] = p.topP
    if p.maxTokens:
        attrs[A.REQUEST_MAX_TOKENS] = p.maxTokens
    url = urlsplit(req.endpoint)
    if url.hostname:
        attrs[A.SERVER_ADDRESS] = url.hostname
        port = url.port or (443 if url.scheme == "https" else 80)
        attrs[A.SERVER_PORT] = port
    return attrs


def _response_attributes(span: Span, resp: ModelResponse, content: bool) -> None:
    if resp.model:
        span.set_attribute(A.RESPONSE_MODEL, resp.model)
    if resp.finish_reason:
        span.set_attribute(A.FINISH_REASONS, [resp.finish_reason])
    if resp.usage is not None:
        span.set_attribute(A.INPUT_TOKENS, resp.usage.prompt_tokens)
        span.set_attribute(A.OUTPUT_TOKENS, resp.usage.completion_tokens)
    if content:
        span.set_attribute(A.OUTPUT_MESSAGES, output_json(resp.message, resp.finish_reason))
