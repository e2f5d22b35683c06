"""Messages, tool calls and usage: the vocabulary every layer speaks.

Plain slotted dataclasses rather than pydantic models: these are created per chunk and per message on
the hot path, and validation happens once at the edges (config loading, wire parsing), not here.
The wire shape is OpenAI's chat format; `to_openai` / `from_openai` are the only converters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
Content = str | list[dict[str, Any]] | None


@dataclass(slots=True)
class ToolCall:
    """One tool call requested by the model. `arguments` is the raw JSON string as the model wrote it."""

    id: str
    name: str
    arguments: str = ""

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0

    def add(self, other: Usage | None) -> None:
        if other is None:
            return
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens
        self.cached_tokens += other.cached_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cached_tokens": self.cached_tokens,
        }

    @classmethod
    def from_openai(cls, data: dict[str, Any] | None) -> Usage | None:
        if not data:
            return None
        details = data.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        if cached is None:
            cached = data.get("prompt_cache_hit_tokens") or 0  # DeepSeek's spelling
        prompt = int(data.get("prompt_tokens") or 0)
        completion = int(data.get("completion_tokens") or 0)
        total = data.get("total_tokens")
        total_tokens = int(total) if total is not None else prompt + completion
        return cls(prompt, completion, total_tokens, int(cached or 0))


@dataclass(slots=True)
class Message:
    """One chat message. `reasoning` is the model's thinking, never sent back unless asked."""

    role: Role
    content: Content = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None

    @property
    def text(self) -> str:
        """The message's text: the string content, or the joined text parts of list content."""
        c = self.content
        if c is None:
            return ""
        if isinstance(c, str):
            return c
        return "".join(p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text")

    def to_openai(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role}
        if self.tool_calls:
            # Some servers (llama.cpp among them) answer 500 to content null beside tool_calls: send "".
            d["content"] = self.content if self.content is not None else ""
            d["tool_calls"] = [tc.to_openai() for tc in self.tool_calls]
        else:
            d["content"] = self.content if self.content is not None else ""
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role != "tool":
            d["name"] = self.name
        return d

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> Message:
        calls = None
        raw_calls = data.get("tool_calls")
        if raw_calls:
            calls = []
            for i, tc in enumerate(raw_calls):
                fn = tc.get("function") or {}
                args = fn.get("arguments")
                if args is None or args == "":
                    args = "{}"
                elif not isinstance(args, str):
                    import orjson

                    args = orjson.dumps(args).decode()
                calls.append(ToolCall(tc.get("id") or f"call_{i}", fn.get("name") or "", args))
        reasoning = data.get("reasoning_content") or data.get("reasoning")
        return cls(
            role=data.get("role", "user"),
            content=data.get("content"),
            tool_calls=calls,
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            reasoning=reasoning if isinstance(reasoning, str) else None,
        )


def system(text: str) -> Message:
    return Message("system", text)


def user(content: Content) -> Message:
    return Message("user", content)


def assistant(text: str | None = None, tool_calls: list[ToolCall] | None = None) -> Message:
    return Message("assistant", text, tool_calls)


def tool_result(call_id: str, text: str, name: str | None = None) -> Message:
    return Message("tool", text, tool_call_id=call_id, name=name)


@dataclass(slots=True)
class ModelResponse:
    """The parsed result of one model call, streaming or not."""

    message: Message
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None
    endpoint: str | None = None  # which endpoint answered (primary url or a failover's)
    extra: dict[str, Any] = field(default_factory=dict)


# Stream items yielded by the model client while a streaming call is in flight. The last item of every
# successful stream is the complete ModelResponse.


@dataclass(slots=True)
class TextChunk:
    text: str


@dataclass(slots=True)
class ReasoningChunk:
    text: str


@dataclass(slots=True)
class ToolCallChunk:
    """A fragment of a tool call: `index` identifies the call, fields arrive piecemeal."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(slots=True)
class Reported:
    """An item that carries nothing: the model client has just given an event to the call's `on_event`
    (a retry, a failover) and yields this right after, so that a caller streaming the call's items can
    pass the event on now, while the call waits for its next attempt. Only a call with `on_event` yields
    it; anyone else ignores it."""


REPORTED = Reported()

StreamItem = TextChunk | ReasoningChunk | ToolCallChunk | ModelResponse | Reported
