"""A flow turn shaped like an AgentRun, so the run registry drives it as it drives chain runs
(runs_chains.py): registered while it lives, its events in the store's event log, its end saved as a run
record (kind `flow`, the session as the run's session), cancelled at once.

    run_start {flow, session, input}     node, output, warning, ... (the turn's own events, as the flow
    text_delta {text, node}              route sends them)   one per message: its text (a message after the
                                         first starts with a blank line), so the deltas joined are the answer
    final {content}  error {error}  cancelled {mode: "immediate"}

The A2A face runs flow turns this way (a task is a run). A flow turn never stops to ask (a node waiting for
input is the session's next turn), so it cannot be resumed.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .runs_chains import ChainEvent, ChainResult, ChainRunError, QueuedRun

if TYPE_CHECKING:
    from ..flows import Flow
    from .flows_runtime import DurableServedFlow


class FlowRun(QueuedRun):
    """`flow.stream(session, text)` in its own task: iterate for events, `cancel()`, await `result()`."""

    def __init__(self, flow: Flow | DurableServedFlow, session: str, text: str,
                 user: Mapping[str, Any] | None = None):
        self.run_id = secrets.token_hex(8)
        self._queue: asyncio.Queue[ChainEvent | None] = asyncio.Queue()
        self._result: ChainResult | None = None
        self._error: ChainRunError | None = None
        self._queue.put_nowait(ChainEvent("run_start", self.run_id,
                                          {"flow": flow.id, "session": session, "input": text}))
        self._task = asyncio.ensure_future(self._drive(flow.stream(session, text, user=user)))

    async def _drive(self, events: Any) -> None:  # the turn's FlowEvents (an async generator: closed)
        rid = self.run_id
        parts: list[str] = []
        try:
            async for ev in events:
                if ev.type == "message":
                    content = str(ev.data.get("content", ""))
                    self._queue.put_nowait(ChainEvent("text_delta", rid, {
                        "text": ("\n\n" if parts else "") + content, "node": ev.node}))
                    parts.append(content)
                self._queue.put_nowait(ChainEvent(ev.type, rid, ev.to_dict()))
            self._result = ChainResult("\n\n".join(parts), "stop")
            self._queue.put_nowait(ChainEvent("final", rid, {"content": self._result.content}))
        except asyncio.CancelledError:
            self._result = ChainResult("", "cancelled")  # nothing of the turn is saved
            self._queue.put_nowait(ChainEvent("cancelled", rid, {"mode": "immediate"}))
        except Exception as e:  # the turn saved nothing; the session did not move
            self._error = ChainRunError(str(e) or type(e).__name__)
            self._queue.put_nowait(ChainEvent("error", rid, {"error": str(self._error)}))
        finally:
            await events.aclose()
            self._queue.put_nowait(None)


__all__ = ["FlowRun"]
