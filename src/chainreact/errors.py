"""Typed exceptions. Each message names the field, file or endpoint involved and what to do."""

from __future__ import annotations


class ChainreactError(Exception):
    """Base of every error chainreact raises on purpose."""


class ConfigError(ChainreactError):
    """A configuration document is invalid. `errors` holds (json_path, message) pairs."""

    def __init__(self, message: str, *, source: str | None = None,
                 errors: list[tuple[str, str]] | None = None):
        self.source = source
        self.errors = errors or []
        super().__init__(message)


class UsageError(ChainreactError):
    """Bad command-line style input, e.g. a malformed `--global KEY=VALUE` (the CLI exits 2)."""


class ModelError(ChainreactError):
    """A model endpoint failed. `status` is the HTTP status (None for network errors and in-stream errors)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        endpoint: str | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        body: str | None = None,
    ):
        self.status = status
        self.endpoint = endpoint
        self.retryable = retryable
        self.retry_after = retry_after
        self.body = body
        super().__init__(message)


class EmptyResponseError(ModelError):
    """HTTP 200 with an empty body, or a stream that ended without a finish_reason."""


class MalformedResponseError(ModelError):
    """The endpoint answered something that is not a valid chat completion."""


class ToolError(ChainreactError):
    """A tool failed in a way the model should be told about (becomes an `Error: ...` result)."""


class MaxStepsError(ChainreactError):
    """The run reached maxStep and the policy says to raise."""


class NudgeEchoError(ChainreactError):
    """The model answered with the loop's own instruction (max steps, a refused call) and there was no tool
    result to answer from instead (agent/nudges.py)."""


class LocalModelError(ChainreactError):
    """The embedded local model could not be started (missing extra, failed health check)."""
