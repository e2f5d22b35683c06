"""The flow engine's run-time errors (a document that does not validate is a chainreact ConfigError)."""

from __future__ import annotations

from ..errors import ChainreactError


class FlowError(ChainreactError):
    """A turn could not run: a node the session points at is gone, a loop without a user turn, ..."""


class OutputValidationError(FlowError):
    """An agent's answer never matched its `output.schema`; `errors` lists the last answer's violations."""

    def __init__(self, node: str, errors: list[str], attempts: int):
        self.node = node
        self.errors = errors
        self.attempts = attempts
        shown = "; ".join(errors[:5]) + (f" (and {len(errors) - 5} more)" if len(errors) > 5 else "")
        super().__init__(f"node {node!r}: the answer did not match output.schema after {attempts} "
                         f"attempt(s): {shown}")


__all__ = ["FlowError", "OutputValidationError"]
