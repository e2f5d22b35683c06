"""OpenTelemetry traces of agent runs (GenAI semantic conventions) and chain nodes: docs/observability.md.

Needs the `otel` extra (`pip install 'chainreact[otel]'`). Off by default; nothing here is imported by
`import chainreact`.

    Agent(..., middleware=[OTelMiddleware()])      # one agent
    chainreact.observability.enable()              # every agent built afterwards (or CHAINREACT_OTEL=1)
"""

from __future__ import annotations

try:
    import opentelemetry.trace  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError("chainreact.observability needs OpenTelemetry: pip install 'chainreact[otel]' "
                      "(opentelemetry-api and opentelemetry-sdk)") from e

from .middleware import OTelMiddleware
from .setup import configure_sdk, disable, enable

__all__ = ["OTelMiddleware", "configure_sdk", "disable", "enable"]
