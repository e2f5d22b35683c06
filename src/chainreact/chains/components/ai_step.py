"""The `ai/agent` node's step, written once: its input and output contract around one agent run, over an
executor that runs the agent (a seam: chainreact.durable uses it too).

    await agent_node_step(ctx, msg, io, stream=...)

- the metadata picks the agent's variant: `session_model` (another model on the same endpoint) and
  `session_extra_fields` (a JSON object, normalized; not an object: the node's Failure);
- the input: JSON data with `messages` is the conversation, anything else the user message
  (`node_input`); with metadata `sessionKey` the session's history goes in front (`io.session_input`)
  and what the run added is saved after it (`io.save_history`);
- Success: the answer as TEXT, metadata `model` (the variant's) and the token counts (`usage_meta`);
  with `stream` also `full_content=true` (the frames went out on Stream while it ran);
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
        With `stream`, its frames are told on Stream as they come."""
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
    out.data = result.content
    out.data_type = TEXT
    out.metadata["model"] = used
    out.metadata.update(usage_meta(result.usage))
    if stream:
        out.metadata["full_content"] = "true"
    ctx.tell_next(out, SUCCESS)


__all__ = ["AgentNodeFailed", "AgentNodeIO", "agent_node_step", "node_input", "usage_meta", "variant"]
