"""`chainreact serve`: agents, rule chains and flows over HTTP (needs the `server` extra)."""

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import ipaddress
import os
import sys
from typing import TYPE_CHECKING, Any

from .common import (
    EXIT_FAIL,
    EXIT_OK,
    AddCommand,
    UsageError,
    add_globals,
    build_globals,
    one_line,
    port_number,
)

if TYPE_CHECKING:
    from ..server.users import UserStore


def cmd_serve(args: argparse.Namespace) -> int:
    if args.hash_key:
        from ..server.auth import hash_key

        print(hash_key(args.hash_key))
        return EXIT_OK
    if args.hash_password:
        from ..server.users import hash_password

        print(hash_password(args.hash_password))
        return EXIT_OK
    if not args.paths:
        raise UsageError("serve: give at least one agent/chain/flow file or folder")
    try:
        import uvicorn  # noqa: F401  (the extra's presence, checked before anything loads)

        from ..server import Catalog, KeyStore, ServerConfig, create_app
        from ..server.background import uvicorn_server
    except ImportError as exc:
        raise UsageError(f"serve needs the 'server' extra: pip install 'chainreact[server]' ({exc})"
                         ) from None
    for flag, choice in (("--loop", args.loop), ("--http", args.http)):
        if choice in ("uvloop", "httptools"):
            try:
                importlib.import_module(choice)
            except ImportError as exc:
                raise UsageError(f"serve {flag} {choice}: {choice} is not installed ({exc}); "
                                 "pip install 'chainreact[server]' installs it where it is available"
                                 ) from None
    if args.rate_limit or args.login_rate_limit:
        from ..server.ratelimit import parse_rate

        for flag, rate in (("--rate-limit", args.rate_limit), ("--login-rate-limit", args.login_rate_limit)):
            if rate:
                parse_rate(rate, flag)  # refused before anything loads
    if taken := _port_taken(args.host, args.port):
        print(f"error: {taken}", file=sys.stderr)
        return EXIT_FAIL
    catalog = Catalog.load(args.paths, globals=build_globals(args.globals, args.globals_file))
    keys = KeyStore.load(args.keys) if args.keys else None
    users = _users(args)
    if keys is None and not _loopback(args.host):
        print(f"warning: serving on {args.host} without --keys: anyone who reaches this port can run "
              "every agent and chain", file=sys.stderr)
    for entry in catalog.entries.values():
        print(f"serving {entry.kind} {entry.id!r} ({entry.source})", file=sys.stderr)
    if not args.temporal:  # with --temporal the workers call the model, in their own environment
        print(_default_model(), file=sys.stderr)
    for line in catalog.problems:  # one line each: the file, and why it did not load
        print(f"not loaded: {one_line(line)}", file=sys.stderr)
    from ..server import cannot_run

    for item in cannot_run(catalog, in_process=not args.temporal):
        print(f"cannot run: {item['kind']} {item['id']!r} ({item['source']}): {item['why']}", file=sys.stderr)
    if not catalog.entries:
        print("error: nothing to serve", file=sys.stderr)
        return EXIT_FAIL
    if args.access_log:
        from ..server import accesslog

        accesslog.to_stderr()
    watch = [] if args.no_watch else list(args.paths)
    if watch:
        import logging

        # Reloads (INFO) and files that no longer load (ERROR) go to stderr.
        server_log = logging.getLogger("chainreact.server")
        if not server_log.handlers:
            server_log.addHandler(logging.StreamHandler())
            server_log.setLevel(logging.INFO)
        print(f"watching {', '.join(watch)} for changes", file=sys.stderr)
    from ..state import ENV_VAR, mask_url, parse_url

    state = args.state or os.environ.get(ENV_VAR) or None
    if state:
        parse_url(state)  # a malformed URL fails here, before the port is taken
        print(f"state store: {mask_url(state)} (runs, sessions, flows)", file=sys.stderr)
    if state and (args.runs_ttl is not None or args.runs_max is not None):
        print("warning: --runs-ttl/--runs-max prune the in-memory runs store only; with --state every run "
              "is kept", file=sys.stderr)
    if args.temporal:
        if not state:
            raise UsageError("serve --temporal needs --state URL: the workers write the runs' events there "
                             "(start them with the same --state)")
        print(f"agent runs: Temporal at {args.temporal}, task queue {args.task_queue!r} (chainreact worker)",
              file=sys.stderr)
    server_config = ServerConfig(
        keys=keys, body_limit=args.body_limit, body_timeout=args.body_timeout, rate_limit=args.rate_limit,
        cors_origins=args.cors_origin or [], state=state, grace=args.grace, runs_ttl=args.runs_ttl,
        runs_max=args.runs_max, temporal=args.temporal or None, task_queue=args.task_queue,
        namespace=args.namespace, heartbeat_timeout=args.heartbeat_timeout if args.temporal else None,
        users=users, secret=args.secret, token_ttl=args.token_ttl,
        **({"login_rate_limit": args.login_rate_limit} if args.login_rate_limit else {}),
        access_log=args.access_log, watch=watch, host=args.host, port=args.port, loop=args.loop,
        http=args.http, forwarded_allow_ips=args.forwarded_allow_ips, header_limit=args.header_limit)
    app = create_app(catalog, server_config)
    # SIGTERM/SIGINT begin the runs' grace period; the process exits 0 after a graceful stop.
    server = None

    def started() -> None:
        say_where(server, args.host, args.port)
        tune_gc()

    server = uvicorn_server(app, timeout_graceful_shutdown=max(args.grace, 0.001), on_started=started)
    server.run()
    return EXIT_OK


def say_where(server: Any, host: str, port: int) -> None:
    """Where the server listens (the port it got: --port 0 takes a free one), on stderr, once it does."""
    for s in getattr(server, "servers", None) or ():
        for sock in getattr(s, "sockets", None) or ():
            port = sock.getsockname()[1]
            break
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}/"
    print(f"listening on {base} (OpenAI base URL {base}v1)", file=sys.stderr)
    print(f"playground: open {base} in a browser; stop with Ctrl-C", file=sys.stderr, flush=True)


def tune_gc() -> None:
    """The serving process's garbage collector, once everything is loaded. What is loaded by then (modules,
    documents, the app) lives as long as the process: frozen, full collections no longer walk it. A run's
    objects are mostly freed by reference counting; with Python's default young-generation threshold (700
    container objects) the collector ran every few hundred microseconds under load and promoted the
    objects of runs in flight, which made the full collections that followed long. At 500 streams this
    took the collector's time per wave from ~0.3-0.4 s to ~0.15 s (docs/performance.md)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000)


def _users(args: argparse.Namespace) -> UserStore | None:
    """Users for POST /api/v1/login (server/login.py): --users, else the keys file's `users:` section."""
    from ..server.users import UserStore

    return UserStore.load(args.users) if args.users else \
        UserStore.load(args.keys, required=False) if args.keys else None


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def _bytes(text: str) -> int:
    if not text.isdigit() or int(text) < 1024:
        raise argparse.ArgumentTypeError(f"must be a whole number of bytes >= 1024, got {text!r}")
    return int(text)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return int(text)


def _default_model() -> str:
    """Where a served document that names no endpoint sends its model calls (config/endpoint.py), so that
    whoever serves knows which model answers."""
    from ..config import env_endpoint

    ep = env_endpoint()
    if ep is not None:
        return (f"model: a document that names no endpoint uses {ep.url}, model {ep.model} "
                "(OPENAI_BASE_URL / OPENAI_API_KEY)")
    return ("model: a document that names no endpoint uses the embedded local model, started on its first "
            "call (OPENAI_BASE_URL / OPENAI_API_KEY point it elsewhere)")


def _port_taken(host: str, port: int) -> str | None:
    """Why `serve` cannot listen on host:port, said before anything loads (uvicorn would say it after the
    documents loaded, in its own words, and exit 3, the code of a run that waits), or None."""
    import socket

    if port == 0:
        return None
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                          flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            sock.bind(addr)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return (f"cannot listen on {host}:{port}: something else listens there; stop it, or serve on "
                    "another port with --port N")
        return f"cannot listen on {host}:{port}: {exc.strerror or exc} (see --host and --port)"
    return None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def register(add: AddCommand) -> None:
    p = add("serve", cmd_serve, "serve agents, rule chains and flows over HTTP (OpenAI, RuleGo, AG-UI, A2A, "
            "MCP; a playground at /)")
    p.add_argument("paths", nargs="*", help="agent documents, rule chains, flows, or folders of them")
    p.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=9090, help="port (default 9090)")
    p.add_argument("--keys", help="API keys file (YAML/JSON; see docs/server.md); without it, no auth")
    p.add_argument("--body-limit", type=int, default=10 * 1024 * 1024, help="max request body in bytes")
    p.add_argument("--header-limit", type=_bytes, default=64 * 1024, metavar="BYTES",
                   help="max size of a request's line and headers, else 431 (default 65536)")
    p.add_argument("--state", metavar="URL",
                   help="state store for runs and sessions (sqlite:///PATH or postgresql://...; default "
                        "$CHAINREACT_STATE, else runs kept in memory and no sessions)")
    p.add_argument("--runs-ttl", type=_positive, metavar="SECONDS",
                   help="without --state: a run that stopped is forgotten after this long (default 3600)")
    p.add_argument("--runs-max", type=_count, metavar="N",
                   help="without --state: at most N stopped runs are kept, the oldest forgotten first "
                        "(default 1000)")
    p.add_argument("--grace", type=float, default=30.0, metavar="SECONDS",
                   help="on SIGTERM, how long runs in flight may go on before they are cancelled "
                        "(default 30)")
    p.add_argument("--body-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="time to receive a request body, else 408 (default 60)")
    p.add_argument("--rate-limit", metavar="N/PERIOD",
                   help="default rate per API key (per client address without --keys), e.g. 60/minute; "
                        "a key's own rateLimit wins")
    p.add_argument("--cors-origin", action="append", metavar="ORIGIN",
                   help="allow this browser origin (repeatable; '*' = any); without it, no CORS headers")
    p.add_argument("--access-log", action=argparse.BooleanOptionalAction, default=False,
                   help="one JSON line per request on stderr (never keys, headers or bodies; default off)")
    p.add_argument("--no-watch", action="store_true",
                   help="do not watch the given files and folders (default: changed files are reloaded)")
    p.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto",
                   help="event loop (default auto: uvloop when installed, else asyncio)")
    p.add_argument("--http", choices=("auto", "h11", "httptools"), default="auto",
                   help="HTTP/1.1 parser (default auto: httptools when installed, else h11)")
    p.add_argument("--forwarded-allow-ips", metavar="IPS",
                   help="trust X-Forwarded-For/-Proto from these proxy addresses (comma-separated, "
                        "'*' = any; default: 127.0.0.1, or $FORWARDED_ALLOW_IPS)")
    p.add_argument("--temporal", metavar="ADDRESS",
                   help="run agents durably on Temporal workers at this host:port (`chainreact worker`, same "
                        "--state; see docs/durable.md)")
    p.add_argument("--task-queue", default="chainreact", metavar="QUEUE",
                   help="the workers' task queue, with --temporal (default 'chainreact')")
    p.add_argument("--namespace", default="default", help="Temporal namespace, with --temporal")
    p.add_argument("--heartbeat-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="with --temporal: how soon a model/tool call of a lost worker is retried on another "
                        "(default 30)")
    p.add_argument("--hash-key", metavar="KEY", help="print the SHA-256 of KEY for a keys file, and exit")
    p.add_argument("--users", help="users for POST /api/v1/login (a file with a users: section; default: the "
                                   "keys file's users: section)")
    p.add_argument("--secret", help="secret signing login tokens (default: $CHAINREACT_SECRET, else random "
                                    "per process)")
    p.add_argument("--token-ttl", type=int, default=3600,
                   help="login token lifetime in seconds (default 3600)")
    p.add_argument("--login-rate-limit", metavar="N/PERIOD",
                   help="login attempts allowed per client address and per user name (default 10/minute; "
                        "'unlimited' turns it off)")
    p.add_argument("--hash-password", metavar="PASSWORD",
                   help="print a scrypt hash of PASSWORD for the users: section, and exit")
    add_globals(p)
