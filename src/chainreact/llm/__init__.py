"""The model client: OpenAI-compatible chat completions with retries, failover and a circuit breaker.

    client = ModelClient.from_config(cfg)
    async for item in client.call(messages, tools, stream=True):
        ...  # TextChunk | ReasoningChunk | ToolCallChunk, then the ModelResponse

See docs/endpoints.md.
"""

from .body import BodyParser, parse_body, response_items
from .breaker import CircuitBreaker, breaker_states, get_breaker, reset_breakers
from .client import EndpointSpec, ModelClient, merge_params
from .http import HttpEndpoint, parse_retry_after
from .parse import StreamAssembler, parse_completion
from .request import ModelRequest, build_body
from .retry import ModelFn, RetryPolicy
from .sse import SSEDecoder

__all__ = [
    "BodyParser", "CircuitBreaker", "EndpointSpec", "HttpEndpoint", "ModelClient", "ModelFn", "ModelRequest",
    "RetryPolicy", "SSEDecoder", "StreamAssembler", "breaker_states", "build_body", "get_breaker",
    "merge_params", "parse_body", "parse_completion", "parse_retry_after", "reset_breakers", "response_items",
]
