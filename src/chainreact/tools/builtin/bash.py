"""The `bash` builtin: run a command line in the workspace, with a timeout, an output cap and a policy.

Each command runs as `/bin/bash -c COMMAND` in a new session (so its own process group), with cwd =
workDir, stdin from /dev/null and a minimal environment; where bubblewrap works, inside the OS
sandbox of sandbox.py. When bash exits, times out or the call is cancelled, the whole session is
killed (process.py), so background children never outlive the call. A call may have at most
`maxProcesses` processes (limits.py: a pids cgroup, or a watchdog) and, in the sandbox, a /tmp of at
most `maxTmpSize` bytes.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
import warnings
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from ..base import Tool, ToolContext, ToolOutput
from .bash_policy import CommandPolicy, Refused
from .configs import BashConfig, IgnoredConfigWarning, parse_config
from .limits import CallLimit
from .output import HeadTail
from .process import kill_session
from .sandbox import Sandbox, resolve_sandbox
from .workspace import Workspace, description_from, workspace_from_config

DEFAULT_TIMEOUT_MS = 60_000
DEFAULT_MAX_OUTPUT = 30_000
DEFAULT_MAX_PROCESSES = 1024
DEFAULT_MAX_TMP_SIZE = 512 << 20
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# After bash exits and its group is killed, how long to wait for the pipes to close. Only a process
# that left the group (setsid) can keep them open; its later output is then not captured.
DRAIN_SECONDS = 2.0


@dataclass(slots=True)
class BashResult:
    exit_code: int | None
    duration: float
    stdout: HeadTail
    stderr: HeadTail
    timed_out: bool
    undrained: bool
    process_limit: int = 0  # the limit, when the call reached it and was killed


class BashTool(Tool):
    name = "bash"

    def __init__(self, workspace: Workspace, *, timeout: float = DEFAULT_TIMEOUT_MS / 1000,
                 max_output: int = DEFAULT_MAX_OUTPUT, policy: CommandPolicy | None = None,
                 env: dict[str, str] | None = None, sandbox: Sandbox | None = None,
                 shell: str = "/bin/bash", deny_args: tuple[str, ...] = (), description: str | None = None,
                 max_processes: int = DEFAULT_MAX_PROCESSES):
        self.workspace = workspace
        self.sandbox = sandbox
        self.shell = shell
        self.deny_args = deny_args
        self.max_seconds = timeout
        self.max_output = max_output
        self.max_processes = max_processes
        self.policy = policy or CommandPolicy()
        self.extra_env = dict(env or {})
        self._groups: set[int] = set()
        self._spawning: set[asyncio.Future[asyncio.subprocess.Process]] = set()
        self._reapers: set[asyncio.Future[int]] = set()
        self._closing = False
        self.description = description or (
            "Run a bash command line in the workspace directory and get its exit code, stdout and stderr. "
            f"Times out after {timeout:g} s (the whole process group is killed); long output is cut in "
            "the middle. stdin is empty, so interactive commands fail: pass flags like -y instead. "
            "Background processes are stopped when the command returns."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line, run with /bin/bash -c."},
                "timeout": {"type": "number", "exclusiveMinimum": 0,
                            "description": f"Seconds before the command is killed (at most {timeout:g}, "
                                           "the default)."},
            },
            "required": ["command"],
            "additionalProperties": False,
        }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return _error("command must be a non-empty string")
        if "\x00" in command:
            return _error("command contains a NUL byte")
        timeout = args.get("timeout", self.max_seconds)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            return _error(f"timeout must be a positive number of seconds, got {timeout!r}")
        timeout = min(float(timeout), self.max_seconds)
        try:
            self.policy.check(command)
            _check_deny_args(command, self.deny_args)
        except Refused as e:
            return _error(f"command refused by policy: {e}. Nothing was run.")
        try:
            result = await self.execute(command, timeout)
        except OSError as e:
            return _error(f"could not start {self.shell} in {self.workspace.root}: {e.strerror or e}")
        return self.format(result, timeout)

    def environment(self) -> dict[str, str]:
        root = str(self.workspace.root)
        env = {
            "PATH": os.environ.get("PATH") or DEFAULT_PATH,
            "HOME": root,
            "PWD": root,
            "LANG": os.environ.get("LANG") or "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",  # many tools honour it; escape codes that remain are stripped anyway
        }
        env.update(self.extra_env)
        return env

    async def execute(self, command: str, timeout: float) -> BashResult:
        keep = self.max_output * 4  # bytes per stream kept at each end; enough for max_output characters
        out, err = HeadTail(keep), HeadTail(keep)
        started = time.monotonic()
        env = self.environment()
        argv = [self.shell, "-c", command]
        if self.sandbox is not None:
            argv = self.sandbox.argv(self.shell, command, env["PATH"].split(":"))
        limit = CallLimit(self.max_processes)
        try:
            return await self._run(limit.wrap(argv), env, limit, out, err, started, timeout)
        finally:
            await limit.close()

    async def _run(self, argv: list[str], env: dict[str, str], limit: CallLimit, out: HeadTail,
                   err: HeadTail, started: float, timeout: float) -> BashResult:
        # The spawn runs as its own task, shielded: a cancel or aclose() that lands while the child is
        # being created cannot lose its pid; the child is killed as soon as the spawn completes.
        spawn = asyncio.ensure_future(asyncio.create_subprocess_exec(
            *argv,
            cwd=self.workspace.root, env=env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # own session and process group: pgid == sid == pid
        ))
        self._spawning.add(spawn)
        try:
            proc = await asyncio.shield(spawn)
        except BaseException:
            spawn.add_done_callback(self._kill_spawned)
            raise
        finally:
            self._spawning.discard(spawn)
        pgid = proc.pid
        if self._closing:
            kill_session(pgid)  # aclose() ran while this child was being spawned
        self._groups.add(pgid)
        limit.start(pgid, kill_session)
        assert proc.stdout is not None and proc.stderr is not None
        readers = [asyncio.create_task(_pump(proc.stdout, out)), asyncio.create_task(_pump(proc.stderr, err))]
        timed_out = False
        try:
            try:
                await _wait_exit(proc, timeout)
            except TimeoutError:
                timed_out = True
        except BaseException:
            # Cancelled (or failed): nothing may survive the call.
            kill_session(pgid)
            self._groups.discard(pgid)
            for task in readers:
                task.cancel()
            raise
        duration = time.monotonic() - started
        kill_session(pgid)
        self._groups.discard(pgid)
        undrained = False
        try:
            # Process.wait() also waits for the pipes to close; with the group dead, they close now.
            await asyncio.wait_for(proc.wait(), DRAIN_SECONDS)
            await asyncio.wait(readers, timeout=DRAIN_SECONDS)
        except TimeoutError:
            undrained = True
        for task in readers:
            if not task.done():
                undrained = True
                task.cancel()
        if undrained:
            transport = getattr(proc, "_transport", None)  # release the pipes a stray process holds
            if transport is not None:
                transport.close()
        code = None if timed_out else proc.returncode
        await limit.close()
        return BashResult(code, duration, out, err, timed_out, undrained,
                          limit.max_processes if limit.reached else 0)

    def format(self, r: BashResult, timeout: float) -> str | ToolOutput:
        budget = self.max_output
        # Share the budget: stderr keeps at least a quarter when both streams are long.
        err_cap = min(max(r.stderr.total, 1), max(budget // 4, budget - r.stdout.total))
        out_cap = max(1, budget - min(r.stderr.total, err_cap))
        parts = []
        if r.process_limit:
            parts.append(f"Error: the command reached its limit of {r.process_limit} processes "
                         "(maxProcesses) and was killed; its process group is gone. Run fewer processes "
                         "at once.")
        if r.timed_out:
            parts.append(f"Error: command timed out after {timeout:g} s; its process group was killed. "
                         "Output so far is below. Use a longer timeout or run less at once.")
            parts.append("exit code: none (killed on timeout)")
        else:
            parts.append(f"exit code: {_describe_exit(r.exit_code, self.sandbox is not None)}")
        parts.append(f"duration: {r.duration:.2f}s")
        parts.append(_section("stdout", r.stdout, out_cap))
        parts.append(_section("stderr", r.stderr, err_cap))
        if r.undrained:
            parts.append("[note: a process that left the command's process group still holds its output; "
                         "output after the command exited is not shown]")
        text = "\n".join(parts)
        return ToolOutput(content=text, is_error=True) if r.timed_out or r.process_limit else text

    def _kill_spawned(self, spawn: asyncio.Future[asyncio.subprocess.Process]) -> None:
        """Done-callback of a spawn whose caller went away: kill the child, then reap it."""
        if spawn.cancelled() or spawn.exception() is not None:
            return
        proc = spawn.result()
        kill_session(proc.pid)
        reaper = asyncio.ensure_future(proc.wait())
        self._reapers.add(reaper)
        reaper.add_done_callback(self._reapers.discard)

    async def aclose(self) -> None:
        # Calls still spawning see the flag right after their spawn completes (no await in between).
        self._closing = True
        try:
            for pgid in list(self._groups):
                kill_session(pgid)
            self._groups.clear()
            if self._spawning:
                await asyncio.wait(list(self._spawning))
        finally:
            self._closing = False


def _check_deny_args(command: str, patterns: tuple[str, ...]) -> None:
    """RuleGo's `denyArgs`: a pattern with a space (`-rf /`) or a short `/x` must stand between word
    boundaries; any other pattern (`/dev/sd`) refuses wherever it appears in the line."""
    for pattern in patterns:
        if " " in pattern or (pattern.startswith("/") and len(pattern) <= 3):
            hit = re.search(r"(?<!\S)" + re.escape(pattern) + r"(?!\S)", command) is not None
        else:
            hit = pattern in command
        if hit:
            raise Refused(f"the command line contains the denied argument pattern {pattern!r} (denyArgs)")


async def _wait_exit(proc: asyncio.subprocess.Process, timeout: float) -> None:
    """Wait until bash itself exits (TimeoutError after `timeout`).

    Process.wait() would also wait for stdout/stderr to close, which a background child keeps open;
    a pidfd becomes readable the moment the process exits, whatever its children do.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except ProcessLookupError:
        return  # already exited and reaped
    except (AttributeError, OSError):
        await asyncio.wait_for(proc.wait(), timeout)  # no pidfd (old kernel): background jobs delay this
        return
    loop = asyncio.get_running_loop()
    exited = loop.create_future()

    def on_exit() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(fd, on_exit)
    try:
        await asyncio.wait_for(exited, timeout)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def _pump(stream: asyncio.StreamReader, sink: HeadTail) -> None:
    while chunk := await stream.read(65536):
        sink.feed(chunk)


def _describe_exit(code: int | None, sandboxed: bool = False) -> str:
    if code is None:
        return "unknown"
    if sandboxed and 128 < code < 128 + 65:
        code = 128 - code  # bwrap reports a signal death of the command as 128 + signal, like a shell
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"{128 - code} (killed by {name})"
    return str(code)


def _section(name: str, data: HeadTail, cap: int) -> str:
    if data.total == 0:
        return f"{name}: (empty)"
    text = data.text(cap)
    if text.endswith("\n"):
        text = text[:-1]
    return f"{name}:\n{text}"


def _error(message: str) -> ToolOutput:
    return ToolOutput(content=f"Error: {message}", is_error=True)


def create(config: dict[str, Any], descriptor: Any = None) -> Tool:
    """Factory used by the registry (`"bash"` in a config's tools)."""
    c = parse_config(BashConfig, config, "bash")
    workspace = workspace_from_config({"workDir": c.workDir}, "bash")
    timeout_ms = c.timeout or getattr(descriptor, "timeout", None) or DEFAULT_TIMEOUT_MS
    if c.timeout is not None and c.timeout < 1000:
        warnings.warn(f"tools.bash.config.timeout is {c.timeout} ms; chainreact's bash timeout is in "
                      "milliseconds (RuleGo's is in seconds): write 60000 for a minute",
                      IgnoredConfigWarning, stacklevel=2)
    budget = c.output_budget()
    if budget < 100:
        raise ConfigError(f"tools.bash.config.maxOutput must be at least 100 characters, got {budget}",
                          errors=[("tools.bash.config.maxOutput", "less than 100")])
    allow = () if c.mode == "deny" else tuple(a.strip() for a in c.allow)
    policy = CommandPolicy(allow=allow, deny=tuple(d.strip() for d in c.deny), default_deny=c.defaultDeny)
    shell = _shell(c.shellPath)
    try:
        sandbox = resolve_sandbox(c.sandbox, str(workspace.root), network=c.network,
                                  read_only=(*_paths(c.readOnlyPaths, "readOnlyPaths"), *_shell_dir(shell)),
                                  writable=_paths(c.writablePaths, "writablePaths"), tmp_size=c.maxTmpSize)
    except RuntimeError as e:
        raise ConfigError(f"tools.bash.config.sandbox is \"bwrap\" but {e}; install bubblewrap "
                          "(apt-get install bubblewrap) or use sandbox: \"auto\" or \"off\"",
                          errors=[("tools.bash.config.sandbox", str(e))]) from None
    tool = BashTool(workspace, timeout=timeout_ms / 1000, max_output=budget, policy=policy, env=c.env,
                    sandbox=sandbox, shell=shell, deny_args=tuple(c.denyArgs), max_processes=c.maxProcesses)
    tool.description = description_from(descriptor, tool.description)
    return tool


def _paths(paths: list[str], key: str) -> tuple[str, ...]:
    out = []
    for p in paths:
        real = os.path.realpath(os.path.expanduser(p))
        if not os.path.exists(real):
            raise ConfigError(f"tools.bash.config.{key}: {p!r} does not exist",
                              errors=[(f"tools.bash.config.{key}", f"{p!r} does not exist")])
        out.append(real)
    return tuple(out)


def _shell(path: str | None) -> str:
    if not path:
        return "/bin/bash"
    real = os.path.realpath(os.path.expanduser(path))
    if not (os.path.isfile(real) and os.access(real, os.X_OK)):
        raise ConfigError(f"tools.bash.config.shellPath {path!r} is not an executable file",
                          errors=[("tools.bash.config.shellPath", "not an executable file")])
    return real


def _shell_dir(shell: str) -> tuple[str, ...]:
    """A shell outside the system directories must be visible in the sandbox too."""
    return () if shell.startswith(("/usr/", "/bin/")) else (os.path.dirname(shell),)
