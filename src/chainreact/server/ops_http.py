"""One ASGI layer that measures every HTTP request once and tells its observers (metrics, access log).

It reads what the inner layers leave in the scope: the matched route (Starlette puts it in
`scope["route"]`, so metrics are labelled by template, not by raw path) and the API key that `guard`
accepted (`request.state.key`, kept in `scope["state"]`). Duration runs until the last body byte is
sent, so a stream counts whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass(frozen=True, slots=True)
class RequestInfo:
    method: str
    path: str  # without the query string (it may carry secrets)
    route: str  # the route template, "<unmatched>" when no route matched
    status: int
    seconds: float
    key: str | None  # the API key's name from the keys file, never the key
    client: str | None


RequestCallback = Callable[[RequestInfo], None]


class RequestObserver:
    def __init__(self, app: ASGIApp, callbacks: Sequence[RequestCallback]):
        self.app = app
        self.callbacks = tuple(callbacks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # if the app raises before answering, the error layer outside us answers 500
        ended = False

        async def watched_send(message: Message) -> None:
            nonlocal status, ended
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                await send(message)
                if not ended:
                    ended = True
                    self._report(scope, status, time.perf_counter() - start)
                return
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        finally:
            if not ended:  # raised, or the client went away mid-stream
                ended = True
                self._report(scope, status, time.perf_counter() - start)

    def _report(self, scope: Scope, status: int, seconds: float) -> None:
        route = scope.get("route")
        key = (scope.get("state") or {}).get("key")
        client = scope.get("client")
        info = RequestInfo(scope["method"], scope["path"], getattr(route, "path", None) or "<unmatched>",
                           status, seconds, getattr(key, "name", None), client[0] if client else None)
        for cb in self.callbacks:
            cb(info)
