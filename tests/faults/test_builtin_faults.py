"""Fault cases for the builtin tools (issue 10 items 2, 3, 5, 8; issue 9 items 18, 19): what a model,
a hostile workspace or an unlucky user can throw at bash, read, write, grep and glob.

Each test failed before its fix. Cases that could hang the test process before the fix run in a
child process with a time limit, so a regression fails instead of freezing the suite.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from chainreact.tools.base import ToolContext, ToolOutput
from chainreact.tools.registry import create_builtin

SRC = Path(__file__).resolve().parents[2] / "src"
CHILD_LIMIT = 120.0  # seconds; the fixed code answers in well under one
WAIT_LIMIT = 20.0  # generous bound for eventual states; not a timing assertion


async def call(tool: Any, **args: Any) -> tuple[str, bool]:
    result = await tool.run(args, ToolContext())
    if isinstance(result, ToolOutput):
        return result.content, result.is_error
    return result, False


def run_child(code: str, cwd: Path) -> str:
    """Run `code` in a fresh interpreter; its stdout. Fails (not hangs) if it does not finish."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=CHILD_LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child process did not finish within {CHILD_LIMIT:g} s (frozen)")
    assert done.returncode == 0, done.stderr
    return done.stdout


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_until(predicate: Any, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_LIMIT
    while not predicate():
        if loop.time() > deadline:
            pytest.fail(f"gave up waiting: {what}")
        await asyncio.sleep(0.02)


def processes_with(tag: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if tag.encode() in cmdline and alive(int(name)):
                found.append(int(name))
    return found


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


# --- grep and glob: model-supplied patterns (issue 10 item 2, issue 9 item 19) -----------------------


def test_grep_catastrophic_regex_does_not_freeze(ws: Path) -> None:
    # `(a+)+$` backtracks 2^40 times on this line with Python's re (hours, holding the GIL).
    (ws / "evil.txt").write_text("a" * 40 + "!\n" + "aaa\n")
    out = run_child(f"""
        import asyncio
        from chainreact.tools.registry import create_builtin
        from chainreact.tools.base import ToolContext
        grep = create_builtin("grep", {{"workDir": {str(ws)!r}}})
        print(asyncio.run(grep.run({{"pattern": "(a+)+$"}}, ToolContext())))
    """, ws)
    assert out.startswith("1 match in 1 file for '(a+)+$' in .:")
    assert "evil.txt:2:aaa" in out


def test_glob_catastrophic_pattern_does_not_freeze(ws: Path) -> None:
    # `*a*a*...*b` against a long name of a's backtracks polynomially with a high degree under `re`.
    (ws / ("a" * 200)).write_text("x")
    out = run_child(f"""
        import asyncio
        from chainreact.tools.registry import create_builtin
        from chainreact.tools.base import ToolContext
        glob = create_builtin("glob", {{"workDir": {str(ws)!r}}})
        print(asyncio.run(glob.run({{"pattern": "*a" * 14 + "*b"}}, ToolContext())))
        print(asyncio.run(glob.run({{"pattern": "*a" * 14 + "*"}}, ToolContext())))
    """, ws)
    assert out.splitlines()[0].startswith("No paths match")
    assert out.splitlines()[2] == "a" * 200


async def test_grep_stops_at_its_time_limit(ws: Path) -> None:
    for i in range(400):
        (ws / f"f{i:03d}.txt").write_text("needle\n" * 200)
    grep = create_builtin("grep", {"workDir": str(ws), "timeout": 1, "maxResults": 100_000})
    text, err = await call(grep, pattern="needle")
    assert not err
    assert "[search stopped after the time limit of 0.001 s: results are incomplete" in text


async def test_grep_refuses_backreferences_with_a_reason(ws: Path) -> None:
    (ws / "a.txt").write_text("aa\n")
    text, err = await call(create_builtin("grep", {"workDir": str(ws)}), pattern=r"(a)\1")
    assert err and "backreferences" in text and "RE2" in text


@pytest.mark.parametrize("tool", ["glob", "grep"])
async def test_bracket_patterns_from_issue_9(ws: Path, tool: str) -> None:
    (ws / "ab").write_text("x\n")
    (ws / "]b").write_text("x\n")
    (ws / "a").mkdir()
    (ws / "a" / "b").write_text("x\n")
    t = create_builtin(tool, {"workDir": str(ws)})
    if tool == "glob":
        text, err = await call(t, pattern="[]a]b")
        assert not err and text.splitlines()[1:] == ["]b", "ab"]
        text, err = await call(t, pattern="a[/]b")
        assert not err and text.startswith("No paths match")
    else:
        text, err = await call(t, pattern="x", include=["[]a]b"])
        assert not err and text.startswith("2 matches in 2 files")
        text, err = await call(t, pattern="x", include=["a[/]b"])
        assert not err and text.startswith("No matches")


# --- bash: processes that must not outlive the call (issue 9 item 18, issue 10 item 8) ---------------


async def test_aclose_and_cancel_during_spawn_kill_the_child_under_cpu_load(ws: Path) -> None:
    tag = f"29.{os.getpid() % 10000:04d}"
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    stuck = []
    try:
        bash = create_builtin("bash", {"workDir": str(ws)})
        for i in range(40):
            task = asyncio.create_task(call(bash, command=f"sleep {tag}{i:02d}"))
            for _ in range(1 + i % 7):  # land at different points of the spawn
                await asyncio.sleep(0)
            if i % 2:
                task.cancel()
            else:
                await bash.aclose()
            try:
                await asyncio.wait_for(task, 10)
            except asyncio.CancelledError:
                pass
            except TimeoutError:
                stuck.append(i)  # the command outlived aclose() and ran on
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert stuck == []
    await wait_until(lambda: not processes_with(f"sleep\x00{tag}"), "no sleep of the test to survive")


@pytest.mark.parametrize("mode", ["off", "bwrap"])
async def test_jobs_under_set_m_and_setsid_are_killed_with_the_call(ws: Path, mode: str) -> None:
    need_sandbox(mode)
    tag = f"31.{os.getpid()}{mode == 'off':d}"
    bash = create_builtin("bash", {"workDir": str(ws), "sandbox": mode})
    text, err = await call(bash, command=f"set -m; sleep {tag}1 & echo started")
    assert not err and "exit code: 0" in text
    await wait_until(lambda: not processes_with(f"sleep\x00{tag}1"), "the job started under set -m to die")
    if mode == "bwrap":  # only the PID namespace catches a process that leaves the session
        text, err = await call(bash, command=f"setsid sleep {tag}2 > /dev/null 2>&1 & echo started")
        assert not err
        await wait_until(lambda: not processes_with(f"sleep\x00{tag}2"), "the setsid process to die")


# --- hard links (issue 10 item 8) --------------------------------------------------------------------


async def test_hard_links_to_outside_are_refused_by_read_and_grep(ws: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=hunter2\n")
    os.link(secret, ws / "innocent.txt")  # anyone who can write the workspace can do this
    text, err = await call(create_builtin("read", {"workDir": str(ws)}), path="innocent.txt")
    assert err and "hard links" in text and "hunter2" not in text
    text, err = await call(create_builtin("grep", {"workDir": str(ws)}), pattern="TOKEN")
    assert not err and "hunter2" not in text and "1 hard-linked file skipped" in text


# --- the bash sandbox: escape corpus (issue 10 item 3) -----------------------------------------------


def need_sandbox(mode: str) -> None:
    if mode != "bwrap":
        return
    from chainreact.tools.builtin.sandbox import find_bwrap, probe

    bwrap = find_bwrap()
    reason = "bwrap is not installed" if bwrap is None else probe(bwrap)[0]
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the sandbox must work in CI (.ci/setup.d/bubblewrap.sh installs it): {reason}")
        pytest.skip(reason)


# (name, command, safe to run without the sandbox). {out}: a directory outside the workspace with a
# canary and a secret; {port}: a loopback server of the test; {victim}: a process of the test's user;
# {tag}: unique text for processes the command tries to leave behind. The policy bypasses are the
# issue's own (`time -p`, `timeout -s KILL`, `bash /dev/stdin <<<`, `${x@P}`).
ESCAPES: list[tuple[str, str, bool]] = [
    ("write outside", "echo pwned > {out}/new1", True),
    ("time -p rm", "time -p rm -f {out}/canary", True),
    ("timeout -s KILL rm -rf", "cd {out} && timeout -s KILL 5 rm -rf *", True),
    ("bash /dev/stdin here-string", "bash /dev/stdin <<< 'rm -rf {out}'", True),
    ("${x@P} prompt expansion", "x='$(rm -rf {out})'; echo ${x@P}", True),
    ("python rmtree", "python3 -c \"import shutil; shutil.rmtree('{out}')\"", True),
    ("symlink out of workDir", "ln -s {out} link; echo pwned > link/new2", True),
    ("truncate canary", "cp /dev/null {out}/canary", True),
    ("parent directory", "cd .. && echo pwned > new3 && echo pwned > ~/../new4", True),
    ("read a secret file", "cat {out}/secret.txt", True),
    ("parent's environment", "cat /proc/$PPID/environ; cat /proc/1/environ; env", True),
    ("every environ in /proc", "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done", True),
    ("/proc/1/root", "cat /proc/1/root{out}/secret.txt", True),
    ("loopback via /dev/tcp", "exec 3<>/dev/tcp/127.0.0.1/{port} && echo hi >&3", True),
    ("loopback via python",
     "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3)'", True),
    ("kill a process of the user", "kill -9 {victim}", True),
    ("pkill by name", "pkill -9 -f 'sleep {tag}9'", True),
    ("setsid survivor", "setsid sleep {tag}1 > /dev/null 2>&1 &", True),
    ("set -m survivor", "set -m; nohup sleep {tag}2 > /dev/null 2>&1 &", True),
    ("delayed write after the call", "(sleep 1; echo late > {out}/new5) > /dev/null 2>&1 &", True),
    ("new user namespace", "unshare -r sh -c 'echo pwned > {out}/new6'", True),
    ("write the system", "touch /usr/pwned-{tag} /etc/pwned-{tag}", False),
    ("remount /usr", "mount -o remount,rw /usr && touch /usr/pwned-{tag}", False),
    ("read /etc/shadow", "cat /etc/shadow", False),
]


def startup_environment_values() -> list[str]:
    """Values of this process's environment as /proc shows it (fixed at exec, so not monkeypatched
    ones), long enough not to occur by chance and not among what bash passes on by design."""
    passed_on = {"PATH", "LANG", "TERM", "HOME", "PWD", "OLDPWD", "SHELL", "SHLVL", "_", "NO_COLOR"}
    values = []
    for item in Path("/proc/self/environ").read_bytes().split(b"\0"):
        name, _, value = item.decode(errors="replace").partition("=")
        if name not in passed_on and len(value) >= 12 and value not in os.environ.get("PATH", ""):
            values.append(value)
    return values


class Arena:
    """What a command must not reach, and the check of each after every command."""

    def __init__(self, tmp_path: Path, ws: Path, secret: str):
        self.tmp_path, self.ws, self.secret = tmp_path, ws, secret
        self.out = tmp_path / "outside"
        self.out.mkdir()
        (self.out / "canary").write_text("canary\n")
        (self.out / "secret.txt").write_text(f"file-{secret}\n")
        self.tag = f"32.{os.getpid()}"
        self.victim = subprocess.Popen(["sleep", f"{self.tag}9"])
        self.connections = 0
        self.server: asyncio.AbstractServer | None = None
        self.port = 0
        self.shadow = Path("/etc/shadow").read_bytes() if Path("/etc/shadow").exists() else b""

    async def start(self) -> None:
        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            writer.close()

        self.server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
        self.victim.kill()
        self.victim.wait()
        for pid in processes_with(f"sleep\x00{self.tag}"):
            os.kill(pid, 9)
        for p in (Path(f"/usr/pwned-{self.tag}"), Path(f"/etc/pwned-{self.tag}")):
            p.unlink(missing_ok=True)

    def command(self, template: str) -> str:
        values = {"{out}": str(self.out), "{port}": str(self.port), "{victim}": str(self.victim.pid),
                  "{tag}": self.tag}
        for key, value in values.items():
            template = template.replace(key, value)
        return template

    def damage(self, output: str) -> list[str]:
        found = []
        if not (self.out / "canary").exists() or (self.out / "canary").read_text() != "canary\n":
            found.append("canary changed")
        if self.out.exists() and sorted(p.name for p in self.out.iterdir()) != ["canary", "secret.txt"]:
            found.append("files written outside the workspace")
        if sorted(p.name for p in self.tmp_path.iterdir()) != ["outside", "ws"]:
            found.append("files written beside the workspace")
        if self.secret in output:
            found.append("a secret reached the output")
        leaked = [v for v in startup_environment_values() if v in output]
        if leaked:
            found.append(f"{len(leaked)} value(s) of the parent's environment reached the output")
        if self.shadow and self.shadow.split(b"\n")[0].decode(errors="replace") in output:
            found.append("/etc/shadow reached the output")
        if self.connections:
            found.append(f"{self.connections} connection(s) to the loopback server")
        if self.victim.poll() is not None:
            found.append("a process outside was killed")
        if processes_with(f"sleep\x00{self.tag}1") or processes_with(f"sleep\x00{self.tag}2"):
            found.append("a process outlived the call")
        if Path(f"/usr/pwned-{self.tag}").exists() or Path(f"/etc/pwned-{self.tag}").exists():
            found.append("the system was written")
        return found

    def reset(self) -> None:
        """Undo what an escape did, so the next command is judged on its own."""
        import shutil

        for p in self.tmp_path.iterdir():
            if p.name not in ("outside", "ws"):
                p.unlink() if p.is_file() or p.is_symlink() else shutil.rmtree(p)
        if self.out.exists():
            shutil.rmtree(self.out)
        self.out.mkdir()
        (self.out / "canary").write_text("canary\n")
        (self.out / "secret.txt").write_text(f"file-{self.secret}\n")
        for pid in processes_with(f"sleep\x00{self.tag}1") + processes_with(f"sleep\x00{self.tag}2"):
            os.kill(pid, 9)
        if self.victim.poll() is not None:
            self.victim = subprocess.Popen(["sleep", f"{self.tag}9"])
        self.connections = 0


async def run_corpus(tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, Any],
                     sandboxed: bool) -> dict[str, list[str]]:
    secret = f"s3cr3t-{os.getpid()}-{id(config)}"
    monkeypatch.setenv("CHAINREACT_ESCAPE_SECRET", secret)
    arena = Arena(tmp_path, ws, secret)
    await arena.start()
    escapes: dict[str, list[str]] = {}
    try:
        bash = create_builtin("bash", {"workDir": str(ws), **config})
        for name, template, baseline_safe in ESCAPES:
            if not sandboxed and not baseline_safe:
                continue
            text, _ = await call(bash, command=arena.command(template))
            await asyncio.sleep(1.5 if "delayed" in name else 0.05)  # late writes, connections in flight
            found = arena.damage(text)
            if found:
                escapes[name] = found
            arena.reset()
            for p in ws.iterdir():
                p.unlink() if p.is_file() or p.is_symlink() else None
    finally:
        await arena.stop()
    return escapes


@pytest.mark.parametrize("policy", ["default policy", "no policy"])
async def test_escape_corpus_has_no_escape_under_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            policy: str) -> None:
    need_sandbox("bwrap")
    ws = tmp_path / "ws"
    ws.mkdir()
    config = {"sandbox": "bwrap", "defaultDeny": policy == "default policy"}
    escapes = await run_corpus(tmp_path, ws, monkeypatch, config, sandboxed=True)
    assert escapes == {}


async def test_escape_corpus_detects_escapes_without_the_sandbox(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The corpus can fail: without the sandbox (and with the default policy) most entries escape."""
    ws = tmp_path / "ws"
    ws.mkdir()
    escapes = await run_corpus(tmp_path, ws, monkeypatch, {"sandbox": "off"}, sandboxed=False)
    baseline = sum(1 for _, _, safe in ESCAPES if safe)
    assert len(escapes) >= baseline - 5, sorted(set(n for n, _, s in ESCAPES if s) - set(escapes))


# --- sizes (issue 10 items 5 and 8) ------------------------------------------------------------------


def test_read_of_a_huge_one_line_file_stays_small_in_memory(ws: Path) -> None:
    size = 96 << 20
    with open(ws / "one-line.txt", "wb") as f:
        for _ in range(size >> 20):
            f.write(b"a" * (1 << 20))
        f.write(b"\nsecond line\n")
    out = run_child(f"""
        import asyncio, resource
        from chainreact.tools.registry import create_builtin
        from chainreact.tools.base import ToolContext
        read = create_builtin("read", {{"workDir": {str(ws)!r}}})
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = asyncio.run(read.run({{"path": "one-line.txt"}}, ToolContext()))
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) // 1024)
        print(result[:60])
        print(result[-200:])
    """, ws)
    grew_mib, header, *rest = out.splitlines()
    assert int(grew_mib) < 24, f"reading grew the process by {grew_mib} MiB for a {size >> 20} MiB line"
    assert header == "File: one-line.txt (lines 1-2 of 2)"
    assert f"[line truncated: {size} bytes, showing 2000 characters]" in "\n".join(rest)
    assert "second line" in rest[-1]


async def test_write_to_a_fifo_is_an_error_and_never_blocks(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    write = create_builtin("write", {"workDir": str(ws)})
    for mode in ("overwrite", "append", "create"):
        text, err = await asyncio.wait_for(call(write, path="pipe", content="x", mode=mode), 20)
        assert err and text.startswith("Error:"), (mode, text)
    assert (ws / "pipe").is_fifo()
