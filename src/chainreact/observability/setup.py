"""enable()/disable(): tracing for every Agent and RuleEngine, and the OTel SDK configured from the
standard environment.

enable() puts one OTelMiddleware into the agent layer's global middleware list (agents built afterwards
run it first) and one ChainTracer into the chain layer's global aspects (engines built afterwards). If
the application has not installed an SDK TracerProvider itself, enable() makes one: resource from
OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES (service.name defaults to "chainreact"), and an exporter per
OTEL_TRACES_EXPORTER (default "otlp"; "console"; "none"). The OTLP exporter comes from
`pip install opentelemetry-exporter-otlp` and reads OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, _PROTOCOL...
"""

from __future__ import annotations

import logging
import os
from typing import Any

from opentelemetry import trace

from ..agent import middleware as agent_middleware
from ..chains import aspects as chain_aspects
from .chains import ChainTracer
from .middleware import OTelMiddleware

log = logging.getLogger("chainreact.observability")


def _otlp_exporter() -> Any:
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        log.warning("OTEL_TRACES_EXPORTER=otlp but the OTLP exporter is not installed "
                    "(pip install opentelemetry-exporter-otlp): spans are not exported")
        return None
    return OTLPSpanExporter()


def configure_sdk() -> trace.TracerProvider:
    """The global TracerProvider: the application's if it set an SDK one, else a new one from OTEL_*."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    attrs = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: "chainreact"}
    provider = TracerProvider(resource=Resource.create(attrs))
    for name in (os.environ.get("OTEL_TRACES_EXPORTER") or "otlp").split(","):
        name = name.strip()
        exporter = (_otlp_exporter() if name == "otlp" else ConsoleSpanExporter() if name == "console"
                    else None)
        if exporter is not None:
            provider.add_span_processor(BatchSpanProcessor(exporter))
        elif name not in ("none", "otlp"):
            log.warning("OTEL_TRACES_EXPORTER=%s is not supported here (otlp, console, none)", name)
    trace.set_tracer_provider(provider)
    return provider


def enable(*, tracer_provider: trace.TracerProvider | None = None, capture_content: bool | None = None,
           provider_name: str = "openai") -> OTelMiddleware:
    """Trace every Agent and RuleEngine built from now on. Returns the agents' middleware (replacing an
    earlier enable()'s; the engines' ChainTracer is in chains.aspects.GLOBAL_ASPECTS).

    `tracer_provider`: where spans go (default: the global one, configured from OTEL_* when unset).
    `capture_content`: record message content (default CHAINREACT_OTEL_CONTENT=1)."""
    if tracer_provider is None:
        tracer_provider = configure_sdk()
    mw = OTelMiddleware(tracer_provider=tracer_provider, capture_content=capture_content,
                        provider_name=provider_name)
    disable()
    agent_middleware.GLOBAL_MIDDLEWARE.append(mw)
    chain_aspects.GLOBAL_ASPECTS.append(ChainTracer(tracer_provider=tracer_provider,
                                                    capture_content=capture_content))
    return mw


def disable() -> None:
    """Stop tracing agents and engines built from now on (those already built keep their tracing)."""
    agent_middleware.GLOBAL_MIDDLEWARE[:] = [
        m for m in agent_middleware.GLOBAL_MIDDLEWARE if not isinstance(m, OTelMiddleware)]
    chain_aspects.GLOBAL_ASPECTS[:] = [
        a for a in chain_aspects.GLOBAL_ASPECTS if not isinstance(a, ChainTracer)]
