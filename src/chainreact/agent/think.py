"""`keepThink: false`: `<think>...</think>` blocks inside the answer text become reasoning.

Some models write their reasoning into the content as `<think>...</think>` instead of a separate
`reasoning_content` field. Without `keepThink`, that text must not reach the answer, whether it arrives
whole or streamed in chunks that split a tag anywhere (`"<thi" + "nk>"`). `ThinkSplitter` is fed the text
as it comes and returns (is_think, text) pieces; only a possible tag prefix at a chunk's end is held back,
so the answer still streams in real time. The whitespace right after a closing tag is dropped (the model
puts a newline there). An unclosed block is reasoning up to the end.
"""

from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"


class ThinkSplitter:
    __slots__ = ("_after_close", "_held", "_in_think")

    def __init__(self) -> None:
        self._held = ""  # a suffix that may be the start of a tag
        self._in_think = False
        self._after_close = False

    def feed(self, text: str) -> list[tuple[bool, str]]:
        if not self._held and "<" not in text and not self._after_close:
            # The common case: plain text with nothing pending.
            return [(self._in_think, text)] if text else []
        text = self._held + text
        self._held = ""
        out: list[tuple[bool, str]] = []
        while text:
            if self._after_close and not self._in_think:
                text = text.lstrip()
                if not text:
                    break
                self._after_close = False
            tag = CLOSE if self._in_think else OPEN
            at = text.find(tag)
            if at >= 0:
                if at:
                    out.append((self._in_think, text[:at]))
                text = text[at + len(tag):]
                self._after_close = self._in_think
                self._in_think = not self._in_think
                continue
            keep = _partial_tag(text, tag)
            if keep:
                self._held = text[-keep:]
                text = text[:-keep]
            if text:
                out.append((self._in_think, text))
            break
        return out

    def flush(self) -> list[tuple[bool, str]]:
        """The held text at the end of the stream (a tag prefix that never completed is plain text)."""
        held, self._held = self._held, ""
        return [(self._in_think, held)] if held else []


def _partial_tag(text: str, tag: str) -> int:
    """The length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


def split_think(text: str) -> tuple[str, str]:
    """(answer text, reasoning text) of a whole text, the same way the streamed deltas are split."""
    sp = ThinkSplitter()
    answer: list[str] = []
    thoughts: list[str] = []
    for is_think, piece in (*sp.feed(text), *sp.flush()):
        (thoughts if is_think else answer).append(piece)
    return "".join(answer), "".join(thoughts)
