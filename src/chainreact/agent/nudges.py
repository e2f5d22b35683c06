"""The loop's own instructions to the model (nudges), and keeping them out of the run's answer.

The loop talks to the model twice on its own: after `maxStep` steps it asks for an answer without tools
(MAX_STEPS_PROMPT), and the doom-loop guard refuses a repeated identical call with an `Error:` result
(repeat_refusal). A small model sometimes answers by repeating that text ("You have reached the maximum
number of steps ..."), and that must never reach the user as the answer:

- while the answer streams, `NudgeFilter` holds back a sentence that starts like a nudge until the sentence
  ends, and drops it if it is one (other text passes at once, so streaming is not delayed);
- when the run ends, `settle_answer` removes echoed nudge sentences from the answer. If nothing is left,
  the run answers with the last successful tool result of the current turn, or, without one, fails with
  NudgeEchoError saying what happened.

Both only act when a nudge was actually sent in the call that produced the answer (`nudged`), so a run
that never met a limit is not touched. Everything here is pure and deterministic (the durable workflow
runs the same loop).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import NudgeEchoError
from ..types import Message

MAX_STEPS_PROMPT = (
    "You have reached the maximum number of steps for this task. Do not call any more tools. "
    "Answer now with the best answer you can give from the information above."
)
REPEAT_PREFIX = "Error: {name} was already called "


def max_steps_warning(max_steps: int) -> str:
    """The `warning` event's message of a run that reached maxStep (maxStepPolicy "answer")."""
    return (f"the run reached maxStep ({max_steps} steps): its answer was asked for without tools and the "
            "task may be unfinished (raise maxStep, or set maxStepPolicy to 'error' to fail instead)")


def repeat_refusal(name: str, repeats: int) -> str:
    """The doom-loop guard's result for a refused call (tool_exec.py)."""
    return (
        f"{REPEAT_PREFIX.format(name=name)}{repeats} times with these same arguments and "
        "its result is above. Do not repeat it: use that result, change approach, or answer now."
    )


def _pattern(sentence: str) -> str:
    words = [re.escape(w) for w in sentence.split()]
    return r"\s+".join(words)


# Each sentence the loop ever sends on its own, as a case-insensitive pattern (flexible whitespace; the
# refusal's tool name and count vary; an echo cut short by max_tokens still counts when most of it is there).
_SENTENCES = [
    _pattern("You have reached the maximum number of steps") + r"(?:\s+for\s+this\s+task)?",
    _pattern("Do not call any more tools"),
    _pattern("Answer now with the best answer you can give") + r"(?:\s+from\s+the\s+information\s+above)?",
    r"(?:Error:\s*)?[\w.:-]+\s+was\s+already\s+called\s+\d+\s+times?(?:\s+with\s+these\s+same\s+arguments)?"
    r"(?:\s+and\s+its\s+result\s+is\s+above)?",
    _pattern("Do not repeat it")
    + r"(?::\s*use\s+that\s+result(?:,\s*change\s+approach)?(?:,?\s*or\s+answer\s+now)?)?",
]
_ECHO = re.compile(r"\s*(?:" + "|".join(_SENTENCES) + r")\s*[.!:;,]*", re.IGNORECASE)
# How a nudge sentence starts, lower-cased: text that may still become one of these is held back.
_STARTS = ("you have reached the maximum", "do not call any more tools", "answer now with the best",
           "error:", "do not repeat it")
_SENTENCE_END = re.compile(r"[.!?\n]")


def was_nudged(messages: Sequence[Message], final_call: bool) -> bool:
    """Whether the model call that answers saw a nudge: the max-steps prompt (the final call) or a
    doom-loop refusal among the results since the last user message."""
    if final_call:
        return True
    for m in reversed(messages):
        if m.role == "user":
            return False
        if m.role == "tool" and " was already called " in m.text and m.text.startswith("Error: "):
            return True
    return False


def strip_nudges(text: str) -> str:
    """`text` without the nudge sentences it repeats."""
    if not text:
        return text
    return _ECHO.sub(" ", text).strip() if _ECHO.search(text) else text


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def settle_answer(content: str, messages: Sequence[Message], agent: str) -> str:
    """The run's answer when the model may have echoed a nudge (see the module docstring)."""
    cleaned = strip_nudges(content)
    if cleaned == content or _has_words(cleaned):
        return cleaned
    for m in reversed(messages):
        if m.role == "user":
            break
        if m.role == "tool" and m.text.strip() and not m.text.startswith("Error"):
            return m.text.strip()
    raise NudgeEchoError(
        f"agent {agent!r}: the model answered with the loop's own instruction ({content.strip()[:80]!r}) "
        "and no tool gave a result to answer from. The model is too weak for this task: use a stronger "
        "model (url/model), simplify the task, or raise maxStep."
    )


class NudgeFilter:
    """Streaming side of strip_nudges: `feed` returns the text that may go out now, `flush` the rest.

    At the start of each sentence, text that could still be the start of a nudge is held; a sentence that
    starts like one is held to its end and dropped if it is one. Anything else passes through at once.
    """

    __slots__ = ("_held", "_passing")

    def __init__(self) -> None:
        self._held = ""
        self._passing = False  # inside a sentence that is not a nudge: pass until it ends

    def feed(self, text: str) -> str:
        out: list[str] = []
        while text:
            if self._passing:
                m = _SENTENCE_END.search(text)
                if m is None:
                    out.append(text)
                    return "".join(out)
                out.append(text[: m.end()])
                text = text[m.end():]
                self._passing = False
                continue
            self._held += text
            text = ""
            out.append(self._decide())
        return "".join(out)

    def _decide(self) -> str:
        """Act on the held text at a sentence start; returns what can go out."""
        emitted: list[str] = []
        while self._held:
            head = " ".join(self._held.split()).lower()
            if not head:
                return "".join(emitted)  # only whitespace so far: keep it with what follows
            if any(start.startswith(head) for start in _STARTS):
                return "".join(emitted)  # may still become a nudge: wait for more
            if not any(head.startswith(start) for start in _STARTS):
                self._passing = True
                rest, self._held = self._held, ""
                emitted.append(self.feed(rest))
                return "".join(emitted)
            end = _SENTENCE_END.search(self._held)
            if end is None:
                return "".join(emitted)  # starts like a nudge: wait for the sentence's end
            sentence, self._held = self._held[: end.end()], self._held[end.end():]
            cleaned = strip_nudges(sentence)
            emitted.append(sentence if cleaned == sentence else cleaned + " " if _has_words(cleaned) else "")
        return "".join(emitted)

    def flush(self) -> str:
        held, self._held = self._held, ""
        self._passing = False
        cleaned = strip_nudges(held)
        return cleaned if cleaned == held or _has_words(cleaned) else ""
