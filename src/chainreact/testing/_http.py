"""A minimal HTTP/1.1 server layer on raw asyncio streams, just enough for an OpenAI-compatible fake.

Supports keep-alive, Content-Length and chunked request bodies, `Expect: 100-continue`, fixed-length and
chunked responses, and abrupt aborts (RST) for fault injection. Written by hand rather than on a framework
so the fake adds no dependency and can misbehave on purpose at the byte level.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from dataclasses import dataclass
from http import HTTPStatus

MAX_BODY = 64 * 1024 * 1024

# Headers the server computes itself: copying them from a script or a recorded exchange would corrupt the
# framing (a recorded `transfer-encoding: chunked` beside our Content-Length, a `content-encoding: gzip`
# on a body we serve decoded).
FRAMING_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}
)


class BadRequest(Exception):
    """The client sent bytes that are not a valid HTTP/1.x request."""


@dataclass(slots=True)
class HttpRequest:
    method: str
    target: str
    version: str
    headers: dict[str, str]
    body: bytes

    @property
    def keep_alive(self) -> bool:
        conn = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in conn
        return "close" not in conn


async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> HttpRequest | None:
    """Read one request; None when the client closed the connection cleanly between requests."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial.strip():
            return None
        raise BadRequest("connection closed in the middle of the request head") from e
    except asyncio.LimitOverrunError as e:
        raise BadRequest("request head too large") from e
    lines = head[:-4].decode("latin-1").split("\r\n")
    # RFC 9112 asks servers to ignore empty lines before the request line.
    while lines and not lines[0]:
        lines.pop(0)
    if not lines:
        raise BadRequest("empty request")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"bad request line {lines[0]!r}")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise BadRequest(f"bad header line {line!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value

    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _read_chunked(reader)
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError as e:
            raise BadRequest(f"bad content-length {headers['content-length']!r}") from e
        if length < 0 or length > MAX_BODY:
            raise BadRequest(f"content-length {length} out of range")
        try:
            body = await reader.readexactly(length)
        except asyncio.IncompleteReadError as e:
            raise BadRequest("connection closed before the whole body arrived") from e
    else:
        body = b""
    return HttpRequest(method.upper(), target, version, headers, body)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    total = 0
    try:
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError as e:
                raise BadRequest(f"bad chunk size line {size_line!r}") from e
            if size == 0:
                # Trailer fields, if any, end with an empty line; we ignore them.
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass
                return b"".join(parts)
            total += size
            if total > MAX_BODY:
                raise BadRequest("chunked body too large")
            parts.append(await reader.readexactly(size))
            if await reader.readexactly(2) != b"\r\n":
                raise BadRequest("chunk not terminated by CRLF")
    except asyncio.IncompleteReadError as e:
        raise BadRequest("connection closed in the middle of a chunked body") from e


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines.extend(f"{k}: {v}" for k, v in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class ResponseWriter:
    """Writes one response on a connection; `keep_alive` decides the Connection header."""

    def __init__(self, writer: asyncio.StreamWriter, keep_alive: bool):
        self.writer = writer
        self.keep_alive = keep_alive
        self.aborted = False

    def _conn_header(self) -> tuple[str, str]:
        return ("connection", "keep-alive" if self.keep_alive else "close")

    async def send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        """A complete fixed-length response."""
        all_headers = [*headers, ("content-length", str(len(body))), self._conn_header()]
        self.writer.write(_head(status, all_headers) + body)
        await self.writer.drain()

    async def send_partial(self, status: int, headers: list[tuple[str, str]], body: bytes, sent: int) -> None:
        """Announce the full length but write only `sent` bytes of the body (then the caller aborts)."""
        all_headers = [*headers, ("content-length", str(len(body))), self._conn_header()]
        self.writer.write(_head(status, all_headers) + body[:sent])
        await self.writer.drain()

    async def start_chunked(self, status: int, headers: list[tuple[str, str]]) -> None:
        all_headers = [*headers, ("transfer-encoding", "chunked"), self._conn_header()]
        self.writer.write(_head(status, all_headers))
        await self.writer.drain()

    async def chunk(self, data: bytes) -> None:
        if data:  # a zero-length chunk would end the body
            self.writer.write(b"%x\r\n%b\r\n" % (len(data), data))
            await self.writer.drain()

    async def end_chunked(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    def cut(self) -> None:
        """End the connection mid-response with an orderly FIN after the bytes already written.

        Used for "disconnect": unlike an RST, the kernel still delivers every byte sent before, so the
        client deterministically sees exactly the chunks the script promised, then a truncated body.
        """
        self.aborted = True
        self.writer.transport.close()

    def abort(self) -> None:
        """Drop the connection at once with a TCP RST (SO_LINGER 0), as a crashed upstream would."""
        self.aborted = True
        transport = self.writer.transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass  # already closed by the peer: nothing left to reset
        transport.abort()
