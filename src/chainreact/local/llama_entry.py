"""Entry point of the embedded model server: llama-cpp-python's own server plus one extra chat format.

`python -m chainreact.local.llama_entry ARGS` = `python -m llama_cpp.server ARGS`, with the chat format
`chainreact-chatml-function-calling` registered first. That format delegates to llama-cpp-python's
`chatml-function-calling` (grammar-constrained tool calls) after repairing the messages it renders badly
(measured in docs/local-model.md):

- its prompt template has no branch for `tool` messages: a tool result becomes an empty, unterminated
  `<|im_start|>tool` turn, so the model never sees results (it calls the same tool again, and a tool-less
  final answer is garbage). Results are sent as user turns naming the tool instead;
- the template is rendered with HTML autoescaping on, so `"` in any message reaches the model as `&#34;`
  (and the model starts writing `&#34;` itself). Message strings are marked safe so they arrive verbatim;
- in a request without tools (e.g. the agent's last, tool-less call for an answer) the template renders
  earlier calls as `functions.add:` lines, which the 135M model then copies as its "answer". There, calls
  without text are left out; each result's user turn names the call and its arguments instead.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

HANDLER_NAME = "chainreact-chatml-function-calling"
BASE_HANDLER = "chatml-function-calling"


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


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
            out.append({"role": "user", "content": safe(f"Result of {call}: {_text(m.get('content'))}")})
            continue
        if calls:
            for call in calls:
                fn = call.get("function") or {}
                if call.get("id"):
                    calls_by_id[str(call["id"])] = f"{fn.get('name') or ''}({_text(fn.get('arguments'))})"
            if not with_tools and not _text(m.get("content")).strip():
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


def register() -> None:
    """Register HANDLER_NAME with llama-cpp-python (imports llama_cpp: call only in the server process)."""
    import llama_cpp.llama_chat_format as fmt
    from markupsafe import Markup

    base = fmt.get_chat_completion_handler(BASE_HANDLER)

    def handler(**kwargs: Any) -> Any:
        with_tools = bool(kwargs.get("tools") or kwargs.get("functions"))
        messages = list(kwargs.get("messages") or [])
        kwargs["messages"] = prepare_messages(messages, Markup, with_tools=with_tools)
        return base(**kwargs)

    fmt.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        HANDLER_NAME, handler, overwrite=True
    )


def main() -> None:
    register()
    from llama_cpp.server.__main__ import main as server_main

    sys.argv[0] = "chainreact-llama-server"
    server_main()


if __name__ == "__main__":
    main()
