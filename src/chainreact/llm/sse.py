"""Incremental Server-Sent Events decoder for chat-completion streams.

Fed raw bytes as they arrive, it returns the complete events' data payloads. It follows the SSE framing
rules that real providers rely on: `data:` lines (one optional space stripped), several `data:` lines
joined by "\\n", LF / CRLF / CR line ends (also split across reads), `:` comment and keep-alive lines,
`event:` names, and a last event that is not followed by a blank line (dispatched at `close()`).
It knows nothing about JSON; `[DONE]` is left to the caller.
"""

from __future__ import annotations

_DATA = b"data:"
_EVENT = b"event:"


class SSEDecoder:
    """Byte-level SSE framing. `feed()` returns `(event_name, data)` pairs; event_name is None for the
    default `message` event (every chat-completion chunk)."""

    __slots__ = ("_data", "_event", "_pending")

    def __init__(self) -> None:
        # Pieces of the unfinished last line, joined once its end arrives: a line that comes in many
        # reads costs time linear in its length (re-concatenating per read was quadratic).
        self._pending: list[bytes] = []
        self._data: list[bytes] | None = None
        self._event: str | None = None

    def feed(self, chunk: bytes) -> list[tuple[str | None, bytes]]:
        if b"\n" not in chunk and b"\r" not in chunk:
            if chunk:
                self._pending.append(chunk)  # still inside one line
            return []
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending.clear()
        hold = b""
        if b"\r" in chunk:
            # A CR at the very end may be the first half of a CRLF split across reads: keep it back so the
            # pair does not count as two line ends (that would dispatch a multi-line event early).
            if chunk[-1] == 13:
                hold = b"\r"
                chunk = chunk[:-1]
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = chunk.split(b"\n")
        rest = lines.pop()
        if rest:
            self._pending.append(rest)
        if hold:
            self._pending.append(hold)
        out: list[tuple[str | None, bytes]] = []
        for line in lines:
            self._line(line, out)
        return out

    def close(self) -> list[tuple[str | None, bytes]]:
        """End of body: process a last unterminated line and dispatch a pending event (lenient: the spec
        would drop it, but several providers end the body without the final blank line)."""
        out: list[tuple[str | None, bytes]] = []
        rest = b"".join(self._pending)
        self._pending.clear()
        if rest:
            for line in rest.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
                self._line(line, out)
        self._dispatch(out)
        return out

    def _line(self, line: bytes, out: list[tuple[str | None, bytes]]) -> None:
        if not line:
            self._dispatch(out)
            return
        if line[0] == 58:  # ':' comment / keep-alive
            return
        if line.startswith(_DATA):
            value = line[5:]
            if value[:1] == b" ":
                value = value[1:]
            if self._data is None:
                self._data = [value]
            else:
                self._data.append(value)
        elif line.startswith(_EVENT):
            self._event = line[6:].strip().decode("utf-8", "replace") or None
        elif line == b"data":  # a field name without a colon: empty value
            if self._data is None:
                self._data = [b""]
            else:
                self._data.append(b"")
        # id:, retry: and unknown fields carry nothing a chat client needs.

    def _dispatch(self, out: list[tuple[str | None, bytes]]) -> None:
        data = self._data
        if data is None:
            self._event = None
            return
        out.append((self._event, data[0] if len(data) == 1 else b"\n".join(data)))
        self._data = None
        self._event = None
