"""SSE framing: bytes in, event payloads out, however the bytes are split."""

from __future__ import annotations

import pytest

from chainreact.llm.sse import SSEDecoder


def decode(*chunks: bytes) -> list[tuple[str | None, bytes]]:
    d = SSEDecoder()
    out: list[tuple[str | None, bytes]] = []
    for c in chunks:
        out.extend(d.feed(c))
    out.extend(d.close())
    return out


def test_basic_events_and_space_stripping() -> None:
    assert decode(b'data: {"a":1}\n\ndata:{"b":2}\n\n') == [(None, b'{"a":1}'), (None, b'{"b":2}')]


def test_only_one_leading_space_is_stripped() -> None:
    assert decode(b"data:  two\n\n") == [(None, b" two")]


def test_multi_line_data_joined_with_newline() -> None:
    assert decode(b"data: line1\ndata: line2\n\n") == [(None, b"line1\nline2")]


@pytest.mark.parametrize("eol", [b"\r\n", b"\r", b"\n"])
def test_line_endings(eol: bytes) -> None:
    body = b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    assert decode(body) == [(None, b"a\nb"), (None, b"c")]


def test_crlf_split_across_reads_is_one_line_end() -> None:
    # "\r" at the end of one read and "\n" at the start of the next must not dispatch early.
    assert decode(b"data: a\r", b"\ndata: b\r\n\r\n") == [(None, b"a\nb")]


def test_every_split_point_gives_the_same_events() -> None:
    body = b": keep-alive\r\n\r\nevent: error\r\ndata: {\"x\": 1}\r\n\r\ndata: [DONE]\r\n\r\n"
    want = decode(body)
    assert want == [("error", b'{"x": 1}'), (None, b"[DONE]")]
    for i in range(len(body) + 1):
        assert decode(body[:i], body[i:]) == want, i
    assert decode(*[body[i : i + 1] for i in range(len(body))]) == want


def test_comments_and_unknown_fields_ignored() -> None:
    assert decode(b": OPENROUTER PROCESSING\n\nid: 7\nretry: 10\ndata: x\n\n") == [(None, b"x")]


def test_last_event_without_blank_line_is_dispatched_at_close() -> None:
    assert decode(b"data: a\n\ndata: b") == [(None, b"a"), (None, b"b")]
    assert decode(b"data: a\n\ndata: b\n") == [(None, b"a"), (None, b"b")]


def test_blank_lines_without_data_dispatch_nothing() -> None:
    assert decode(b"\n\n\nevent: ping\n\n") == []


def test_data_field_without_colon() -> None:
    assert decode(b"data\n\n") == [(None, b"")]
