"""GET /metrics: Prometheus text format (prometheus-client), one registry per app.

    chainreact_http_requests_total{route,method,status}       requests, by route template
    chainreact_http_request_duration_seconds{route,method}    until the last byte (streams count whole)
    chainreact_runs_total{agent,outcome}                      ok|error|cancelled|interrupted|closed
    chainreact_run_duration_seconds{agent}
    chainreact_model_calls_total{model,outcome}               one per attempt (retries, failovers)
    chainreact_model_call_duration_seconds{model}
    chainreact_tool_calls_total{tool,outcome}                 ok|error|exception|cancelled|interrupted
    chainreact_tool_call_duration_seconds{tool}
    chainreact_errors_total{where}                            http (5xx) | run | model | tool
    chainreact_circuit_breaker_state{breaker,state}           1 for the breaker's current state, else 0
    chainreact_circuit_breaker_trips_total{breaker}
    chainreact_catalog_entries{kind}, chainreact_catalog_problems, chainreact_catalog_reloads_total{outcome}

Runs, model calls and tool calls are those of the served agents (the catalog's observer hook,
server/ops_stats.py); agents inside chain nodes are not counted. With a keys file, /metrics needs the
`read` permission.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from starlette.responses import Response

from .catalog import Catalog
from .ops_http import RequestInfo

# Seconds: from a cached answer to a long agent run.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
STATES = ("closed", "open", "half_open")


class ServerMetrics:
    """The app's metrics: an HTTP request callback (ops_http) and a run observer (ops_stats)."""

    def __init__(self, catalog: Catalog):
        self.registry = r = CollectorRegistry(auto_describe=True)
        self.requests = Counter("chainreact_http_requests", "HTTP requests", ["route", "method", "status"],
                                registry=r)
        self.request_seconds = Histogram("chainreact_http_request_duration_seconds",
                                         "HTTP request duration (streams until their last byte)",
                                         ["route", "method"], buckets=_BUCKETS, registry=r)
        self.runs = Counter("chainreact_runs", "agent runs", ["agent", "outcome"], registry=r)
        self.run_seconds = Histogram("chainreact_run_duration_seconds", "agent run duration", ["agent"],
                                     buckets=_BUCKETS, registry=r)
        self.model_calls = Counter("chainreact_model_calls", "model call attempts", ["model", "outcome"],
                                   registry=r)
        self.model_seconds = Histogram("chainreact_model_call_duration_seconds", "model call duration",
                                       ["model"], buckets=_BUCKETS, registry=r)
        self.tool_calls = Counter("chainreact_tool_calls", "tool executions", ["tool", "outcome"], registry=r)
        self.tool_seconds = Histogram("chainreact_tool_call_duration_seconds", "tool execution duration",
                                      ["tool"], buckets=_BUCKETS, registry=r)
        self.errors = Counter("chainreact_errors", "errors: HTTP 5xx answers, failed runs, model calls, "
                              "tool calls", ["where"], registry=r)
        self.reloads = Counter("chainreact_catalog_reloads", "files reloaded by the folder watcher",
                               ["outcome"], registry=r)
        r.register(_StateCollector(catalog))
        # Labelled children by (metric, label values): `labels()` validates and locks on every call,
        # ~18 times per streamed request; the children never change once made.
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    # -- ops_http callback -------------------------------------------------------------------------

    def on_request(self, info: RequestInfo) -> None:
        self._child(self.requests, info.route, info.method, str(info.status)).inc()
        self._child(self.request_seconds, info.route, info.method).observe(info.seconds)
        if info.status >= 500:
            self._child(self.errors, "http").inc()

    # -- ops_stats.RunObserver ---------------------------------------------------------------------

    def run_ended(self, agent: str, outcome: str, seconds: float) -> None:
        self._child(self.runs, agent, outcome).inc()
        self._child(self.run_seconds, agent).observe(seconds)
        if outcome == "error":
            self._child(self.errors, "run").inc()

    def model_call(self, model: str, outcome: str, seconds: float) -> None:
        self._child(self.model_calls, model, outcome).inc()
        self._child(self.model_seconds, model).observe(seconds)
        if outcome == "error":
            self._child(self.errors, "model").inc()

    def tool_call(self, tool: str, outcome: str, seconds: float) -> None:
        self._child(self.tool_calls, tool, outcome).inc()
        self._child(self.tool_seconds, tool).observe(seconds)
        if outcome in ("error", "exception"):
            self._child(self.errors, "tool").inc()


class _StateCollector:
    """Read at scrape time: circuit breakers (process-wide, llm/breaker.py) and the catalog."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog

    def describe(self) -> list[Metric]:
        return []  # nothing to check for name clashes up front: the names are fixed above

    def collect(self) -> Iterator[Metric]:
        from ..llm.breaker import breaker_states

        state = GaugeMetricFamily("chainreact_circuit_breaker_state", "1 for the breaker's current state",
                                  labels=["breaker", "state"])
        trips = CounterMetricFamily("chainreact_circuit_breaker_trips", "times the breaker opened",
                                    labels=["breaker"])
        for name, snap in breaker_states().items():
            for s in STATES:
                state.add_metric([name, s], 1.0 if snap["state"] == s else 0.0)
            trips.add_metric([name], float(snap["trips"]))  # type: ignore[arg-type]
        yield state
        yield trips
        entries = GaugeMetricFamily("chainreact_catalog_entries", "served agents, chains and flows",
                                    labels=["kind"])
        kinds: dict[str, int] = {}
        for e in list(self.catalog.entries.values()):
            kinds[e.kind] = kinds.get(e.kind, 0) + 1
        for kind in sorted({"agent", "chain", *kinds}):
            entries.add_metric([kind], float(kinds.get(kind, 0)))
        yield entries
        yield GaugeMetricFamily("chainreact_catalog_problems", "files that did not load",
                                value=float(len(self.catalog.problems)))


def exposition(registry: CollectorRegistry) -> Response:
    """The answer to GET /metrics (routed by server/ops.py, so that this module stays below the server
    context, which holds a ServerMetrics)."""
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_PLAIN_0_0_4)
