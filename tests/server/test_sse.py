"""The one SSE encoder (server/sse.py): the bytes every stream of the server is made of."""

from __future__ import annotations

from chainreact.server.sse import DONE, sse


def test_the_three_shapes_of_an_event() -> None:
    assert sse({"a": 1}) == b'data: {"a":1}\n\n'
    assert sse({"id": "r1"}, event="end") == b'event: end\ndata: {"id":"r1"}\n\n'
    assert sse({"text": "x"}, event="text_delta", id=7) == b'id: 7\nevent: text_delta\ndata: {"text":"x"}\n\n'
    assert DONE == b"data: [DONE]\n\n"


def test_a_newline_in_the_data_stays_inside_its_json_line() -> None:
    out = sse({"text": "two\nlines"}, event="message", id="3")
    assert out.count(b"\n") == 4 and out.endswith(b'"two\\nlines"}\n\n')
