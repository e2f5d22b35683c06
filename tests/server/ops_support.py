"""Helpers for the operations tests: serve documents from a folder with any create_app keywords."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chainreact.server import Catalog, KeyStore, create_app

from .conftest import Served


def app_for(folder: Path, docs: dict[str, Any], *, keys: dict[str, Any] | None = None, **extras: Any) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    for name, doc in docs.items():
        (folder / name).write_text(json.dumps(doc))
    store = None
    if keys is not None:
        (folder.parent / "keys.json").write_text(json.dumps(keys))
        store = KeyStore.load(folder.parent / "keys.json")
    return create_app(Catalog.load([folder]), keys=store, **extras)


def serve(folder: Path, docs: dict[str, Any], **kw: Any) -> Served:
    """A started server (use as a context manager: `with serve(...) as srv:`)."""
    return Served(app_for(folder, docs, **kw))


def key(name: str, secret: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "sha256": hashlib.sha256(secret.encode()).hexdigest(), **extra}


def wait_until(cond: Callable[[], Any], what: str, timeout: float = 15.0) -> Any:
    """Poll `cond` until it is truthy (bounded): the condition, never a fixed sleep, decides."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
