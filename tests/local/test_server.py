"""The embedded-model launcher's lifecycle, driven with a small stand-in HTTP server process.

These run without the `local` extra: a stand-in subprocess plays llama.cpp's server (it answers
GET /v1/models, or dies, or never answers), so start-up, health polling, failure reports, the singleton and
process-group clean-up are all exercised for real. The real llama.cpp server is in test_llama_e2e.py.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from chainreact.errors import LocalModelError
from chainreact.local import server as srv

# A stand-in for `python -m llama_cpp.server`: serves /v1/models on the given port and starts a child
# process (to prove the whole process group is stopped). MODE: ok | die | hang.
STAND_IN = r"""
import json, os, subprocess, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
port, mode, pidfile = int(sys.argv[1]), sys.argv[2], sys.argv[3]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(pidfile, "w").write(f"{os.getpid()} {child.pid}")
print("stand-in: loading model", flush=True)
if mode == "die":
    print("error: failed to load model: bad magic", flush=True)
    sys.exit(3)
if mode == "hang":
    time.sleep(600)
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "stand-in-model", "object": "model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


class StandIn(srv.LocalServer):
    mode: str = "ok"
    pidfile: str = ""

    def check_installed(self) -> None:
        pass

    def command(self) -> list[str]:
        return [sys.executable, "-c", STAND_IN, str(self.port), self.mode, self.pidfile]


def make_stand_in(tmp_path: Path, mode: str = "ok") -> StandIn:
    s = StandIn(model_path=tmp_path / "m.gguf")
    s.mode = mode
    s.pidfile = str(tmp_path / f"pids-{mode}-{time.monotonic_ns()}")
    return s


def pids(s: StandIn) -> list[int]:
    for _ in range(200):
        try:
            text = Path(s.pidfile).read_text()
        except FileNotFoundError:
            text = ""
        if len(text.split()) == 2:
            return [int(x) for x in text.split()]
        time.sleep(0.05)
    raise AssertionError("stand-in never wrote its pids")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pid: int) -> bool:
    for _ in range(100):
        if gone(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def no_external(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(srv.LOCAL_URL_ENV, raising=False)


@pytest.fixture
def stand_in_singleton(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_external: None) -> Iterator[list]:
    made: list[StandIn] = []

    def factory() -> srv.LocalServer:
        s = make_stand_in(tmp_path)
        made.append(s)
        return s

    srv.stop_local_sync()
    monkeypatch.setattr(srv, "server_factory", factory)
    yield made
    srv.stop_local_sync()


# ------------------------------------------------------------------ small pieces


def test_model_path_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "x.gguf"
    f.write_bytes(b"GGUF")
    monkeypatch.setenv(srv.MODEL_PATH_ENV, str(f))
    assert srv.find_model_path() == f
    monkeypatch.setenv(srv.MODEL_PATH_ENV, str(tmp_path / "missing.gguf"))
    with pytest.raises(LocalModelError, match=r"missing\.gguf: no such file"):
        srv.find_model_path()


def test_model_path_found_inside_the_package_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "fake_gguf_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (pkg / "Tiny.Q4.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(srv.MODEL_PATH_ENV, raising=False)
    monkeypatch.setattr(srv, "GGUF_PACKAGE", "fake_gguf_pkg")
    assert srv.find_model_path() == pkg / "Tiny.Q4.gguf"
    (pkg / "Tiny.Q4.gguf").unlink()
    with pytest.raises(LocalModelError, match=r"no \.gguf file in the fake_gguf_pkg package"):
        srv.find_model_path()


def test_missing_extra_names_the_module_and_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(srv, "REQUIRED_MODULES", ("json", "chainreact_no_such_module"))
    assert srv.local_extra_available() == "chainreact_no_such_module"
    with pytest.raises(LocalModelError) as e:
        srv.LocalServer(model_path=tmp_path / "m.gguf").start()
    assert "chainreact_no_such_module" in str(e.value)
    assert "pip install 'chainreact[local]'" in str(e.value)


def test_command_line_uses_the_function_calling_chat_format(tmp_path: Path) -> None:
    s = srv.LocalServer(model_path=tmp_path / "m.gguf", port=4321)
    cmd = s.command()
    assert cmd[1:3] == ["-m", "chainreact.local.llama_entry"]
    assert cmd[cmd.index("--chat_format") + 1] == "chainreact-chatml-function-calling"
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1" and cmd[cmd.index("--port") + 1] == "4321"
    assert cmd[cmd.index("--seed") + 1] == "42"  # not llama.cpp's default, a random seed per start
    assert s.base_url == "http://127.0.0.1:4321/v1"


# ------------------------------------------------------------------ one server's lifecycle


def test_start_ready_and_stop_kills_the_process_group(tmp_path: Path) -> None:
    s = make_stand_in(tmp_path)
    s.start()
    try:
        s.wait_ready_sync(timeout=30)
        r = httpx.get(f"{s.base_url}/models")
        assert r.json()["data"][0]["id"] == "stand-in-model"
        parent, child = pids(s)
        log = s.log_path
        assert log is not None and log.exists()
    finally:
        s.stop()
    assert wait_gone(parent) and wait_gone(child)
    assert not log.exists()  # the log is removed with the server
    assert not s.alive()


def test_server_that_dies_reports_its_output(tmp_path: Path) -> None:
    s = make_stand_in(tmp_path, "die")
    s.start()
    with pytest.raises(LocalModelError) as e:
        s.wait_ready_sync(timeout=30)
    msg = str(e.value)
    assert "exited with code 3" in msg
    assert "failed to load model: bad magic" in msg
    _, child = pids(s)
    assert wait_gone(child)  # its orphaned child went with the group


def test_server_that_never_answers_times_out_and_is_killed(tmp_path: Path) -> None:
    s = make_stand_in(tmp_path, "hang")
    s.start()
    parent, child = pids(s)
    with pytest.raises(LocalModelError) as e:
        s.wait_ready_sync(timeout=1)
    assert "did not answer GET" in str(e.value) and "stand-in: loading model" in str(e.value)
    assert wait_gone(parent) and wait_gone(child)


# ------------------------------------------------------------------ the process-wide singleton


async def test_singleton_starts_once_and_restarts_after_stop(stand_in_singleton: list[StandIn]) -> None:
    import asyncio

    a, b = await asyncio.gather(srv.get_local_endpoint(), srv.get_local_endpoint())
    assert len(stand_in_singleton) == 1
    assert a.url == b.url and a.url.endswith("/v1") and a.managed
    assert a.compat.streamTools is False
    assert httpx.get(f"{a.url}/models").status_code == 200
    first_parent, _ = pids(stand_in_singleton[0])

    await srv.stop_local()
    assert wait_gone(first_parent)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{a.url}/models")

    c = await srv.get_local_endpoint()
    assert len(stand_in_singleton) == 2 and httpx.get(f"{c.url}/models").status_code == 200


async def test_singleton_replaces_a_dead_server(stand_in_singleton: list[StandIn]) -> None:
    a = await srv.get_local_endpoint()
    parent, _ = pids(stand_in_singleton[0])
    os.killpg(parent, signal.SIGKILL)
    assert wait_gone(parent)
    b = await srv.get_local_endpoint()
    assert len(stand_in_singleton) == 2
    assert httpx.get(f"{b.url}/models").status_code == 200
    assert a.url != b.url or b.url  # a new process, possibly on another port


def test_singleton_is_stopped_at_interpreter_exit(tmp_path: Path) -> None:
    # A child interpreter starts the singleton (stand-in) and exits without stopping it: atexit must.
    code = f"""
import asyncio, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_server import make_stand_in
from pathlib import Path
from chainreact.local import server as srv
s = None
def factory():
    global s
    s = make_stand_in(Path({str(tmp_path)!r}))
    return s
srv.server_factory = factory
ep = asyncio.run(srv.get_local_endpoint())
print(s.pidfile, flush=True)
"""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != srv.LOCAL_URL_ENV}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    parent, child = (int(x) for x in Path(r.stdout.strip()).read_text().split())
    assert wait_gone(parent) and wait_gone(child)


def test_sigterm_to_the_foreground_server_stops_its_process_group(tmp_path: Path) -> None:
    # `chainreact local-model` (serve_forever) killed with SIGTERM left the llama.cpp server running as
    # an orphan: the default SIGTERM ended the process without its cleanup (seen by hand).
    import signal
    import subprocess

    code = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_server import make_stand_in
from pathlib import Path
s = make_stand_in(Path({str(tmp_path)!r}))
sys.exit(s.serve_forever(on_ready=lambda s: print(s.pidfile, flush=True)))
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pidfile = proc.stdout.readline().strip()
        parent, child = (int(x) for x in Path(pidfile).read_text().split())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    assert wait_gone(parent) and wait_gone(child)


# ------------------------------------------------------------------ CHAINREACT_LOCAL_URL


class _Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"data": [{"id": "someone-elses-model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture
def models_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_external_url_is_used_as_is(
    models_server: str, suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def factory() -> srv.LocalServer:
        raise AssertionError("nothing may be started when CHAINREACT_LOCAL_URL is set")

    monkeypatch.setattr(srv, "server_factory", factory)
    monkeypatch.setenv(srv.LOCAL_URL_ENV, models_server + suffix)
    ep = await srv.get_local_endpoint()
    assert ep.url == models_server + "/v1"
    assert ep.model == "someone-elses-model"
    assert ep.managed is False and ep.compat.streamTools is False


async def test_external_url_unreachable_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    port = srv.free_port()
    monkeypatch.setenv(srv.LOCAL_URL_ENV, f"http://127.0.0.1:{port}")
    with pytest.raises(LocalModelError) as e:
        await srv.get_local_endpoint()
    assert srv.LOCAL_URL_ENV in str(e.value) and "chainreact local-model" in str(e.value)
