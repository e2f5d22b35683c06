"""Capturing command output for a model: bounded memory, head and tail kept, terminal noise removed."""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks), and other two-byte escapes.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[PX^_][^\x1b]*\x1b\\"
    r"|\x1b[@-Z\\-_]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
# Other control characters a model has no use for (keeps \t and \n).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def strip_ansi(text: str) -> str:
    """Remove escape sequences; a carriage return (progress bars) keeps only what was drawn last."""
    text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(line.rsplit("\r", 1)[-1] if "\r" in line else line for line in text.split("\n"))
    return _CONTROL.sub("", text)


class HeadTail:
    """Collects a byte stream keeping at most `limit` bytes of its start and `limit` of its end."""

    def __init__(self, limit: int):
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.newlines = 0
        self.last_byte = b""

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        self.last_byte = chunk[-1:]
        room = self.limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.limit:
                del self.tail[: len(self.tail) - self.limit]

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.total and self.last_byte != b"\n" else 0)

    @property
    def dropped(self) -> int:
        """Bytes between head and tail that were never stored."""
        return self.total - len(self.head) - len(self.tail)

    def text(self, max_chars: int) -> str:
        """The cleaned text, cut in the middle to at most ~max_chars with a marker saying what was cut."""
        keep_head = max(1, max_chars // 2)
        keep_tail = max(1, max_chars - keep_head)
        if not self.dropped:
            full = strip_ansi(bytes(self.head + self.tail).decode("utf-8", errors="replace"))
            if len(full) <= max_chars:
                return full
            shown_head, shown_tail = full[:keep_head], full[-keep_tail:]
        else:
            # Bytes between head and tail were never stored: never join text across that gap.
            head = strip_ansi(bytes(self.head).decode("utf-8", errors="replace"))
            tail = strip_ansi(bytes(self.tail).decode("utf-8", errors="replace"))
            shown_head, shown_tail = head[:keep_head], tail[-keep_tail:]
        # Prefer cutting at line boundaries when one is near, so no half lines are shown.
        nl = shown_head.rfind("\n")
        if nl >= len(shown_head) // 2:
            shown_head = shown_head[: nl + 1]
        nl = shown_tail.find("\n")
        if 0 <= nl < len(shown_tail) // 2:
            shown_tail = shown_tail[nl + 1 :]
        marker = (f"[... output truncated: showing the first {len(shown_head)} and last {len(shown_tail)} "
                  f"characters of {self.total} bytes ({self.lines} lines) ...]\n")
        sep = "" if shown_head.endswith("\n") else "\n"
        return shown_head + sep + marker + shown_tail
