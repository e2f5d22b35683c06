"""FakeLLM: a scripted OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

It runs its own event loop in a background thread, so the same object works from synchronous tests,
from inside a running event loop (`async with`), and from the CLI. Each chat request consumes one turn of
the script (or asks a callable for one); see docs/testing.md for the turn keys.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import orjson

from chainreact.errors import ChainreactError, ConfigError

from ._http import BadRequest, HttpRequest, ResponseWriter, read_request
from .expect import check_expect
from .respond import (
    JSON,
    SSE,
    error_json,
    error_obj,
    response_headers,
    send_completion,
    send_json,
    send_raw,
    send_stream,
)
from .turns import (
    RenderContext,
    error_payload,
    estimate_tokens,
    prompt_chars,
    validate_turn,
)

Turn = Mapping[str, Any]
Responder = Callable[[dict[str, Any]], "Turn | Awaitable[Turn | None] | None"]
Script = Sequence[Turn] | Responder


@dataclass(slots=True)
class RecordedRequest:
    """One request as the server received it. `body` is the parsed JSON, or None if it was not JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    query: str = ""
    turn_index: int | None = None  # which script turn answered it (chat requests only)
    turn: dict[str, Any] | None = field(default=None, repr=False)
    # The client's (host, port): equal ports on two requests mean the client reused one connection.
    peer: tuple[str, int] | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's `messages`, or [] when there are none."""
        msgs = self.body.get("messages") if isinstance(self.body, dict) else None
        return msgs if isinstance(msgs, list) else []


def _is_chat(path: str) -> bool:
    return path.rstrip("/") in ("/v1/chat/completions", "/chat/completions")


class FakeLLM:
    """A scripted OpenAI-compatible server. Use as a (async) context manager or via start()/stop()."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        model: str = "fake-model",
        loop: bool = False,
        record: bool = True,
        backlog: int = 2048,
    ):
        self._responder: Responder | None = None
        self._turns: list[dict[str, Any]] = []
        if callable(script):
            self._responder = script
        elif script is not None:
            if isinstance(script, str | bytes | Mapping):
                raise ConfigError(
                    "FakeLLM script must be a list of turn dicts or a callable(request) -> turn"
                )
            self._turns = [validate_turn(t, f"FakeLLM script turn {i}") for i, t in enumerate(script)]
        self.host = host
        self.latency = latency
        self.model = model
        self.loop = loop
        self.record = record
        self._backlog = backlog
        self._requested_port = port
        self._port: int | None = None
        self._lock = threading.Lock()
        self._consumed = 0
        self._chat_count = 0
        self.requests: list[RecordedRequest] = []
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._startup_error: BaseException | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    # --- public surface ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise ChainreactError("FakeLLM is not running: call start() or use it as a context manager first")
        return self._port

    @property
    def url(self) -> str:
        """Base URL for an OpenAI-compatible client, e.g. http://127.0.0.1:PORT/v1."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in list(self.requests) if _is_chat(r.path)]

    @property
    def remaining(self) -> list[dict[str, Any]]:
        """Turns not yet consumed (in loop mode: those left in the current pass). [] for a callable script."""
        with self._lock:
            if not self._turns:
                return []
            start = self._consumed % len(self._turns) if self.loop else self._consumed
            return [dict(t) for t in self._turns[start:]]

    @property
    def consumed(self) -> int:
        """How many chat requests took a turn (or a responder answer) so far."""
        with self._lock:
            return self._consumed

    def add_turns(self, turns: Iterable[Turn]) -> None:
        """Append turns to the script; allowed while the server runs."""
        if self._responder is not None:
            raise ChainreactError(
                "FakeLLM.add_turns needs a list script; this server uses a responder callable"
            )
        with self._lock:
            base = len(self._turns)
            new = [validate_turn(t, f"FakeLLM turn {base + i}") for i, t in enumerate(turns)]
            self._turns.extend(new)

    def assert_all_consumed(self) -> None:
        """Fail (AssertionError) when scripted turns were never requested: the agent stopped early."""
        left = self.remaining
        if left and not self.loop:
            raise AssertionError(f"FakeLLM: {len(left)} scripted turn(s) never requested: {left!r}")

    def start(self) -> Self:
        if self._thread is not None:
            raise ChainreactError("FakeLLM.start(): this server is already running")
        ready = threading.Event()
        self._startup_error = None
        self._thread = threading.Thread(target=self._run, args=(ready,), name="FakeLLM", daemon=True)
        self._thread.start()
        ready.wait()
        if self._startup_error is not None:
            self._thread.join()
            self._thread = None
            err = self._startup_error
            raise ChainreactError(
                f"FakeLLM could not listen on {self.host}:{self._requested_port}: {err}; "
                "pick another port or use port=0 for a free one"
            ) from err
        return self

    def stop(self) -> None:
        """Stop serving, drop open connections and join the thread. Safe to call twice."""
        thread, loop, stop_event = self._thread, self._loop, self._stop_event
        if thread is None:
            return
        if loop is not None and stop_event is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop_event.set)
            except RuntimeError:
                pass  # the loop closed between the check and the call
        thread.join()
        self._thread = None
        self._port = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        # Starting takes a thread hand-off; do it off the caller's loop so that loop keeps running.
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    def __repr__(self) -> str:
        where = self.url if self._port is not None else "not running"
        return f"<FakeLLM {where} turns={len(self._turns)} consumed={self._consumed}>"

    # --- event loop thread -------------------------------------------------------------------------

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(ready))
        except BaseException as e:
            self._startup_error = e
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
                self._loop = None
                ready.set()

    async def _main(self, ready: threading.Event) -> None:
        self._stop_event = asyncio.Event()
        server = await asyncio.start_server(
            self._handle, self.host, self._requested_port, backlog=self._backlog, limit=1 << 20
        )
        self._port = server.sockets[0].getsockname()[1]
        ready.set()
        try:
            await self._stop_event.wait()
        finally:
            server.close()
            for w in list(self._writers):
                w.transport.abort()
            tasks = list(self._tasks)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await server.wait_closed()
            await asyncio.sleep(0)  # let aborted transports run their connection_lost callbacks

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._writers.add(writer)
        rw: ResponseWriter | None = None
        try:
            while True:
                try:
                    req = await read_request(reader, writer)
                except BadRequest as e:
                    rw = ResponseWriter(writer, keep_alive=False)
                    await rw.send(
                        400, [("content-type", JSON)], error_json(f"FakeLLM: bad HTTP request: {e}")
                    )
                    break
                if req is None:
                    break
                rw = ResponseWriter(writer, req.keep_alive)
                await self._dispatch(req, rw)
                if rw.aborted or not rw.keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing to answer
        except asyncio.CancelledError:
            pass  # server stopping
        except Exception as e:  # a bug or a misbehaving responder: report it, never hang the client
            print(f"FakeLLM: internal error while serving a request: {e!r}", file=sys.stderr)
            if rw is not None and not rw.aborted:
                rw.abort()
        finally:
            self._writers.discard(writer)
            if task is not None:
                self._tasks.discard(task)
            if rw is None or not rw.aborted:
                writer.close()

    async def _dispatch(self, req: HttpRequest, rw: ResponseWriter) -> None:
        path, _, query = req.target.partition("?")
        body: Any = None
        if req.body:
            try:
                body = orjson.loads(req.body)
            except orjson.JSONDecodeError:
                body = None
        peer = rw.writer.get_extra_info("peername")
        rec = RecordedRequest(req.method, path, dict(req.headers), body, req.body, query)
        if isinstance(peer, tuple):
            rec.peer = (str(peer[0]), int(peer[1]))
        if self.record:
            self.requests.append(rec)
        route = path.rstrip("/")
        if _is_chat(path):
            if req.method != "POST":
                await send_json(
                    rw, 405, error_obj(f"use POST for {path}, not {req.method}", "method_not_allowed")
                )
            else:
                await self._chat(req, rec, rw)
        elif route in ("/v1/models", "/models") and req.method == "GET":
            await send_json(rw, 200, {"object": "list", "data": [self._model_card()]})
        elif route.startswith(("/v1/models/", "/models/")) and req.method == "GET":
            if route.rsplit("/", 1)[1] == self.model:
                await send_json(rw, 200, self._model_card())
            else:
                await send_json(
                    rw, 404, error_obj(f"model {route.rsplit('/', 1)[1]!r} not found", "model_not_found")
                )
        else:
            msg = (
                "FakeLLM serves GET /v1/models and POST /v1/chat/completions; "
                f"no route for {req.method} {path}"
            )
            await send_json(rw, 404, error_obj(msg, "not_found"))

    def _model_card(self) -> dict[str, Any]:
        return {"id": self.model, "object": "model", "created": 0, "owned_by": "chainreact"}

    # --- chat completions --------------------------------------------------------------------------

    async def _next_turn(self, body: dict[str, Any]) -> tuple[dict[str, Any] | None, int, str | None]:
        """(turn, index, error message). A bad request never reaches here, so it consumes no turn."""
        with self._lock:
            index = self._consumed
            if self._responder is None:
                if not self._turns or (not self.loop and index >= len(self._turns)):
                    return None, index, f"FakeLLM script exhausted after {len(self._turns)} turns"
                self._consumed += 1
                return self._turns[index % len(self._turns)], index, None
            self._consumed += 1
        try:
            result = self._responder(body)
            if inspect.isawaitable(result):
                result = await result
        except Exception as e:
            return None, index, f"FakeLLM responder raised {type(e).__name__}: {e}"
        if result is None:
            return None, index, f"FakeLLM responder returned no turn for request {index}"
        try:
            return validate_turn(result, f"FakeLLM responder turn for request {index}"), index, None
        except ConfigError as e:
            return None, index, str(e)

    async def _chat(self, req: HttpRequest, rec: RecordedRequest, rw: ResponseWriter) -> None:
        body = rec.body
        if not isinstance(body, dict):
            what = "not valid JSON" if body is None else f"a JSON {type(body).__name__}"
            await send_json(
                rw, 400, error_obj(f"request body must be a JSON object; got {what}", "invalid_json")
            )
            return
        turn, index, err = await self._next_turn(body)
        if turn is None:
            await send_json(
                rw, 500, {"error": {"message": err, "type": "server_error", "code": "fake_llm_script"}}
            )
            return
        rec.turn_index, rec.turn = index, turn
        if "expect" in turn:
            diffs = check_expect(turn["expect"], body, req.headers)
            if diffs:
                msg = f"FakeLLM turn {index}: the request did not match 'expect': " + "; ".join(diffs)
                await send_json(rw, 418, error_obj(msg, "expectation_failed"))
                return
        wait = self.latency + float(turn.get("delay", 0)) + float(turn.get("first_byte_delay", 0))
        if wait > 0:
            await asyncio.sleep(wait)
        fault = turn.get("fault")
        if fault == "reset":
            rw.abort()  # RST before any byte: nothing the client could have read is lost
            return
        stream = body.get("stream") is True
        with self._lock:
            self._chat_count += 1
            n = self._chat_count
        base_headers = [("x-request-id", f"req_fake_{n}")]
        status = int(turn.get("status", 200))
        if "raw_body" in turn or "raw_body_b64" in turn:
            await send_raw(turn, rw, status, base_headers)
            return
        if "body" in turn or status >= 400:
            payload = error_payload(turn, status, f"FakeLLM scripted HTTP {status} error (turn {index})")
            data, ctype = (
                (payload.encode(), "text/plain; charset=utf-8")
                if isinstance(payload, str)
                else (
                    orjson.dumps(payload),
                    JSON,
                )
            )
            await rw.send(status, response_headers(turn, ctype, base_headers), data)
            return
        if fault == "empty":
            await rw.send(status, response_headers(turn, SSE if stream else JSON, base_headers), b"")
            return
        ctx = RenderContext(
            completion_id=f"chatcmpl-fake{n}",
            created=int(time.time()),
            model=str(turn.get("model", self.model)),
            call_id_prefix=f"call_{n}",
            prompt_tokens=max(1, estimate_tokens(prompt_chars(body))),
        )
        if stream:
            opts = body.get("stream_options")
            include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
            await send_stream(turn, ctx, include_usage, rw, status, base_headers)
        else:
            await send_completion(turn, ctx, rw, status, base_headers)
