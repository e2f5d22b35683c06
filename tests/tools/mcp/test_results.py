"""MCP CallToolResult -> model text / ToolOutput mapping."""

from __future__ import annotations

import base64

from chainreact.tools.base import ToolOutput
from chainreact.tools.mcp.results import b64_size, map_result

PNG = base64.b64encode(bytes(range(256)) * 3 + b"x").decode()  # 769 bytes -> padded base64


def test_text_parts_joined_with_newline():
    r = map_result({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
    assert r == "a\nb"


def test_image_becomes_placeholder_with_exact_size_and_keeps_the_part():
    img = {"type": "image", "data": PNG, "mimeType": "image/png"}
    r = map_result({"content": [{"type": "text", "text": "look:"}, img]})
    assert isinstance(r, ToolOutput) and not r.is_error
    assert r.content == "look:\n[image: image/png, 769 bytes]"
    assert r.data == [img]


def test_b64_size_matches_decoding():
    for n in range(0, 10):
        raw = b"\x00" * n
        assert b64_size(base64.b64encode(raw).decode()) == n
    assert b64_size(base64.encodebytes(b"y" * 100).decode()) == 100  # with line breaks


def test_is_error_gives_error_output():
    r = map_result({"content": [{"type": "text", "text": "boom"}], "isError": True})
    assert r == ToolOutput(content="Error: boom", is_error=True)
    r = map_result({"content": [], "isError": True})
    assert isinstance(r, ToolOutput) and r.is_error and r.content.startswith("Error: ")


def test_structured_content_only_when_no_text():
    assert map_result({"content": [], "structuredContent": {"b": [1, 2], "a": "x"}}) == '{"b":[1,2],"a":"x"}'
    assert map_result({"content": [{"type": "text", "text": "t"}], "structuredContent": {"a": 1}}) == "t"


def test_resources():
    text_res = {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}}
    blob_res = {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "x/y"}}
    link = {"type": "resource_link", "uri": "file:///c", "name": "c"}
    r = map_result({"content": [text_res, blob_res, link]})
    assert isinstance(r, ToolOutput)
    assert r.content == "hello\n[resource: file:///b.bin, x/y, 3 bytes]\n[resource link: file:///c]"
    assert r.data == [blob_res, link]
