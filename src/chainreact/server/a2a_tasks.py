"""A2A (protocol 1.0) shapes for the A2A face: a chainreact run as an A2A Task, a user Message as a run's
input or as answers, agent cards, and JSON-RPC envelopes. The JSON is the protocol's ProtoJSON (camelCase,
enums as `TASK_STATE_*` / `ROLE_*` strings), as the official `a2a-sdk` reads it (tests parse it with its
types); written here so the server needs no extra package.

    run status      running      interrupted               done       failed     cancelled
    task state      WORKING      INPUT_REQUIRED            COMPLETED  FAILED     CANCELED
    status message               the questions (text,      -          the error  -
                                 and a data part)
    artifacts       the answer: {"artifactId": "<run id>-answer", "name": "answer", "parts": [{"text"}]}
    history         an agent run's user messages and answers (from its checkpoint)
"""

from __future__ import annotations

import datetime
from typing import Any

import orjson

STATES = {"running": "TASK_STATE_WORKING", "interrupted": "TASK_STATE_INPUT_REQUIRED",
          "done": "TASK_STATE_COMPLETED", "failed": "TASK_STATE_FAILED", "cancelled": "TASK_STATE_CANCELED"}
FINAL_STATES = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED")


class A2AError(Exception):
    """A JSON-RPC error of the A2A protocol (its codes: a2a-sdk's JSON_RPC_ERROR_CODE_MAP)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def task_not_found(task_id: str) -> A2AError:
    return A2AError(-32001, f"task {task_id!r} not found")


def not_cancelable(why: str) -> A2AError:
    return A2AError(-32002, why)


def unsupported(why: str) -> A2AError:
    return A2AError(-32004, why)


def invalid_params(why: str) -> A2AError:
    return A2AError(-32602, why)


def rpc_result(rid: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def rpc_error(rid: Any, err: A2AError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": err.code, "message": err.message}}


def timestamp(seconds: float | None) -> str:
    t = datetime.datetime.fromtimestamp(seconds if seconds is not None else 0, tz=datetime.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def agent_message(task_id: str, context_id: str, text: str, data: Any = None, suffix: str = "status"
                  ) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": text}]
    if data is not None:
        parts.append({"data": data})
    return {"messageId": f"{task_id}-{suffix}", "contextId": context_id, "taskId": task_id,
            "role": "ROLE_AGENT", "parts": parts}


def answer_artifact(task_id: str, text: str) -> dict[str, Any]:
    return {"artifactId": f"{task_id}-answer", "name": "answer", "parts": [{"text": text}]}


def questions_text(questions: list[dict[str, Any]]) -> str:
    return "\n".join(f"{q.get('question') or q.get('kind')} (answer {q['id']})" for q in questions)


def status_of(view: dict[str, Any], context_id: str) -> dict[str, Any]:
    """A run view (RunRegistry.view) as a TaskStatus."""
    state = STATES.get(view["status"], "TASK_STATE_WORKING")
    status: dict[str, Any] = {"state": state, "timestamp": timestamp(view.get("updated_at")
                                                                      or view.get("created_at"))}
    if state == "TASK_STATE_INPUT_REQUIRED":
        qs = view.get("questions") or []
        status["message"] = agent_message(view["id"], context_id, questions_text(qs), {"questions": qs})
    elif state == "TASK_STATE_FAILED":
        status["message"] = agent_message(view["id"], context_id, view.get("error") or "the run failed")
    return status


def task_of(view: dict[str, Any], snapshot: Any = None, history_length: int | None = None) -> dict[str, Any]:
    """The Task of a run: its view, and (agents) the stored checkpoint's messages as history."""
    context_id = view.get("session") or view["id"]
    task: dict[str, Any] = {"id": view["id"], "contextId": context_id, "status": status_of(view, context_id)}
    result = view.get("result")
    if view["status"] == "done" and result is not None:
        task["artifacts"] = [answer_artifact(view["id"], result.get("content") or "")]
    history = _history(view["id"], context_id, snapshot)
    if history_length is not None:
        history = history[-history_length:] if history_length > 0 else []
    if history:
        task["history"] = history
    task["metadata"] = {"kind": view["kind"], "target": view["target"]}
    return task


def _history(task_id: str, context_id: str, snapshot: Any) -> list[dict[str, Any]]:
    msgs = snapshot.get("messages") if isinstance(snapshot, dict) else None
    out = []
    for i, m in enumerate(msgs or []):
        content = m.get("content")
        if m.get("role") not in ("user", "assistant") or m.get("tool_calls") or not isinstance(content, str):
            continue
        out.append({"messageId": f"{task_id}-{i}", "contextId": context_id, "taskId": task_id,
                    "role": "ROLE_USER" if m["role"] == "user" else "ROLE_AGENT",
                    "parts": [{"text": content}]})
    return out


# ---------------------------------------------------------------------------------------------- input

def message_of(params: Any) -> dict[str, Any]:
    """The `message` of SendMessage params, checked."""
    if not isinstance(params, dict) or not isinstance(params.get("message"), dict):
        raise invalid_params("params.message (an A2A Message) is required")
    msg = params["message"]
    parts = msg.get("parts")
    if not isinstance(parts, list) or not parts or not all(isinstance(p, dict) for p in parts):
        raise invalid_params("params.message.parts must be a non-empty list of parts")
    for name in ("taskId", "contextId"):
        if msg.get(name) is not None and (not isinstance(msg[name], str) or len(msg[name]) > 200):
            raise invalid_params(f"params.message.{name} must be a string of at most 200 characters")
    return msg


def message_text(msg: dict[str, Any]) -> str:
    """A user message's parts as one text: text parts as they are, data parts as JSON."""
    out = []
    for i, p in enumerate(msg["parts"]):
        if isinstance(p.get("text"), str):
            out.append(p["text"])
        elif "data" in p:
            out.append(orjson.dumps(p["data"]).decode())
        else:
            raise A2AError(-32005, f"params.message.parts[{i}]: only text and data parts are understood "
                                   "(no files or raw bytes)")
    return "\n".join(out)


def message_answers(msg: dict[str, Any], questions: list[dict[str, Any]]) -> dict[str, Any]:
    """The answers a user message gives to an input-required task's questions: with one question, its data
    part's value or its text (JSON when it parses, else the text); with several, an object keyed by
    question id (a data part, or JSON text)."""
    data = next((p["data"] for p in msg["parts"] if "data" in p), None)
    if data is None:
        text = "\n".join(p["text"] for p in msg["parts"] if isinstance(p.get("text"), str))
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            data = text
    if len(questions) == 1:
        qid = questions[0]["id"]
        if isinstance(data, dict) and set(data) == {qid}:
            return dict(data)
        return {qid: data}
    if not isinstance(data, dict):
        ids = ", ".join(q["id"] for q in questions)
        raise invalid_params(f"the task asks {len(questions)} questions ({ids}): answer with an object keyed "
                             "by question id (a data part, or JSON text)")
    return dict(data)


__all__ = ["FINAL_STATES", "STATES", "A2AError", "agent_message", "answer_artifact", "invalid_params",
           "message_answers", "message_of", "message_text", "not_cancelable", "rpc_error", "rpc_result",
           "status_of", "task_not_found", "task_of", "timestamp", "unsupported"]
