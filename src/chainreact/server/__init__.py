"""chainreact.server: agents and rule chains over HTTP (OpenAI's API and RuleGo's API), with SSE.

Needs the `server` extra (Starlette, uvicorn). `chainreact serve PATH...` is the command line; in Python:

    catalog = Catalog.load(["examples/"], globals={...})
    app = create_app(catalog, keys=KeyStore.load("keys.yaml"))   # or create_app(catalog, ServerConfig(...))
"""

from .app import create_app
from .auth import KeyStore
from .background import serve_in_background
from .catalog import Catalog
from .config import ServerConfig, ServerOptionError
from .readiness import cannot_run

__all__ = ["Catalog", "KeyStore", "ServerConfig", "ServerOptionError", "cannot_run", "create_app",
           "serve_in_background"]
