"""Streaming tool-call detection (`streamToolCallCheck`): when is streamed text the answer?

In the OpenAI streaming protocol a plain answer and "some text, then tool calls" look the same until the
tool calls arrive. The router below decides when text chunks are released to the consumer:

    auto (""/"auto")  no tools: release at once. Tools: hold text for `window` seconds after the first
                      non-empty text; a tool call inside the window makes it a tool round (nothing
                      released); otherwise release what was held and stream on.
    firstContent      the first non-empty text releases; no observation.
    drain             read the whole stream, then decide.

Reasoning chunks are never held (they are not answer text). Whitespace-only text does not count as
"first text" (some models send a blank chunk before their tool calls). If tool calls still arrive after
text was released, the loop self-heals (see loop.py): `released` tells it what the consumer already saw.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ..types import ModelResponse, ReasoningChunk, StreamItem, TextChunk, ToolCallChunk

AUTO, FIRST_CONTENT, DRAIN = "auto", "firstContent", "drain"
_DECIDING, _WINDOW, _TEXT, _TOOLS = 0, 1, 2, 3

Routed = TextChunk | ReasoningChunk | ModelResponse


def normalize_mode(mode: str) -> str:
    return AUTO if mode in ("", AUTO) else mode


def from_response(resp: ModelResponse, released: list[str]) -> TextChunk:
    """A non-streamed answer arrives whole: release it as one chunk so consumers see the same events."""
    text = resp.message.text
    released.append(text)
    return TextChunk(text)


class StreamRouter:
    """Routes one model call's items: yields released TextChunks and ReasoningChunks, then the response."""

    __slots__ = ("has_tools", "mode", "released", "window")

    def __init__(self, mode: str, has_tools: bool, window: float = 0.5):
        self.mode = normalize_mode(mode)
        self.has_tools = has_tools
        self.window = window
        self.released: list[str] = []  # text the consumer has already seen

    async def route(self, items: AsyncIterator[StreamItem]) -> AsyncIterator[Routed]:
        if not self.has_tools:
            # Pure conversation: everything streams in real time.
            async for item in items:
                if isinstance(item, TextChunk):
                    if item.text:
                        self.released.append(item.text)
                        yield item
                elif isinstance(item, ModelResponse):
                    if not self.released and not item.message.tool_calls and item.message.text:
                        yield from_response(item, self.released)
                    yield item
                elif not isinstance(item, ToolCallChunk):
                    yield item
            return

        state = _DECIDING
        held: list[TextChunk] = []
        deadline = 0.0
        loop = asyncio.get_running_loop()
        it = items.__aiter__()
        pending: asyncio.Future[StreamItem] | None = None
        try:
            while True:
                # Only inside the observation window do we need a timer; elsewhere iterate plainly.
                if state == _WINDOW:
                    if pending is None:
                        pending = asyncio.ensure_future(it.__anext__())
                    done, _ = await asyncio.wait((pending,), timeout=max(deadline - loop.time(), 0.0))
                    if not done:
                        state = _TEXT  # window expired with no tool call: the text is the answer
                        for chunk in held:
                            self.released.append(chunk.text)
                            yield chunk
                        held.clear()
                        continue
                    fut, pending = pending, None
                    try:
                        item = fut.result()
                    except StopAsyncIteration:
                        break
                elif pending is not None:
                    fut, pending = pending, None
                    try:
                        item = await fut
                    except StopAsyncIteration:
                        break
                else:
                    try:
                        item = await it.__anext__()
                    except StopAsyncIteration:
                        break

                if isinstance(item, TextChunk):
                    if not item.text:
                        continue
                    if state == _TEXT:
                        self.released.append(item.text)
                        yield item
                        continue
                    held.append(item)
                    if state == _DECIDING and item.text.strip():
                        if self.mode == FIRST_CONTENT:
                            state = _TEXT
                            for chunk in held:
                                self.released.append(chunk.text)
                                yield chunk
                            held.clear()
                        elif self.mode == AUTO:
                            state = _WINDOW
                            deadline = loop.time() + self.window
                elif isinstance(item, ToolCallChunk):
                    if state in (_DECIDING, _WINDOW):
                        state = _TOOLS
                elif isinstance(item, ReasoningChunk):
                    yield item
                elif isinstance(item, ModelResponse):
                    if state != _TOOLS and not item.message.tool_calls:
                        for chunk in held:  # drain / undecided / still in window: it was an answer
                            self.released.append(chunk.text)
                            yield chunk
                        if not self.released and item.message.text:
                            yield from_response(item, self.released)
                    held.clear()
                    yield item
        finally:
            if pending is not None and not pending.done():
                pending.cancel()
