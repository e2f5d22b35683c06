"""A request's head (its request line and headers) bounded in size: 431 past `header_limit` bytes.

uvicorn's HTTP parsers do not bound a head the way the server needs: httptools (the default) gathered a
100 MB header in memory, a piece at a time, which held the event loop for seconds and grew the process by
180 MB before the request was served; h11 stops at 16 KiB, with a 400. The app cannot help: an ASGI app
is called once the whole head has been read. So the bound is in the protocol: `protocol_class(http)` is
uvicorn's protocol for that parser with the limit added, and the one uvicorn starter (background.py)
uses it, with the limit in uvicorn's `h11_max_incomplete_event_size` (which h11 itself enforces):

- httptools: the bytes of a head still incomplete are counted as they arrive; past the limit the server
  answers 431 and closes the connection without reading more (at most one read, 256 KiB, past the
  limit is ever held). A head that arrives whole in one read is measured when it completes (the request
  line and every header), and refused the same way before the app sees it.
- h11: h11 refuses a head still incomplete past the limit (its hint is 431, which uvicorn answered as
  400); a head that arrived whole is measured when h11 has parsed it.

The answer is `{"error": {"message", "code": "headers_too_large"}}` with `Connection: close`. An app
served by another ASGI server relies on that server's own limits.
"""

from __future__ import annotations

import functools
from typing import Any

import orjson

DEFAULT_HEADER_LIMIT = 64 * 1024


class HeadTooLarge(Exception):
    """Raised inside a parser callback to stop parsing a head past its limit."""


def too_large_body(limit: int) -> bytes:
    return orjson.dumps({"error": {"message": f"the request's headers are larger than the limit of {limit} "
                                              "bytes (header_limit)", "code": "headers_too_large"}})


def protocol_class(http: str) -> type[Any]:
    """uvicorn's protocol class for `http` (auto | h11 | httptools) with the head limit; the limit itself is
    read from uvicorn's Config (`h11_max_incomplete_event_size`)."""
    if http == "auto":
        try:
            import httptools  # noqa: F401
        except ImportError:
            http = "h11"
        else:
            http = "httptools"
    return _httptools_class() if http == "httptools" else _h11_class()


@functools.cache
def _httptools_class() -> type[Any]:
    from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

    class HeadLimitedHttpTools(HttpToolsProtocol):
        def __init__(self, config: Any, server_state: Any, app_state: Any, _loop: Any = None) -> None:
            super().__init__(config, server_state, app_state, _loop)
            self.head_limit = int(config.h11_max_incomplete_event_size or DEFAULT_HEADER_LIMIT)
            self.in_head = True  # between requests and in a head; False in a body
            self.head_read = 0  # bytes of reads that ended inside the current head
            self.head_size = 0  # the current head's request target and headers, as parsed
            self.requests_done = 0
            self.refused = False

        def data_received(self, data: bytes) -> None:
            was_in_head, done = self.in_head, self.requests_done
            super().data_received(data)
            if self.refused or self.parser is None or self.transport.is_closing():
                return
            if self.in_head and was_in_head and done == self.requests_done:
                # The whole read belongs to a head that is not complete yet (a read that also ended a
                # request is not counted: its bytes are that request's).
                self.head_read += len(data)
                if self.head_read > self.head_limit:
                    self.refused = True
                    self.send_400_response("")  # as 431 (below)

        def on_message_begin(self) -> None:
            self.head_size = 0
            super().on_message_begin()

        def on_url(self, url: bytes) -> None:
            self.head_size += len(url)
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self.head_size += len(name) + len(value) + 4
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self.in_head = False
            if self.head_size > self.head_limit:
                self.refused = True
                raise HeadTooLarge  # httptools stops parsing; uvicorn answers through send_400_response
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self.in_head, self.head_read = True, 0
            self.requests_done += 1
            super().on_message_complete()

        def send_400_response(self, msg: str) -> None:
            if not self.refused:
                super().send_400_response(msg)
                return
            body = too_large_body(self.head_limit)
            self.transport.write(b"".join([
                STATUS_LINE[431], b"content-type: application/json\r\n",
                b"content-length: %d\r\n" % len(body), b"connection: close\r\n\r\n", body]))
            self.transport.close()

    return HeadLimitedHttpTools


@functools.cache
def _h11_class() -> type[Any]:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadLimitedH11(H11Protocol):
        def __init__(self, config: Any, server_state: Any, app_state: Any, _loop: Any = None) -> None:
            super().__init__(config, server_state, app_state, _loop)
            self.head_limit = int(config.h11_max_incomplete_event_size or DEFAULT_HEADER_LIMIT)
            self.refused = False
            parse = self.conn.next_event

            def next_event() -> Any:
                # h11 bounds a head still incomplete (hint 431); a head that came whole is measured here.
                try:
                    event = parse()
                except h11.RemoteProtocolError as e:
                    self.refused = e.error_status_hint == 431
                    raise
                if isinstance(event, h11.Request) and \
                        len(event.target) + sum(len(k) + len(v) + 4 for k, v in event.headers) \
                        > self.head_limit:
                    self.refused = True
                    raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
                return event

            self.conn.next_event = next_event  # type: ignore[method-assign]

        def send_400_response(self, msg: str) -> None:
            if not self.refused:
                super().send_400_response(msg)
                return
            body = too_large_body(self.head_limit)
            headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                       (b"connection", b"close")]
            self.transport.write(self.conn.send(h11.Response(status_code=431, headers=headers,
                                                             reason=b"Request Header Fields Too Large")))
            self.transport.write(self.conn.send(h11.Data(data=body)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
            self.transport.close()

    return HeadLimitedH11


__all__ = ["DEFAULT_HEADER_LIMIT", "protocol_class"]
