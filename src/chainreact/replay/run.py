"""Replaying a cassette: the agent (a chain, a flow) runs again, offline, its model answering from the tape.

    result = await replay_agent(cassette, agent)         # chainreact.testing.replay(...) for tests
    result.ok, result.answer, result.steps, result.diffs

The run follows the recording when it sends the recorded requests, makes the same tool calls with the same
arguments and gets (with `live_tools`) the same results, and gives the same answer. `ignore`: parts of the
requests not compared, "system" (a prompt with the time in it) and/or "tools" (tool descriptions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..agent.plan import plan_hook
from ..agent.recording import document_identity
from .cassette import CassetteError, top_agent
from .diff import Diff
from .player import Replayer

if TYPE_CHECKING:
    from ..agent.agent import Agent


@dataclass
class ReplayResult:
    ok: bool
    answer: str | None
    steps: int  # model calls the replayed run made
    diffs: list[Diff] = field(default_factory=list)
    kind: str = "agent"
    document_changed: bool = False  # the document's hash differs from the recorded one (informative)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` form of `chainreact replay`."""
        return {"ok": self.ok, "answer": self.answer, "steps": self.steps,
                "diffs": [d.to_dict() for d in self.diffs], "kind": self.kind,
                "document_changed": self.document_changed}

    def report(self) -> str:
        """A few lines for a person: the verdict and every diff."""
        head = "replay: ok, the run follows the recording" if self.ok else \
            f"replay: {len(self.diffs)} difference(s) from the recording"
        lines = [head + f" ({self.steps} model call(s))"]
        lines += [f"  {d}" for d in self.diffs]
        if self.document_changed:
            lines.append("  (the document changed since the recording)")
        return "\n".join(lines) + "\n"


def _compare_answer(expected: Any, got: Any, diffs: list[Diff]) -> None:
    if expected is not None and got != expected:
        diffs.append(Diff("answer", "", expected=expected, got=got))


async def replay_agent(cassette: dict[str, Any], agent: Agent, *, live_tools: bool = False,
                       ignore: tuple[str, ...] = ()) -> ReplayResult:
    """Run `agent` on the cassette's input with its model (and, unless `live_tools`, its tools) answered
    from the cassette; every difference from the recording is a Diff."""
    if cassette.get("kind") != "agent":
        raise CassetteError(f"replay: this cassette records a {cassette.get('kind')} run, not an agent's")
    top = top_agent(cassette)
    if top is None:
        raise CassetteError("replay: the cassette has no recorded agent run ($.agents is empty)")
    replayer = Replayer(cassette, live_tools=live_tools, ignore=ignore)
    stream = bool(top["steps"] and top["steps"][0]["request"].get("stream"))
    answer: str | None = None
    error: BaseException | None = None
    with plan_hook(replayer):
        try:
            result = await agent.run(cassette.get("input"), stream=stream)
            answer = result.content
        except Exception as e:  # the run's own failure is part of what is compared
            error = e
    diffs = replayer.finish()
    recorded_error = cassette.get("error")
    if error is not None and not any(d.kind in ("steps", "agent") for d in diffs):
        if recorded_error is None:
            diffs.append(Diff("error", f"the run failed: {type(error).__name__}: {error}"))
    elif error is None and recorded_error is not None:
        diffs.append(Diff("error", "the recorded run failed, the replay did not", expected=recorded_error,
                          got=answer))
    if error is None:
        _compare_answer(cassette.get("answer"), answer, diffs)
    tape = next((t for t in replayer.tapes if t.data is top), None)
    changed = document_changed(cassette, document_identity(agent))
    return ReplayResult(not diffs, answer, tape.made if tape is not None else 0, diffs, "agent", changed)


def document_changed(cassette: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether the document's hash differs from the recorded one (both known)."""
    recorded = (cassette.get("document") or {}).get("hash")
    return bool(recorded and now.get("hash") and recorded != now["hash"])


__all__ = ["ReplayResult", "document_changed", "replay_agent"]
