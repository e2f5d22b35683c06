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
from collections import deque
from collections.abc import AsyncIterator

from ..types import ModelResponse, ReasoningChunk, Reported, StreamItem, TextChunk, ToolCallChunk

AUTO, FIRST_CONTENT, DRAIN = "auto", "firstContent", "drain"
_DECIDING, _WINDOW, _TEXT, _TOOLS = 0, 1, 2, 3

Routed = TextChunk | ReasoningChunk | ModelResponse | Reported


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
        pump: _Pump | None = None  # from the observation window on, the rest is read by its own task
        try:
            while True:
                if pump is None:
                    try:
                        item = await it.__anext__()
                    except StopAsyncIteration:
                        break
                else:
                    # Inside the observation window an item is awaited with the window's deadline.
                    got: StreamItem | None = None
                    if state != _WINDOW or loop.time() < deadline:
                        try:
                            got = await pump.next(deadline if state == _WINDOW else None)
                        except StopAsyncIteration:
                            break
                    if got is None:
                        state = _TEXT  # window expired with no tool call: the text is the answer
                        for chunk in held:
                            self.released.append(chunk.text)
                            yield chunk
                        held.clear()
                        continue
                    item = got

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
                            if pump is None:
                                pump = _Pump(it, loop)
                elif isinstance(item, ToolCallChunk):
                    if state in (_DECIDING, _WINDOW):
                        state = _TOOLS
                elif isinstance(item, ReasoningChunk):
                    yield item
                elif not isinstance(item, ModelResponse):
                    yield item  # Reported: the client gave the loop an event (a retry) to pass on now
                else:
                    if state != _TOOLS and not item.message.tool_calls:
                        for chunk in held:  # drain / undecided / still in window: it was an answer
                            self.released.append(chunk.text)
                            yield chunk
                        if not self.released and item.message.text:
                            yield from_response(item, self.released)
                    held.clear()
                    yield item
        finally:
            if pump is not None:
                await pump.stop()


class _Pump:
    """Reads the rest of a stream in its own task into a buffer, so that the router can wait for the next
    item with a deadline (the observation window) without cancelling the read. One task per stream instead
    of a task and an `asyncio.wait` per chunk (they cost more than the chunk's parsing); items the task has
    already read are taken without waiting, and a timer is armed only when one must be waited for."""

    __slots__ = ("buf", "done", "error", "loop", "task", "waiter")

    def __init__(self, it: AsyncIterator[StreamItem], loop: asyncio.AbstractEventLoop):
        self.buf: deque[StreamItem] = deque()
        self.done = False
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.loop = loop
        self.task = loop.create_task(self._read(it))

    async def _read(self, it: AsyncIterator[StreamItem]) -> None:
        try:
            async for item in it:
                self.buf.append(item)
                self._wake()
        except (Exception, asyncio.CancelledError) as e:  # handed to the router, raised there
            self.error = e
        finally:
            self.done = True
            self._wake()

    def _wake(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def next(self, deadline: float | None) -> StreamItem | None:
        """The next item; None if `deadline` (loop time) passed first; StopAsyncIteration at the end."""
        if not self.buf and not self.done:
            w = self.waiter = self.loop.create_future()
            timer = self.loop.call_at(deadline, _expire, w) if deadline is not None else None
            try:
                await w
            finally:
                self.waiter = None
                if timer is not None:
                    timer.cancel()
        if self.buf:
            return self.buf.popleft()
        if self.done:
            if self.error is not None:
                raise self.error
            raise StopAsyncIteration
        return None

    async def stop(self) -> None:
        """Stop reading (the router ended early, e.g. cancelled) and wait until the read has unwound, so the
        stream can be closed after it."""
        if not self.task.done():
            self.task.cancel()
            await asyncio.wait((self.task,))


def _expire(w: asyncio.Future[None]) -> None:
    if not w.done():
        w.set_result(None)
