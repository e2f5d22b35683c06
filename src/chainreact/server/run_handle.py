"""A run the registry (runs_registry.py) drives, whatever runs it: an AgentRun, ChainRun, FlowRun or
DurableAgentRun all have this face."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

from ..types import Event

if TYPE_CHECKING:
    from ..agent import RunResult
    from .runs_chains import ChainResult


class RunHandle(Protocol):
    """A run the registry drives: an AgentRun, ChainRun, FlowRun or DurableAgentRun (ChainEvents have an
    Event's `type`, `run_id`, `to_dict()`). AgentRun's `forward` and ChainRun's `io` are looked up."""

    @property
    def run_id(self) -> str: ...

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def result(self) -> RunResult | ChainResult: ...

    def cancel(self, mode: str = "immediate", *, timeout: float | None = None) -> object: ...


__all__ = ["RunHandle"]
