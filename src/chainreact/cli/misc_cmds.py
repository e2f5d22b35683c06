"""Utility commands: local-model, fake-llm, version."""

from __future__ import annotations

import argparse
import sys

from .common import EXIT_OK, AddCommand, port_number, write


def cmd_version(args: argparse.Namespace) -> int:
    from .. import __version__

    print(f"chainreact {__version__} (Python {sys.version.split()[0]})")
    return EXIT_OK


def cmd_local_model(args: argparse.Namespace) -> int:
    from ..local import LocalServer, find_model_path

    server = LocalServer(model_path=find_model_path(), host=args.host, port=args.port)
    if args.ctx:
        server.n_ctx = args.ctx
    if args.threads:
        server.n_threads = args.threads

    def ready(s: LocalServer) -> None:
        print(f"embedded model {s.model_name} ({s.model_path.name}) ready at {s.base_url}", file=sys.stderr)
        print("use it from other processes with:", file=sys.stderr)
        print(f"  export CHAINREACT_LOCAL_URL={s.base_url}", file=sys.stderr)
        print("stop with Ctrl-C", file=sys.stderr)
        write(s.base_url + "\n")  # the one stdout line, for scripts

    return server.serve_forever(on_ready=ready)


def cmd_fake_llm(args: argparse.Namespace) -> int:
    from ..testing.cli import main as fake_main

    return int(fake_main(list(args.rest)))


def register(add: AddCommand) -> None:
    p = add("local-model", cmd_local_model, "run the embedded model server in the foreground")
    p.add_argument("--port", type=port_number, default=0, help="port (default: a free one)")
    p.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    p.add_argument("--ctx", type=int, default=0, help="context size in tokens (default 4096)")
    p.add_argument(
        "--threads", type=int, default=0,
        help="CPU threads (default: $CHAINREACT_LOCAL_THREADS, else a quarter of the CPUs, 1 to 4)",
    )

    p = add("fake-llm", cmd_fake_llm, "run the scripted fake OpenAI-compatible server (for tests)")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="arguments of the fake server (see --help)")

    add("version", cmd_version, "print the version")
