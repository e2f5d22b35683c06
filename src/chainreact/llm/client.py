"""ModelClient: one model call across the primary endpoint, its retries, the breaker and the backups.

Layering of one call, outer to inner: failover (and the breaker) -> retries -> the caller's `wrap`
middleware -> one HTTP attempt. Every retry, failover and breaker transition goes to `on_event` and to
the `chainreact.llm` logger.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from chainreact.config import AgentConfig, Compat, ModelParams, Timeouts, is_local_url
from chainreact.errors import ChainreactError, ModelError
from chainreact.types import (
    BreakerEvent,
    ClientEvent,
    FailoverEvent,
    Message,
    ModelResponse,
    StreamItem,
)

from .breaker import CircuitBreaker, Transition, get_breaker
from .http import HttpEndpoint
from .images import resolve_images
from .request import ModelRequest
from .retry import ModelFn, RetryPolicy, Sleep, with_retries

log = logging.getLogger("chainreact.llm")

_PARAM_FIELDS = frozenset(ModelParams.model_fields)
# Errors after which a backup is tried: the endpoint is down (retries exhausted) or refuses us.
_FAILOVER_STATUS = frozenset({401, 403})


@dataclass(slots=True)
class EndpointSpec:
    """One configured endpoint: the primary or a failover backup (inherited fields already filled)."""

    url: str
    key: str = ""
    model: str = ""
    params: ModelParams = field(default_factory=lambda: ModelParams.model_validate({}))
    compat: Compat = field(default_factory=lambda: Compat.model_validate({}))
    http: HttpEndpoint | None = None  # created on first use (needs the running loop for its pool)


def merge_params(base: ModelParams, override: ModelParams | None) -> ModelParams:
    """A failover's params: only the fields the user set override the primary's."""
    if override is None:
        return base
    return base.model_copy(update={k: getattr(override, k) for k in override.model_fields_set
                                   if k in _PARAM_FIELDS})


class ModelClient:
    """The model client of one agent. See docs/endpoints.md.

    `clock` (monotonic seconds) drives the breaker; `sleep` and `rng` drive backoff; all injectable so
    tests need no real waiting.
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
    ) -> None:
        if not endpoints:
            raise ChainreactError("ModelClient needs at least one endpoint")
        self.endpoints = endpoints
        self.max_retries = max_retries
        self.stream_retry_mode = stream_retry_mode
        self.circuit_cooldown = circuit_cooldown or 60.0
        self.timeouts = timeouts or Timeouts()
        self.retry_policy = retry_policy or RetryPolicy()
        self._clock = clock or time.monotonic
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng or random.random
        self._image_specs = list(images or [])
        self._images: list[str] | None = None
        self._resolved = not any(is_local_url(e.url) for e in endpoints)
        self._resolve_lock: asyncio.Lock | None = None
        self._breaker: tuple[EndpointSpec, CircuitBreaker] | None = None

    @classmethod
    def from_config(
        cls,
        cfg: AgentConfig,
        *,
        clock: Callable[[], float] | None = None,
        sleep: Sleep | None = None,
        rng: Callable[[], float] | None = None,
        retry_policy: RetryPolicy | None = None,
    ) -> ModelClient:
        """Primary endpoint + failover backups, retries, breaker and timeouts from an AgentConfig.
        `${global.x}` templates in url/key/model must already be rendered."""
        primary = EndpointSpec(cfg.url, cfg.key, cfg.model, cfg.params, cfg.compat)
        specs = [primary]
        for fo in cfg.failover:
            params = merge_params(cfg.params, fo.params)
            compat = fo.compat or Compat.model_validate({})
            specs.append(EndpointSpec(fo.url, fo.key, fo.model or cfg.model, params, compat))
        return cls(specs, max_retries=cfg.maxRetries, stream_retry_mode=cfg.streamRetryMode,
                   circuit_cooldown=cfg.circuitCooldownSec or 60, images=cfg.images, timeouts=cfg.timeouts,
                   clock=clock, sleep=sleep, rng=rng, retry_policy=retry_policy)

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
        for spec in self.endpoints:
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
                                                 ep.compat.model_copy(update=user_set))
            self._resolved = True

    def _http(self, spec: EndpointSpec) -> HttpEndpoint:
        if spec.http is None:
            spec.http = HttpEndpoint(spec.url, spec.key, self.timeouts)
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
    ) -> AsyncIterator[StreamItem]:
        """One model call. With stream=True: TextChunk / ReasoningChunk / ToolCallChunk items as they
        arrive, then the complete ModelResponse; with stream=False only the ModelResponse.

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
                req = self._request(spec, messages, tools, tool_choice, stream, params_override)
                fn: ModelFn = self._http(spec).attempt
                if wrap is not None:
                    fn = wrap(fn)
                delivered = False
                try:
                    async for item in with_retries(fn, req, max_retries=self.max_retries,
                                                   mode=self.stream_retry_mode, policy=self.retry_policy,
                                                   sleep=self._sleep, rng=self._rng, report=report):
                        if isinstance(item, ModelResponse):
                            if is_primary and breaker is not None:
                                verdict = True
                                self._breaker_event(breaker, primary, breaker.success(probe), report)
                            yield item
                            return
                        delivered = True
                        yield item
                except ModelError as e:
                    down = e.retryable or e.status in _FAILOVER_STATUS
                    if is_primary and breaker is not None and not delivered:
                        verdict = True
                        tr = breaker.failure(probe, self._clock()) if down else breaker.abandon(probe)
                        self._breaker_event(breaker, primary, tr, report)
                    errors.append((spec.url, e))
                    nxt = plan[i + 1] if i + 1 < len(plan) else None
                    if delivered or not down or nxt is None:
                        raise self._final_error(errors) from e
                    log.warning("model endpoint %s failed (%s); failing over to %s", spec.url, e, nxt.url)
                    report(FailoverEvent(from_endpoint=spec.url, to_endpoint=nxt.url, error=str(e)))
        finally:
            if probe and not verdict and breaker is not None:
                self._breaker_event(breaker, primary, breaker.abandon(probe), report)

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
                            compat=spec.compat, images=self._images or [], extra=extra)

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


def _reporter(on_event: Callable[[ClientEvent], None] | None) -> Callable[[ClientEvent], None]:
    if on_event is None:
        return _ignore
    return on_event


def _ignore(_: ClientEvent) -> None:
    return None
