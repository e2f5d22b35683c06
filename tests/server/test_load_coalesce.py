"""`openai_api.coalesce`: SSE chunks ready together go out as one write, nothing is held back or lost,
and closing the stream early closes its source (which is how a client that goes away cancels the run)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from chainreact.server.openai_api import coalesce


async def test_a_burst_is_one_write_but_its_first_chunk_goes_alone_first() -> None:
    gate = asyncio.Event()

    async def source() -> AsyncIterator[bytes]:
        for i in range(5):  # produced back to back, as deltas parsed from one read of the model's stream
            yield f"a{i};".encode()
        await gate.wait()  # then the model is slow: the next chunk comes alone
        yield b"b;"
        yield b"c;"

    out = coalesce(source())
    assert await out.__anext__() == b"a0;"  # not held until the burst is produced
    assert await out.__anext__() == b"a1;a2;a3;a4;"
    gate.set()
    rest = [chunk async for chunk in out]
    assert b"".join(rest) == b"b;c;"


async def test_chunks_that_come_one_by_one_go_out_one_by_one() -> None:
    async def source() -> AsyncIterator[bytes]:
        for i in range(4):
            await asyncio.sleep(0.01)
            yield f"{i};".encode()

    assert [c async for c in coalesce(source())] == [b"0;", b"1;", b"2;", b"3;"]


async def test_closing_early_closes_the_source() -> None:
    closed = asyncio.Event()
    blocked = asyncio.Event()

    async def source() -> AsyncIterator[bytes]:
        try:
            yield b"first;"
            blocked.set()
            await asyncio.sleep(60)  # a run that is still going when the client leaves
            yield b"never;"
        finally:
            closed.set()

    out = coalesce(source())
    assert await out.__anext__() == b"first;"
    await asyncio.wait_for(blocked.wait(), 5)
    await out.aclose()  # what Starlette does when the client disconnects
    assert closed.is_set()


async def test_a_failing_source_fails_the_stream_after_what_it_produced() -> None:
    async def source() -> AsyncIterator[bytes]:
        yield b"partial;"
        raise RuntimeError("the producer broke")

    got: list[bytes] = []
    with pytest.raises(RuntimeError, match="the producer broke"):
        async for chunk in coalesce(source()):
            got.append(chunk)
    assert b"".join(got) == b"partial;"


async def test_a_slow_reader_holds_the_producer_at_the_bound() -> None:
    produced = 0

    async def source() -> AsyncIterator[bytes]:
        nonlocal produced
        for _ in range(10_000):
            produced += 1
            yield b"x"

    out = coalesce(source())
    assert await out.__anext__() == b"x"
    for _ in range(20):  # the reader waits: the producer must stop at the queue's bound, not run ahead
        await asyncio.sleep(0)
    assert produced < 1000
    rest = [c async for c in out]
    assert sum(len(c) for c in rest) == 10_000 - 1
