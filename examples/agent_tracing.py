"""OpenTelemetry traces of a run: an agent with a tool and a sub-agent, its spans printed as a tree.

Needs the `otel` extra (pip install 'chainreact[otel]'). In an application you would not pass a
tracer provider: `chainreact.observability.enable()` (or CHAINREACT_OTEL=1) configures the OTel SDK from
the OTEL_* environment variables and sends the spans to OTEL_EXPORTER_OTLP_ENDPOINT (docs/observability.md).
"""

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from chainreact import Agent, tool
from chainreact.observability import OTelMiddleware
from chainreact.testing import FakeLLM


@tool
def get_weather(city: str) -> str:
    """The current weather of a city.

    Args:
        city: the city's name
    """
    return f"{city}: 21°C, clear"


def print_tree(spans: list[ReadableSpan]) -> None:
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in sorted(spans, key=lambda s: s.start_time or 0):
        children.setdefault(s.parent.span_id if s.parent else None, []).append(s)

    def show(span: ReadableSpan, depth: int) -> None:
        a = span.attributes or {}
        facts = [f"{k.removeprefix('gen_ai.')}={a[k]}" for k in
                 ("gen_ai.response.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
                  "gen_ai.tool.call.id") if k in a]
        print(f"{'  ' * depth}{span.name}  {' '.join(facts)}".rstrip())
        for child in children.get(span.context.span_id if span.context else None, []):
            show(child, depth + 1)

    for root in children.get(None, []):
        show(root, 0)


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = OTelMiddleware(tracer_provider=provider)  # capture_content=True would record the messages

    with FakeLLM([{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Lyon"}, "id": "w1"}]},
                  {"text": "Lyon is sunny."}]) as inner_llm, \
         FakeLLM([{"tool_calls": [{"name": "forecaster", "arguments": {"request": "Weather in Lyon?"},
                                   "id": "f1"}]},
                  {"text": "My forecaster says Lyon is sunny."}]) as outer_llm:
        forecaster = Agent(name="forecaster", description="Knows the weather.", url=inner_llm.url,
                           model="small-model", tools=[get_weather], middleware=[tracing])
        planner = Agent(name="planner", url=outer_llm.url, model="big-model",
                        tools=[forecaster.as_tool()], middleware=[tracing])
        print("answer:", planner.run_sync("Should I take an umbrella to Lyon?").content)

    print_tree(list(exporter.get_finished_spans()))


if __name__ == "__main__":
    main()
