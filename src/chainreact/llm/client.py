"""ModelClient: one model call across the primary endpoint, its retries, the breaker and the backups.

Layering of one call, outer to inner: failover (and the breaker) -> retries -> the caller's `wrap`
middleware -> one HTTP attempt. Every retry, failover and breaker transition goes to `on_event` and to
the `chainreact.llm` logger. After the configured backups, `get_failover_model` may name more.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from chainreact.config import (
    AgentConfig,
    Compat,
    FailoverEndpoint,
    ModelParams,
    Timeouts,
    is_local_url,
    with_default_endpoint,
)
from chainreact.errors import ChainreactError, ConfigError, ModelError
from chainreact.types import (
    REPORTED,
    BreakerEvent,
    ClientEvent,
    FailoverEvent,
    Message,
    ModelResponse,
    StreamItem,
)

from .breaker import CircuitBreaker, Transition, get_breaker
from .decode import MAX_RESPONSE_BYTES
from .http import HttpEndpoint
from .images import resolve_images
from .request import ModelRequest
from .retry import ModelFn, RetryPolicy, Sleep, with_retries

log = logging.getLogger("chainreact.llm")

_PARAM_FIELDS = frozenset(ModelParams.model_fields)
# Errors after which a backup is tried: the endpoint is down (retries exhausted) or refuses us, or it
# redirects the request elsewhere (refused: see HttpEndpoint._send).
_FAILOVER_STATUS = frozenset({401, 403, 301, 302, 303, 307, 308})
DEFAULT_TOTAL = 600.0
MAX_DYNAMIC_FAILOVERS = 4  # get_failover_model is asked at most this often per call
ErrorPredicate = Callable[[ModelError], bool]


@dataclass(slots=True)
class EndpointSpec:
    """One configured endpoint: the primary or a failover backup (inherited fields already filled)."""

    url: str
    key: str = ""
    model: str = ""
    params: ModelParams = field(default_factory=lambda: ModelParams.model_validate({}))
    compat: Compat = field(default_factory=lambda: Compat.model_validate({}))
    http: HttpEndpoint | None = None  # created on first use (needs the running loop for its pool)
    local: bool = False  # the embedded model's server (resolved from url "" / "local")


def merge_params(base: ModelParams, override: ModelParams | None) -> ModelParams:
    """A failover's params: only the fields the user set override the primary's."""
    if override is None:
        return base
    return base.model_copy(update={k: getattr(override, k) for k in override.model_fields_set
                                   if k in _PARAM_FIELDS})


class ModelClient:
    """The model client of one agent. See docs/endpoints.md.

    `clock` (monotonic seconds) drives the breaker and the `timeouts.total` budget; `sleep` and `rng`
    drive backoff; all injectable so tests need no real waiting.

    Hooks (each optional; get_failover_model may be async; see docs/endpoints.md, "Retry and failover
    hooks"):
    - should_retry(error) -> bool: retry this failed attempt? (default: `error.retryable`)
    - should_failover(error) -> bool: give up on this endpoint and try the next one? (default: retries
      exhausted on a retryable error, or 401/403, or a refused redirect)
    - get_failover_model(error) -> ModelClient | EndpointSpec | FailoverEndpoint | dict | None: asked
      when the configured endpoints are used up and should_failover agreed; None stops. A ModelClient
      runs with its own retries and backups, an endpoint with this client's retries.
    """

    def __init__(
        self,
        endpoints: list[EndpointSpec],
        *,
        max_retries: int = 3,
        stream_retry_mode: str = "off",
        circuit_cooldown: float = 60.0,
        images: list[str] | None = None,
        timeouts: Timeouts | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Sleep | None = None,
        rng: Callable[[], float] | None = None,
        retry_policy: RetryPolicy | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        should_retry: ErrorPredicate | None = None,
        should_failover: ErrorPredicate | None = None,
        get_failover_model: Callable[[ModelError], Any] | None = None,
        max_connections: int = 0,
    ) -> None:
        if not endpoints:
            raise ChainreactError("ModelClient needs at least one endpoint")
        self.endpoints = endpoints
        self.max_retries = max_retries
        self.stream_retry_mode = stream_retry_mode
        self.circuit_cooldown = circuit_cooldown or 60.0
        self.timeouts = timeouts or Timeouts()
        self.total = getattr(self.timeouts, "total", 0.0) or DEFAULT_TOTAL
        self.retry_policy = retry_policy or RetryPolicy()
        self.max_response_bytes = max_response_bytes
        self.max_connections = max_connections  # per endpoint, per process (llm/pool.py); 0 = the default
        self.should_retry = should_retry
        self.should_failover = should_failover
        self.get_failover_model = get_failover_model
        self._clock = clock or time.monotonic
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng or random.random
        self._image_specs = list(images or [])
        self._images: list[str] | None = None
        self._resolved = not any(is_local_url(e.url) for e in endpoints)
        self._resolve_lock: asyncio.Lock | None = None
        self._breaker: tuple[EndpointSpec, CircuitBreaker] | None = None
        self._dynamic: dict[tuple[str, str, str], EndpointSpec] = {}  # from get_failover_model

    @classmethod
    def from_config(
        cls,
        cfg: AgentConfig,
        *,
        clock: Callable[[], float] | None = None,
        sleep: Sleep | None = None,
        rng: Callable[[], float] | None = None,
        retry_policy: RetryPolicy | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        should_retry: ErrorPredicate | None = None,
        should_failover: ErrorPredicate | None = None,
        get_failover_model: Callable[[ModelError], Any] | None = None,
    ) -> ModelClient:
        """Primary endpoint + failover backups, retries, breaker and timeouts from an AgentConfig.
        `${global.x}` templates in url/key/model must already be rendered. A config without `url` takes
        `OPENAI_BASE_URL` / `OPENAI_API_KEY` when set (config/endpoint.py), else the embedded model."""
        cfg = with_default_endpoint(cfg)
        primary = EndpointSpec(cfg.url, cfg.key, cfg.model, cfg.params, cfg.compat)
        specs = [primary]
        for fo in cfg.failover:
            specs.append(_backup_spec(fo, primary))
        return cls(specs, max_retries=cfg.maxRetries, stream_retry_mode=cfg.streamRetryMode,
                   circuit_cooldown=cfg.circuitCooldownSec or 60, images=cfg.images, timeouts=cfg.timeouts,
                   clock=clock, sleep=sleep, rng=rng, retry_policy=retry_policy,
                   max_response_bytes=max_response_bytes, should_retry=should_retry,
                   should_failover=should_failover, get_failover_model=get_failover_model,
                   max_connections=cfg.maxConnections)

    # -- state ---------------------------------------------------------------------------------------

    @property
    def breaker(self) -> CircuitBreaker | None:
        """The primary's breaker (None without failover, or before a local primary is resolved): one per
        (url, model, key, circuit_cooldown), see breaker.py."""
        if len(self.endpoints) < 2 or is_local_url(self.endpoints[0].url):
            return None
        p = self.endpoints[0]
        if self._breaker is None or self._breaker[0] is not p:
            self._breaker = (p, get_breaker(p.url, p.model, self.circuit_cooldown, key=p.key))
        return self._breaker[1]

    async def aclose(self) -> None:
        for spec in [*self.endpoints, *self._dynamic.values()]:
            if spec.http is not None:
                await spec.http.aclose()
                spec.http = None

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- resolution ----------------------------------------------------------------------------------

    async def _resolve(self) -> None:
        """Lazily resolve the embedded model's endpoint(s) and the images (file reads) once."""
        if self._images is None:
            self._images = resolve_images(self._image_specs) if self._image_specs else []
        if self._resolved:
            return
        if self._resolve_lock is None:
            self._resolve_lock = asyncio.Lock()
        async with self._resolve_lock:
            if self._resolved:
                return
            from chainreact.local import get_local_endpoint  # heavy and optional: only when used

            for i, spec in enumerate(self.endpoints):
                if not is_local_url(spec.url):
                    continue
                ep = await get_local_endpoint()
                user_set = {k: getattr(spec.compat, k) for k in spec.compat.model_fields_set}
                self.endpoints[i] = EndpointSpec(ep.url, spec.key, spec.model or ep.model, spec.params,
                                                 ep.compat.model_copy(update=user_set), local=True)
            self._resolved = True

    def _http(self, spec: EndpointSpec) -> HttpEndpoint:
        if spec.http is None:
            spec.http = HttpEndpoint(spec.url, spec.key, self.timeouts,
                                     max_response_bytes=self.max_response_bytes,
                                     max_connections=self.max_connections)
        return spec.http

    # -- calls ---------------------------------------------------------------------------------------

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        *,
        tool_choice: str | dict[str, Any] | None = None,
        on_event: Callable[[ClientEvent], None] | None = None,
        wrap: Callable[[ModelFn], ModelFn] | None = None,
        params_override: dict[str, Any] | None = None,
    ) -> ModelResponse:
        """One non-streaming call; the parsed response."""
        result: ModelResponse | None = None
        async for item in self.call(messages, tools, stream=False, tool_choice=tool_choice, on_event=on_event,
                                    wrap=wrap, params_override=params_override):
            if isinstance(item, ModelResponse):
                result = item
        assert result is not None
        return result

    async def call(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        *,
        stream: bool,
        tool_choice: str | dict[str, Any] | None = None,
        on_event: Callable[[ClientEvent], None] | None = None,
        wrap: Callable[[ModelFn], ModelFn] | None = None,
        params_override: dict[str, Any] | None = None,
    ) -> AsyncGenerator[StreamItem, None]:
        """One model call. With stream=True: TextChunk / ReasoningChunk / ToolCallChunk items as they
        arrive, then the complete ModelResponse; with stream=False only the ModelResponse. With
        `on_event`, a `Reported` item follows each retry and failover given to it (pass the event on).

        params_override: ModelParams fields (camelCase, e.g. {"temperature": 0}) replace the endpoint's
        params for this call; other keys are merged into the request body like extraFields.
        Raises ModelError (EmptyResponseError, MalformedResponseError) once every endpoint failed.
        """
        await self._resolve()
        report = _reporter(on_event)
        endpoints = self.endpoints
        primary = endpoints[0]
        breaker = self.breaker
        probe = False
        plan = list(endpoints)
        if breaker is not None:
            decision, tr = breaker.acquire(self._clock())
            self._breaker_event(breaker, primary, tr, report)
            probe = decision == "probe"
            if decision == "skip":
                plan = plan[1:]
                log.info("model endpoint %s: circuit open, using %s", primary.url, plan[0].url)
                report(FailoverEvent(from_endpoint=primary.url, to_endpoint=plan[0].url,
                                     error="circuit breaker open for the primary endpoint"))
        errors: list[tuple[str, ModelError]] = []
        verdict = False  # whether the probe got its success/failure verdict
        try:
            for i, spec in enumerate(plan):
                is_primary = spec is primary
                delivered = False
                try:
                    # aclosing: the endpoint's generator is left at its response; closed here, not by the
                    # GC (whose finalizer hook costs a loop wake-up and a task per call).
                    async with aclosing(self._endpoint_call(spec, messages, tools, tool_choice, stream,
                                                            params_override, wrap, report)) as items:
                        async for item in items:
                            if isinstance(item, ModelResponse):
                                if is_primary and breaker is not None:
                                    verdict = True
                                    self._breaker_event(breaker, primary, breaker.success(probe), report)
                                if spec.local and spec.model:  # llama.cpp names its GGUF file's path
                                    item.model = spec.model
                                yield item
                                return
                            if item is REPORTED:  # a retry was reported (not part of the answer)
                                if on_event is not None:
                                    yield item
                                continue
                            delivered = True
                            yield item
                except ModelError as e:
                    down = self._down(e)
                    if is_primary and breaker is not None and not delivered:
                        verdict = True
                        tr = breaker.failure(probe, self._clock()) if down else breaker.abandon(probe)
                        self._breaker_event(breaker, primary, tr, report)
                    errors.append((spec.url, e))
                    if delivered or not down:
                        raise self._final_error(errors) from e
                    nxt = plan[i + 1] if i + 1 < len(plan) else None
                    if nxt is None:
                        break
                    log.warning("model endpoint %s failed (%s); failing over to %s", spec.url, e, nxt.url)
                    report(FailoverEvent(from_endpoint=spec.url, to_endpoint=nxt.url, error=str(e)))
                    if on_event is not None:
                        yield REPORTED
        finally:
            if probe and not verdict and breaker is not None:
                self._breaker_event(breaker, primary, breaker.abandon(probe), report)
        if self.get_failover_model is not None:
            async for item in self._dynamic_failover(errors, messages, tools, tool_choice, stream,
                                                     params_override, wrap, on_event, report):
                yield item
            return
        raise self._final_error(errors) from errors[-1][1]

    def _down(self, e: ModelError) -> bool:
        """Whether this error moves the call on to the next endpoint (and trips the primary's breaker)."""
        if self.should_failover is not None:
            return bool(self.should_failover(e))
        return e.retryable or e.status in _FAILOVER_STATUS

    def _endpoint_call(
        self,
        spec: EndpointSpec,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | dict[str, Any] | None,
        stream: bool,
        params_override: dict[str, Any] | None,
        wrap: Callable[[ModelFn], ModelFn] | None,
        report: Callable[[ClientEvent], None],
    ) -> AsyncGenerator[StreamItem, None]:
        """One endpoint with its retries, inside its own `timeouts.total` budget."""
        req = self._request(spec, messages, tools, tool_choice, stream, params_override)
        fn: ModelFn = self._http(spec).attempt
        if wrap is not None:
            fn = wrap(fn)
        return with_retries(fn, req, max_retries=self.max_retries, mode=self.stream_retry_mode,
                            policy=self.retry_policy, sleep=self._sleep, rng=self._rng, report=report,
                            should_retry=self.should_retry, deadline=self._clock() + self.total,
                            clock=self._clock)

    async def _dynamic_failover(
        self,
        errors: list[tuple[str, ModelError]],
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | dict[str, Any] | None,
        stream: bool,
        params_override: dict[str, Any] | None,
        wrap: Callable[[ModelFn], ModelFn] | None,
        on_event: Callable[[ClientEvent], None] | None,
        report: Callable[[ClientEvent], None],
    ) -> AsyncIterator[StreamItem]:
        """The configured endpoints are used up: ask get_failover_model for more, until it says None."""
        assert self.get_failover_model is not None
        for _ in range(MAX_DYNAMIC_FAILOVERS):
            last_url, last = errors[-1]
            target = self.get_failover_model(last)
            if inspect.isawaitable(target):
                target = await target
            if target is None:
                break
            items: AsyncGenerator[StreamItem, None]
            if isinstance(target, ModelClient):
                name = target.endpoints[0].url
                items = target.call(messages, tools, stream=stream, tool_choice=tool_choice,
                                    on_event=on_event, wrap=wrap, params_override=params_override)
            else:
                spec = self._dynamic_spec(target)
                name = spec.url
                items = self._endpoint_call(spec, messages, tools, tool_choice, stream, params_override, wrap,
                                            report)
            log.warning("model endpoint %s failed (%s); failing over to %s (get_failover_model)", last_url,
                        last, name)
            report(FailoverEvent(from_endpoint=last_url, to_endpoint=name, error=str(last)))
            if on_event is not None:
                yield REPORTED
            delivered = False
            try:
                async with aclosing(items):
                    async for item in items:
                        if isinstance(item, ModelResponse):
                            yield item
                            return
                        if item is REPORTED:
                            if on_event is not None:
                                yield item
                            continue
                        delivered = True
                        yield item
            except ModelError as e:
                errors.append((name, e))
                if delivered or not self._down(e):
                    raise self._final_error(errors) from e
        raise self._final_error(errors) from errors[-1][1]

    def _dynamic_spec(self, target: Any) -> EndpointSpec:
        if isinstance(target, EndpointSpec):
            spec = target
        else:
            if isinstance(target, dict):
                try:
                    target = FailoverEndpoint.model_validate(target)
                except ValueError as e:
                    raise ConfigError(f"get_failover_model returned an invalid endpoint: {e}") from None
            if not isinstance(target, FailoverEndpoint):
                raise ConfigError("get_failover_model must return a ModelClient, an EndpointSpec, a Failover"
                                  f"Endpoint, a dict of its fields or None, not {type(target).__name__}")
            spec = _backup_spec(target, self.endpoints[0])
        key = (spec.url, spec.key, spec.model)
        known = self._dynamic.get(key)
        if known is None:
            self._dynamic[key] = spec  # kept (with its warm pool) for the next call; closed by aclose
            return spec
        known.params, known.compat = spec.params, spec.compat
        return known

    def _request(
        self,
        spec: EndpointSpec,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | dict[str, Any] | None,
        stream: bool,
        override: dict[str, Any] | None,
    ) -> ModelRequest:
        params = spec.params
        extra: dict[str, Any] = {}
        if override:
            upd = {k: v for k, v in override.items() if k in _PARAM_FIELDS}
            extra = {k: v for k, v in override.items() if k not in _PARAM_FIELDS}
            if upd:
                params = ModelParams.model_validate({**params.model_dump(exclude_unset=False), **upd})
        return ModelRequest(messages=messages, tools=tools or None, tool_choice=tool_choice, stream=stream,
                            model=spec.model, params=params, endpoint=spec.url.rstrip("/"),
                            compat=spec.compat, images=self._images or [], extra=extra, timeout=self.total)

    def _breaker_event(self, breaker: CircuitBreaker, spec: EndpointSpec, tr: Transition | None,
                       report: Callable[[ClientEvent], None]) -> None:
        if tr is None:
            return
        level = logging.INFO if tr.state != "open" else logging.WARNING
        log.log(level, "circuit breaker %s: %s -> %s (cooldown %.0fs)", breaker.key, tr.previous, tr.state,
                tr.cooldown)
        report(BreakerEvent(endpoint=spec.url, state=tr.state, previous=tr.previous, cooldown=tr.cooldown))

    @staticmethod
    def _final_error(errors: list[tuple[str, ModelError]]) -> ModelError:
        last = errors[-1][1]
        if len(errors) == 1:
            return last
        summary = "; ".join(f"[{url}] {e}" for url, e in errors)
        return type(last)(f"all {len(errors)} model endpoints failed: {summary}", status=last.status,
                          endpoint=last.endpoint, retryable=False, retry_after=last.retry_after,
                          body=last.body)


def _backup_spec(fo: FailoverEndpoint, primary: EndpointSpec) -> EndpointSpec:
    """A backup endpoint: model and params inherited from the primary where not given; its own compat."""
    params = merge_params(primary.params, fo.params)
    compat = fo.compat or Compat.model_validate({})
    return EndpointSpec(fo.url, fo.key, fo.model or primary.model, params, compat)


def _reporter(on_event: Callable[[ClientEvent], None] | None) -> Callable[[ClientEvent], None]:
    if on_event is None:
        return _ignore
    return on_event


def _ignore(_: ClientEvent) -> None:
    return None
