"""The `ai/agent` node's step, written once: its input and output contract around one agent run, over an
executor that runs the agent (a seam: chainreact.durable uses it too).

    await agent_node_step(ctx, msg, io, stream=...)

- the metadata picks the agent's variant: `session_model` (another model on the same endpoint) and
  `session_extra_fields` (a JSON object, normalized; not an object: the node's Failure);
- the input: JSON data with `messages` is the conversation, anything else the user message
  (`node_input`); with metadata `sessionKey` the session's history goes in front (`io.session_input`)
  and what the run added is saved after it (`io.save_history`);
- Success: the node's answer as TEXT, metadata `model` (the variant's) and the token counts
  (`usage_meta`); with `stream` also `full_content=true` (the frames went out on Stream while it ran).
  The answer is the spec's "complete merged content": with `stream`, the text told on Stream (a preamble
  the model wrote before its tool calls included, each piece once); without, the same text from the run's
  messages (`merged_content`), so a served chain answers the same whether its client streams or not. An
  answer that is a JSON object or array is given alone, so it stays parseable. A run that reached maxStep
  adds metadata `warning=max_steps` and `warning_message` (its RunWarning event);
- any error is the node's Failure with `Type: message` as data (with `stream`, also an error frame on
  Stream); a cancel is not caught.

The executor (`AgentNodeIO`) is where the run happens: in process, the node's own Agent
(components/ai.py); in a durable chain run, a child agent workflow and activities for the session
(chainreact.durable.chain_workflow).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from ..msg import JSON, SUCCESS, TEXT, RuleMsg

if TYPE_CHECKING:
    from ...agent.result import RunResult
    from ...types import Message, Usage
    from ..context import NodeContext


class AgentNodeIO(Protocol):
    """Where an agent node's run and its session's history are (module doc)."""

    async def session_input(self, msg: RuleMsg, data: Any) -> tuple[Any, int]:
        """`data` with the session's stored conversation in front, and that conversation's length."""
        ...

    async def run(self, ctx: NodeContext, msg: RuleMsg, model: str, extra: str, data: Any,
                  stream: bool) -> tuple[RunResult, str]:
        """The run of the variant (`model`, `extra`: normalized JSON or "") on `data`, and the model it used.
        With `stream`, its frames are told on Stream as they come and the result's `content` is the text
        told (`streamed_content`)."""
        ...

    async def save_history(self, meta: dict[str, str], messages: list[Message], n_history: int) -> None:
        """What the run added to the session's conversation (past the `n_history` loaded messages)."""
        ...


class AgentNodeFailed(Exception):
    """An executor's failure whose text is already the node's Failure text (e.g. a child workflow's
    `ModelError: ...`): used as it is."""


def node_input(msg: RuleMsg) -> Any:
    """The agent's input for `msg`: a JSON object with `messages` is the conversation, else the data."""
    if msg.data_type == JSON and msg.data.lstrip().startswith("{"):
        try:
            value = orjson.loads(msg.data)
        except orjson.JSONDecodeError:
            return msg.data
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            return value
    return msg.data


def usage_meta(usage: Usage | None) -> dict[str, str]:
    """A run's token counts as message metadata."""
    if usage is None:
        return {}
    return {"prompt_tokens": str(usage.prompt_tokens), "completion_tokens": str(usage.completion_tokens),
            "total_tokens": str(usage.total_tokens)}


def _json_value(text: str) -> bool:
    t = text.strip()
    if not t or t[0] not in "{[":
        return False
    try:
        orjson.loads(t)
    except orjson.JSONDecodeError:
        return False
    return True


def unstreamed_part(answer: str, streamed: str) -> str:
    """What of a run's final `answer` was not streamed as its text (`streamed`: the text told since the
    run's last tool call): all of it when the model streamed none of it (a returnDirectly tool's result,
    an answer settled from a tool result), its end when the stream stopped short; "" otherwise."""
    if not streamed:
        return answer
    return answer[len(streamed):] if answer.startswith(streamed) else ""


def streamed_content(told: str, answer: str) -> str:
    """A streamed run's Success data: the text told on Stream, or the answer alone when it is JSON."""
    return answer if _json_value(answer) else told


def merged_content(result: RunResult) -> str:
    """A run's Success data without streaming: the text the model wrote beside the tool calls it made
    (what a streamed run tells on Stream as a preamble) and the answer, or the answer alone when it is
    JSON. The run's messages are those after the input's last user message."""
    answer = result.content
    if _json_value(answer):
        return answer
    msgs = result.messages
    start = next((i + 1 for i in range(len(msgs) - 1, -1, -1) if msgs[i].role == "user"), 0)
    parts = []
    for i in range(start, len(msgs) - 1):
        m = msgs[i]
        # a preamble: text beside tool calls that ran (their results follow)
        if m.role == "assistant" and m.tool_calls and msgs[i + 1].role == "tool" and m.text.strip():
            parts.append(_without_think(m.text))
    return "".join(parts) + answer if parts else answer


def _without_think(text: str) -> str:
    """The text of a message without its `<think>` block (as keepThink false streams it)."""
    head, sep, rest = text.partition("<think>")
    if not sep:
        return text
    _, closed, tail = rest.partition("</think>")
    return head + (tail.lstrip() if closed else "")


def variant(meta: dict[str, str]) -> tuple[str, str]:
    """(session_model, session_extra_fields as sorted JSON, or "") of the metadata; ValueError when the
    extra fields are not a JSON object."""
    model = meta.get("session_model", "").strip()
    extra = meta.get("session_extra_fields", "").strip()
    if extra:
        parsed = orjson.loads(extra)
        if not isinstance(parsed, dict):
            raise ValueError("metadata session_extra_fields must be a JSON object")
        extra = orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS).decode()
    return model, extra


def failure_text(e: BaseException) -> str:
    if isinstance(e, AgentNodeFailed):
        return str(e)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


async def agent_node_step(ctx: NodeContext, msg: RuleMsg, io: AgentNodeIO, *, stream: bool) -> None:
    """One message through an agent node (module doc)."""
    meta = msg.metadata
    session = bool(meta.get("sessionKey"))
    n_history = 0
    try:
        model, extra = variant(meta)
        data = node_input(msg)
        if session:
            data, n_history = await io.session_input(msg, data)
        result, used = await io.run(ctx, msg, model, extra, data, stream)
    except asyncio.CancelledError:
        raise
    except Exception as e:
        text = failure_text(e)
        if stream:
            frame = msg.copy()
            frame.data = text
            frame.metadata["error"] = "true"
            await ctx.tell_stream(frame)
        msg.data = text
        ctx.tell_failure(msg, text)
        return
    if session:
        await io.save_history(meta, result.messages, n_history)
    out = msg.copy()
    out.data = result.content if stream else merged_content(result)
    out.data_type = TEXT
    # the variant's model; a node that names none (the embedded model) says the one that answered
    out.metadata["model"] = used or str(result.metadata.get("model") or "")
    out.metadata.update(usage_meta(result.usage))
    if stream:
        out.metadata["full_content"] = "true"
    warning = result.metadata.get("warning")
    if isinstance(warning, dict):  # the run reached maxStep: tell this answer from a normal one
        out.metadata["warning"] = str(warning.get("code", ""))
        out.metadata["warning_message"] = str(warning.get("message", ""))
    ctx.tell_next(out, SUCCESS)


__all__ = ["AgentNodeFailed", "AgentNodeIO", "agent_node_step", "merged_content", "node_input",
           "streamed_content", "unstreamed_part", "usage_meta", "variant"]
