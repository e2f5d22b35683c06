"""Config -> wire mapping of one request."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from chainreact.config import Compat, ModelParams
from chainreact.errors import ConfigError
from chainreact.llm.images import resolve_image
from chainreact.llm.request import ModelRequest, build_body, nest
from chainreact.types import Message, ToolCall

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def req(params: dict[str, Any] | None = None, compat: dict[str, Any] | None = None,
        **kw: Any) -> ModelRequest:
    base: dict[str, Any] = {
        "messages": [Message("system", "sys"), Message("user", "hi")],
        "tools": None, "tool_choice": None, "stream": False, "model": "m",
        "params": ModelParams.model_validate(params or {}), "endpoint": "http://e/v1",
        "compat": Compat.model_validate(compat or {}),
    }
    base.update(kw)
    return ModelRequest(**base)


def test_defaults_and_explicit_zero() -> None:
    body = build_body(req({"temperature": 0, "topP": 0, "frequencyPenalty": 0, "presencePenalty": 0}))
    assert body["temperature"] == 0 and body["top_p"] == 0
    assert body["frequency_penalty"] == 0 and body["presence_penalty"] == 0
    assert "max_completion_tokens" not in body and "stop" not in body and "response_format" not in body
    assert body["stream"] is False and "stream_options" not in body
    assert body["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


def test_max_tokens_stop_and_stream_options() -> None:
    body = build_body(req({"maxTokens": 64, "stop": "END"}, stream=True))
    assert body["max_completion_tokens"] == 64 and body["stop"] == ["END"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("schema", ['{"title": "My Out", "type": "object"}',
                                    {"type": "object", "title": "My Out"}])
def test_json_schema(schema: Any) -> None:
    body = build_body(req({"responseFormat": "json_schema", "jsonSchema": schema}))
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "My_Out", "schema": {"title": "My Out", "type": "object"}}}


def test_json_schema_wrapper_and_json_object_and_errors() -> None:
    wrapped = {"name": "x", "strict": True, "schema": {"type": "object"}}
    body = build_body(req({"responseFormat": "json_schema", "jsonSchema": wrapped}))
    assert body["response_format"]["json_schema"] == wrapped
    assert build_body(req({"responseFormat": "json_object"}))["response_format"] == {"type": "json_object"}
    with pytest.raises(ConfigError, match="jsonSchema"):
        build_body(req({"responseFormat": "json_schema", "jsonSchema": "{not json"}))
    with pytest.raises(ConfigError, match="empty"):
        build_body(req({"responseFormat": "json_schema"}))


def test_extra_fields_nest_and_standard_fields_win() -> None:
    assert nest({"thinking.type": "enabled", "thinking.budget": 5, "a": 1}) == {
        "thinking": {"type": "enabled", "budget": 5}, "a": 1}
    body = build_body(req({"extraFields": {"thinking.type": "enabled", "temperature": 9,
                                           "stream_options.extra": 1, "reasoning_effort": "low"}},
                          stream=True))
    assert body["thinking"] == {"type": "enabled"} and body["reasoning_effort"] == "low"
    assert body["temperature"] == 0.7
    assert body["stream_options"] == {"include_usage": True, "extra": 1}


def test_tools_and_tool_choice_and_compat() -> None:
    body = build_body(req(tools=TOOLS, tool_choice="required"))
    assert body["tools"] == TOOLS and body["tool_choice"] == "required"
    body = build_body(req(compat={"toolChoiceRequired": False}, tools=TOOLS, tool_choice="required"))
    assert body["tool_choice"] == "auto"
    assert "tool_choice" not in build_body(req(tool_choice="required"))  # no tools: nothing to require
    body = build_body(req(compat={"omit": ["stream_options", "top_p", "thinking.budget"]}, stream=True,
                          params={"extraFields": {"thinking.type": "x", "thinking.budget": 1}}))
    assert "stream_options" not in body and "top_p" not in body and body["thinking"] == {"type": "x"}


def test_system_role_and_flatten_content() -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    msgs = [Message("system", "s"), Message("user", parts)]
    body = build_body(req(compat={"systemRole": False, "flattenContent": True}, messages=msgs))
    assert body["messages"] == [{"role": "user", "content": "s"}, {"role": "user", "content": "a\nb"}]
    assert msgs[1].content == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]  # not mutated


def test_flatten_refuses_to_drop_images() -> None:
    with pytest.raises(ConfigError, match="flattenContent"):
        build_body(req(compat={"flattenContent": True}, images=["https://x/i.png"]))


def test_images_go_to_last_user_message() -> None:
    msgs = [Message("user", "first"), Message("assistant", None, [ToolCall("c", "f", "{}")]),
            Message("tool", "r", tool_call_id="c"), Message("user", "look")]
    body = build_body(req(messages=msgs, images=["https://x/a.png"]))
    assert body["messages"][0]["content"] == "first"
    assert body["messages"][3]["content"] == [
        {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://x/a.png"}}]
    assert body["messages"][1]["content"] == "" and body["messages"][2]["tool_call_id"] == "c"


def test_stream_with_tools_on_an_endpoint_that_cannot() -> None:
    r = req(compat={"streamTools": False}, stream=True, tools=TOOLS)
    assert r.wire_stream is False and build_body(r)["stream"] is False
    assert req(compat={"streamTools": False}, stream=True).wire_stream is True


def test_resolve_image_forms(tmp_path: Path) -> None:
    assert resolve_image("https://x/y.png") == "https://x/y.png"
    assert resolve_image("data:image/png;base64,AAAA") == "data:image/png;base64,AAAA"
    f = tmp_path / "pic.bin"
    f.write_bytes(PNG)
    assert resolve_image(str(f)) == "data:image/png;base64," + base64.b64encode(PNG).decode()
    b64 = base64.b64encode(PNG).decode()
    assert resolve_image(b64) == "data:image/png;base64," + b64
    with pytest.raises(ConfigError, match="neither"):
        resolve_image("no/such/file.png")
    txt = tmp_path / "a.txt"
    txt.write_text("hello")
    with pytest.raises(ConfigError, match="not an image"):
        resolve_image(str(txt))
