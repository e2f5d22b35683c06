"""A blocking facade over the async store, for scripts and sync code: the same methods, without await.

    with SyncStore("sqlite:///.chainreact/state.db") as store:
        store.append("s1", user("hi"))
        print(store.history("s1", last=10))

The store runs on a private event loop in a daemon thread, so it works whether or not the caller has a
loop of its own (but from async code, use the async store: a blocking call would stall that loop).
`follow_events` (an async iterator) is not offered here; poll `events(run_id, after=...)` instead.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from .base import Store
from .factory import open_store

T = TypeVar("T")


class SyncStore:
    def __init__(self, url: str | None = None, **kwargs: Any):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="chainreact-state", daemon=True)
        self._thread.start()
        try:
            self._store: Store = self._call(open_store(url, **kwargs))
        except BaseException:
            self._stop()
            raise

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __getattr__(self, name: str) -> Any:
        if name == "follow_events":
            raise AttributeError("SyncStore has no follow_events: poll events(run_id, after=...) instead")
        attr = getattr(self._store, name)
        if inspect.iscoroutinefunction(attr):
            def blocking(*args: Any, **kwargs: Any) -> Any:
                return self._call(attr(*args, **kwargs))
            return blocking
        return attr

    @property
    def store(self) -> Store:
        """The async store underneath (its methods must be awaited on this facade's loop)."""
        return self._store

    def close(self) -> None:
        if self._loop.is_running():
            try:
                self._call(self._store.close())
            finally:
                self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> SyncStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SyncStore {self._store.url.masked}>"

