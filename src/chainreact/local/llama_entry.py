"""Entry point of the embedded model server: llama-cpp-python's own server plus one extra chat format.

`python -m chainreact.local.llama_entry ARGS` = `python -m llama_cpp.server ARGS`, with the chat format
`chainreact-chatml-function-calling` registered first.

A request that offers tools is answered by chainreact's own tool calling (tool_prompt.py): the prompt with
a worked example, a grammar built from the offered tools (grammar.py) so every sampled token fits a call
with valid arguments or a one-line answer, greedy sampling (temperature 0, no repeat penalty, whatever the
request says: the same tokens on every run), and the result as an OpenAI message with `tool_calls`,
streamed as chunks when asked. A request without tools goes to llama-cpp-python's `chatml-function-calling`
after repairing the messages it renders badly (measured in docs/local-model.md):

- its prompt template has no branch for `tool` messages: a tool result becomes an empty, unterminated
  `<|im_start|>tool` turn, so the model never sees results (it calls the same tool again, and a tool-less
  final answer is garbage). Results are sent as user turns naming the tool instead;
- the template is rendered with HTML autoescaping on, so `"` in any message reaches the model as `&#34;`
  (and the model starts writing `&#34;` itself). Message strings are marked safe so they arrive verbatim;
- in a request without tools (e.g. the agent's last, tool-less call for an answer) the template renders
  earlier calls as `functions.add:` lines, which the 135M model then copies as its "answer". There, calls
  without text are left out; each result's user turn names the call and its arguments instead.

It also accepts OpenAI's `response_format` `json_schema` (which the server rejects with a 500) by passing it
on as the server's own `json_object` + `schema`, which llama.cpp enforces as a grammar (JsonSchemaFormat).
A request with both tools and a response_format (a flow node with tools and an `output.schema`) has the
answer branch of its turn grammar written from that schema (tool_prompt.turn_grammar), so the answer is
valid JSON there too; before, the turn grammar ignored the format and the answer was free text that no
schema check could pass.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from . import tool_prompt
from .tool_prompt import text_of

HANDLER_NAME = "chainreact-chatml-function-calling"
BASE_HANDLER = "chatml-function-calling"


def prepare_messages(
    messages: list[dict[str, Any]], safe: Callable[[str], str] = str, *, with_tools: bool = True
) -> list[dict[str, Any]]:
    """The messages as the base chat format can render them (see the module docstring).

    `safe` marks a string as needing no escaping (markupsafe.Markup in the server). Nothing else changes:
    in particular a missing or null `content` stays as it is, so the server's own errors for those remain.
    """
    calls_by_id: dict[str, str] = {}  # call id -> "name(arguments)"
    out: list[dict[str, Any]] = []
    for msg in messages:
        m = dict(msg)
        calls = m.get("tool_calls")
        if m.get("role") == "tool":
            call = calls_by_id.get(str(m.get("tool_call_id") or ""), "") or str(m.get("name") or "the tool")
            out.append({"role": "user", "content": safe(f"Result of {call}: {text_of(m.get('content'))}")})
            continue
        if calls:
            for call in calls:
                fn = call.get("function") or {}
                if call.get("id"):
                    calls_by_id[str(call["id"])] = f"{fn.get('name') or ''}({text_of(fn.get('arguments'))})"
            if not with_tools and not text_of(m.get("content")).strip():
                continue
        if isinstance(m.get("content"), str):
            m["content"] = safe(m["content"])
        if calls:
            new_calls = []
            for raw_call in calls:
                new_call = dict(raw_call)
                fn = dict(new_call.get("function") or {})
                if isinstance(fn.get("arguments"), str):
                    fn["arguments"] = safe(fn["arguments"])
                new_call["function"] = fn
                new_calls.append(new_call)
            m["tool_calls"] = new_calls
        out.append(m)
    return out


def json_schema_as_json_object(body: bytes) -> bytes:
    """The chat request `body` with an OpenAI `response_format` `{"type": "json_schema", "json_schema":
    {"schema": S}}` rewritten to llama-cpp-python's `{"type": "json_object", "schema": S}` (which it turns
    into a grammar: the answer is JSON valid against S); any other body is returned as it is."""
    import json

    if b'"json_schema"' not in body:
        return body
    try:
        data = json.loads(body)
    except ValueError:
        return body  # the server's own error for a malformed body stays
    fmt = data.get("response_format") if isinstance(data, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return body
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    data["response_format"] = ({"type": "json_object", "schema": schema} if isinstance(schema, dict)
                               else {"type": "json_object"})
    return json.dumps(data).encode()


class JsonSchemaFormat:
    """ASGI middleware: chat requests' `response_format` json_schema as json_object + schema (above)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or not str(scope.get("path", "")).endswith("/chat/completions"):
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                await self.app(scope, _replay([msg], receive), send)  # a disconnect: pass it on
                return
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        body = json_schema_as_json_object(b"".join(chunks))
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        scope = {**scope, "headers": headers}
        await self.app(scope, _replay([{"type": "http.request", "body": body, "more_body": False}], receive),
                       send)


def _replay(first: list[Any], receive: Any) -> Any:
    pending = list(first)

    async def replay() -> Any:
        if pending:
            return pending.pop(0)
        return await receive()
    return replay


def answer_schema(response_format: Any) -> dict[str, Any] | None:
    """The JSON schema a request's response_format asks the answer to follow (after JsonSchemaFormat:
    `{"type": "json_object", "schema": S}`), {} for JSON without a schema, None for free text."""
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") not in ("json_object", "json_schema"):
        return None
    schema = response_format.get("schema")
    if schema is None and isinstance(response_format.get("json_schema"), dict):
        schema = response_format["json_schema"].get("schema")
    return schema if isinstance(schema, dict) else {}


def tool_turn(llama: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: str,
              max_tokens: int | None, stream: bool, schema: dict[str, Any] | None = None) -> Any:
    """One assistant turn of a tool-bearing request (module docstring), as a chat completion or chunks.
    `schema`: the answer's JSON schema when the request asks for JSON (answer_schema)."""
    from llama_cpp.llama_grammar import LlamaGrammar

    prompt = tool_prompt.render_prompt(messages, tools, schema)

    def sample(choice: str) -> tuple[dict[str, Any], dict[str, Any]]:
        grammar = LlamaGrammar.from_string(tool_prompt.turn_grammar(tools, choice, schema), verbose=False)
        completion = llama.create_completion(
            prompt=prompt, grammar=grammar, temperature=0.0, top_k=1, repeat_penalty=1.0,
            max_tokens=max_tokens or 512, stop=["<|im_end|>"], stream=False,
        )
        return completion, tool_prompt.parse_turn(completion["choices"][0]["text"], tools)

    completion, message = sample(choice)
    if choice == "auto" and tool_prompt.calls_again(messages, message):
        completion, message = sample(tool_prompt.ANSWER_ONLY)  # its result is above: answer from it
    choice0 = completion["choices"][0]
    finish = "tool_calls" if message.get("tool_calls") else choice0.get("finish_reason") or "stop"
    head = {"id": "chat" + completion["id"], "created": completion["created"], "model": completion["model"]}
    if not stream:
        return {**head, "object": "chat.completion", "usage": completion.get("usage"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}]}
    return iter(_chunks(head, message, finish))


def _chunks(head: dict[str, Any], message: dict[str, Any], finish: str) -> list[dict[str, Any]]:
    delta: dict[str, Any] = {"content": message["content"]} if message.get("content") is not None else {
        "tool_calls": [{**c, "index": i} for i, c in enumerate(message.get("tool_calls") or [])]}
    return [{**head, "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": d, "finish_reason": f, "logprobs": None}]}
            for d, f in (({"role": "assistant"}, None), (delta, None), ({}, finish))]


def register() -> None:
    """Register HANDLER_NAME with llama-cpp-python (imports llama_cpp: call only in the server process)."""
    import llama_cpp.llama_chat_format as fmt
    from markupsafe import Markup

    base = fmt.get_chat_completion_handler(BASE_HANDLER)

    def handler(**kwargs: Any) -> Any:
        messages = list(kwargs.get("messages") or [])
        tools = list(kwargs.get("tools") or [])
        if kwargs.get("functions"):  # the legacy form of tools
            tools = [{"type": "function", "function": f} for f in kwargs["functions"]]
        choice = tool_prompt.effective_choice(messages, tools, kwargs.get("tool_choice"))
        if choice is not None:
            return tool_turn(kwargs["llama"], messages, tools, choice, kwargs.get("max_tokens"),
                             bool(kwargs.get("stream")), answer_schema(kwargs.get("response_format")))
        kwargs["messages"] = prepare_messages(messages, Markup, with_tools=False)
        kwargs["tools"] = kwargs["functions"] = kwargs["tool_choice"] = kwargs["function_call"] = None
        return base(**kwargs)

    fmt.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        HANDLER_NAME, handler, overwrite=True
    )


def main() -> None:
    register()
    import llama_cpp.server.__main__ as server_module

    create_app = server_module.create_app

    def create_app_with_json_schema(*args: Any, **kwargs: Any) -> Any:
        app = create_app(*args, **kwargs)
        app.add_middleware(JsonSchemaFormat)
        return app

    server_module.create_app = create_app_with_json_schema
    server_main = server_module.main

    sys.argv[0] = "chainreact-llama-server"
    server_main()


if __name__ == "__main__":
    main()
