"""chainreact.server: agents and rule chains over HTTP (OpenAI's API and RuleGo's API), with SSE.

Needs the `server` extra (Starlette, uvicorn). `chainreact serve PATH...` is the command line; in Python:

    catalog = Catalog.load(["examples/"], globals={...})
    app = create_app(catalog, keys=KeyStore.load("keys.yaml"))
"""

from .app import create_app
from .auth import KeyStore
from .background import serve_in_background
from .catalog import Catalog

__all__ = ["Catalog", "KeyStore", "create_app", "serve_in_background"]
