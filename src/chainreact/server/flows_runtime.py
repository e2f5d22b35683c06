"""Flows as the server runs them: bound to one state store, the user of a request, a turn as frames.

The store: the one the runs API opened at startup (`ctx.store`: the `state` URL, else an in-memory SQLite
store); without the runs API, the `state` URL opened on first use, else an in-memory SQLite store of its
own. In memory, sessions are lost on restart. The flow document's own `state` key is not used by the
server: one server, one store.

The user handed to a flow: server/login.py (`flow_user`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from starlette.requests import Request

from .frames import Done, Failed, Frame, Text, tool_frame

if TYPE_CHECKING:
    from ..durable import DurableFlow
    from ..flows import Flow
    from ..state import Store
    from .catalog import Catalog
    from .config import ServerConfig
    from .durable_dispatch import TemporalDispatcher

log = logging.getLogger("chainreact.server")


class FlowHost(Protocol):
    """What the runtime reads of its app: the ServerContext (server/context.py), seen through this protocol
    because the context names FlowRuntime (`ctx.flows`) and imports must not go round in a circle."""

    @property
    def catalog(self) -> Catalog: ...
    @property
    def config(self) -> ServerConfig: ...
    @property
    def store(self) -> Store | None: ...
    @property
    def dispatch(self) -> TemporalDispatcher | None: ...


class FlowRuntime:
    """The flows of one app (`ctx.flows`), bound lazily to the server's store (opened once, closed at
    shutdown)."""

    def __init__(self, ctx: FlowHost):
        self.ctx = ctx
        self._store: Store | None = None
        self._own_store = False
        self._lock = asyncio.Lock()
        self._bound: dict[str, Any] = {}

    async def store(self) -> Store:
        async with self._lock:
            if self._store is None:
                from ..state import open_store

                given = self.ctx.config.state
                shared = self.ctx.store
                if shared is not None:
                    # The runs API opened the server's store at startup (the --state URL, else its own
                    # in-memory one): flows share it rather than open a second connection.
                    self._store = shared
                else:
                    url = given or "sqlite:///:memory:"
                    self._store, self._own_store = await open_store(url), True
                    if given is None:
                        log.info("flows: no state store given; sessions live in memory and are lost on "
                                 "restart")
            return self._store

    async def flow(self, ident: str) -> Flow | DurableServedFlow | None:
        """The served flow `ident`, bound to the server's store and chain engine; None if not a flow."""
        entry = self.ctx.catalog.entries.get(ident)
        if entry is None or entry.kind != "flow":
            return None
        bound = self._bound.get(ident)
        if bound is None or bound[0] is not entry.flow:
            from ..flows import Flow

            loaded = entry.flow
            definition = loaded.definition
            if not definition.id:
                # Sessions are keyed by the flow's id: a flow without one takes its served id, so two
                # anonymous flows never share sessions in one store.
                definition = definition.model_copy(update={"id": ident})
            local = Flow(definition, source=loaded.source, store=await self.store(),
                         chains=self.ctx.catalog.engine)
            flow: Flow | DurableServedFlow = local
            dispatch = self.ctx.dispatch
            if dispatch is not None and dispatch.serves("flow", ident):  # serve --temporal
                flow = DurableServedFlow(local, dispatch.flow(local.id), await self.store(), dispatch)
            bound = self._bound[ident] = (loaded, flow)
        return bound[1]

    async def served(self, ident: str) -> Flow | DurableServedFlow:
        """`flow(ident)` for a caller holding the catalog's flow entry `ident`."""
        flow = await self.flow(ident)
        if flow is None:
            raise LookupError(f"{ident!r} is not a served flow")
        return flow

    async def aclose(self) -> None:
        if self._store is not None and self._own_store:
            await self._store.close()
        self._store = None
        self._bound.clear()


class DurableServedFlow:
    """A served flow whose turns are workflows on the workers (`serve --temporal`; durable.DurableFlow, the
    session in the shared store): `stream` and `send` as a Flow's, the rest (definition, session_key,
    current_node, ...) the in-process Flow's, which reads the same store. The workers host the flow by its
    id (`chainreact worker flow.json --state URL`). A client that leaves a streamed turn cancels it, as in
    process, except while the server shuts down (the dispatcher's `closing`): then the workers finish it."""

    def __init__(self, flow: Flow, durable: DurableFlow, store: Store,
                 dispatch: TemporalDispatcher | None = None):
        self.local = flow
        self.durable = durable
        self.log_store = store  # where the workers log the turns' events
        self.dispatch = dispatch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.local, name)

    def stream(self, session: str, text: str, *, user: Mapping[str, Any] | None = None,
               group: Mapping[str, Any] | None = None, agent_events: bool = False) -> AsyncIterator[Any]:
        # DurableFlow's own iterator: closed by the route when its client leaves (no wrapper in between
        # that would leave it to the garbage collector).
        return self.durable.stream(session, text, store=self.log_store, user=user, group=group,
                                   agent_events=agent_events, keep_running=self._closing)

    def _closing(self) -> bool:
        return bool(getattr(self.dispatch, "closing", False))

    async def send(self, session: str, text: str, *, user: Mapping[str, Any] | None = None,
                   group: Mapping[str, Any] | None = None) -> Any:
        return await self.durable.send(session, text, user=user, group=group)


def session_key(request: Request, body: Mapping[str, Any]) -> str:
    """The session of an OpenAI request: `user`, else the X-Session-Key header, else a new one."""
    given = body.get("user")
    if isinstance(given, str) and given.strip():
        return given.strip()
    header = request.headers.get("x-session-key", "").strip()
    return header or "s-" + secrets.token_hex(8)


def last_user_text(body: Mapping[str, Any]) -> str | None:
    """The text of the last user message of an OpenAI request (text parts joined), or None."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(str(p.get("text", "")) for p in content
                           if isinstance(p, dict) and p.get("type") == "text")
        return None
    return None


async def flow_frames(flow: Flow | DurableServedFlow, session: str, text: str, user: Mapping[str, Any], *,
                      stream: bool = False, tools: bool = False) -> AsyncIterator[Frame]:
    """One turn as frames: its messages as Text frames (each message after the first preceded by a blank
    line), then Done with all of them joined. `stream`: an agent node's message comes as the pieces of
    its text while the model writes it (flows.answer_stream.text_deltas), then whatever of the message
    they did not give; the pieces joined are the message. Only if they turn out not to be the message's
    start (an answer asked again that changed) does the whole message follow them after a blank line.
    `tools` (with `stream`; for X-Stream-Protocol: agui clients): the agent nodes' tool calls and results
    as Tool frames too, where they happen among the text, made from the agent's events as an agent's own
    stream makes them (frames.tool_frame), collaborators' calls included."""
    from ..flows.answer_stream import text_deltas

    parts: list[str] = []
    said = False  # some text went out: the next message starts with a blank line
    streamed: tuple[str | None, str] | None = None  # (node, its text given so far) while one streams
    if stream:
        events = text_deltas(flow.definition, flow.stream(session, text, user=user, agent_events=True),
                             keep_agent=tools)
    else:
        events = flow.stream(session, text, user=user)
    try:
        async for ev in events:
            if ev.type == "agent":  # only with `tools`
                frame = tool_frame(ev.data["agent_event"])
                if frame is not None:
                    yield frame
            elif ev.type == "text_delta":
                piece = str(ev.data["text"])
                if streamed is None or streamed[0] != ev.node:
                    streamed = (ev.node, "")
                    piece = ("\n\n" if said else "") + piece
                    said = True
                streamed = (ev.node, streamed[1] + str(ev.data["text"]))
                yield Text(piece)
            elif ev.type == "message":
                content = str(ev.data.get("content", ""))
                if streamed is not None and streamed[0] == ev.node and content.startswith(streamed[1]):
                    rest = content[len(streamed[1]):]
                    if rest:
                        yield Text(rest)
                else:
                    yield Text(("\n\n" if said else "") + content)
                streamed, said = None, True
                parts.append(content)
    except Exception as e:  # a turn that fails saves nothing; the client gets why
        yield Failed(str(e) or type(e).__name__)
        return
    finally:
        # A client that left: the turn stops (a durable one is cancelled).
        await events.aclose()  # type: ignore[attr-defined]
    yield Done("\n\n".join(parts), model=flow.id)


__all__ = ["FlowHost", "FlowRuntime", "flow_frames", "last_user_text", "session_key"]
