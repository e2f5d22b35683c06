"""The process limit of a `bash` call: a pids cgroup where the machine lets chainreact make one, else a
watchdog that counts the call's processes.

`ulimit -u` cannot do this job: RLIMIT_NPROC counts every process of the user machine-wide, and root
(also root mapped into the sandbox's user namespace) is exempt, so a fork bomb run as root had 511
processes when its timeout killed it. A pids cgroup bounds the call's tasks (processes and threads) in
the kernel: a fork past `pids.max` fails. Without one (no pids controller, or no right to create a
cgroup), a watchdog counts the processes of the call's session every WATCH_SECONDS and kills the call
past the limit, so a bomb is bounded to what it can fork in that interval. Either way the call is
killed as soon as the limit is reached, and its result says so.

cgroup v1 (a `pids` hierarchy) and v2 (where this process's cgroup may have children with the pids
controller) are both used; each call gets its own cgroup `chainreact-<pid>-<n>` next to this process's
own, removed when the call ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import threading
from collections.abc import Callable

from .process import session_members

WATCH_SECONDS = 0.2
_counter = itertools.count()
_lock = threading.Lock()
_base: list[str | None] = []  # [the directory calls' cgroups go in, or None]; probed once per process


def cgroup_base() -> str | None:
    """Where this process may create pids cgroups (probed once), or None."""
    with _lock:
        if not _base:
            _base.append(_probe())
        return _base[0]


def _probe() -> str | None:
    for base in _candidates():
        test = os.path.join(base, f"chainreact-{os.getpid()}-probe")
        try:
            os.mkdir(test)
        except FileExistsError:
            pass
        except OSError:
            continue
        try:
            if os.path.exists(os.path.join(test, "pids.max")):
                _sweep(base)
                return base
        finally:
            with contextlib.suppress(OSError):
                os.rmdir(test)
    return None


def _candidates() -> list[str]:
    """The pids hierarchy's directory of this process: v1 (`N:pids:/path`) first, then v2 (`0::/path`)."""
    try:
        with open("/proc/self/cgroup") as f:
            own = [line.rstrip("\n").split(":", 2) for line in f if line.count(":") >= 2]
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return []
    out = []
    for fstype, want in (("cgroup", "pids"), ("cgroup2", "")):
        path = next((p for _, ctrl, p in own if (ctrl.split(",").count(want) if want else ctrl == "")), None)
        if path is None:
            continue
        for m in mounts:
            sep = m.index("-") if "-" in m else -1
            if sep < 0 or m[sep + 1] != fstype or (want and want not in m[sep + 3].split(",")):
                continue
            root, point = m[3], m[4]
            rel = path[len(root):] if root != "/" and path.startswith(root) else path
            out.append(os.path.normpath(point + "/" + rel.lstrip("/")))
    return out


def _sweep(base: str) -> None:
    """Remove the empty call cgroups of processes that died without cleaning up."""
    with contextlib.suppress(OSError):
        for name in os.listdir(base):
            if name.startswith("chainreact-") and name.count("-") == 2:
                pid = name.split("-")[1]
                if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                    with contextlib.suppress(OSError):
                        os.rmdir(os.path.join(base, name))


class CallLimit:
    """The process limit of one call: wrap its argv, watch it, and clean up after it."""

    def __init__(self, max_processes: int, *, use_cgroup: bool = True) -> None:
        self.max_processes = max_processes
        self.cgroup: str | None = None
        self.reached = False
        self._watch: asyncio.Task[None] | None = None
        base = cgroup_base() if use_cgroup and max_processes > 0 else None
        if base is not None:
            path = os.path.join(base, f"chainreact-{os.getpid()}-{next(_counter)}")
            try:
                os.mkdir(path)
                _write(path, "pids.max", str(max_processes))
                self.cgroup = path
            except OSError:
                with contextlib.suppress(OSError):
                    os.rmdir(path)

    def wrap(self, argv: list[str]) -> list[str]:
        """argv run inside the cgroup: a shell writes its pid into it, then becomes the command (so
        nothing the command starts is ever outside it)."""
        if self.cgroup is None:
            return argv
        procs = os.path.join(self.cgroup, "cgroup.procs")
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs, *argv]

    def start(self, sid: int, kill: Callable[[int], None]) -> None:
        """Watch the running call (session `sid`); `kill(sid)` ends it once the limit is reached."""
        if self.max_processes > 0:
            self._watch = asyncio.get_running_loop().create_task(self._watcher(sid, kill))

    async def _watcher(self, sid: int, kill: Callable[[int], None]) -> None:
        while True:
            await asyncio.sleep(WATCH_SECONDS)
            if self.cgroup is not None:
                reached = _forks_refused(self.cgroup) > 0
            else:
                reached = len(await asyncio.to_thread(session_members, sid)) > self.max_processes
            if reached:
                self.reached = True
                kill(sid)
                return

    async def close(self) -> None:
        """Stop watching; kill whatever is left in the cgroup and remove it."""
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        path, self.cgroup = self.cgroup, None
        if path is None:
            return
        if not self.reached and _forks_refused(path) > 0:
            self.reached = True
        for _ in range(50):  # killed tasks leave the cgroup as they exit; usually at once
            _kill_all(path)
            try:
                os.rmdir(path)
                return
            except FileNotFoundError:
                return
            except OSError:
                await asyncio.sleep(0.02)
        # Still busy: left for the sweep of a later process (an empty cgroup costs nothing).


def _forks_refused(path: str) -> int:
    """How many forks the pids limit refused (`max N` in pids.events; 0 when unreadable)."""
    try:
        with open(os.path.join(path, "pids.events")) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "max":
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _kill_all(path: str) -> None:
    if os.path.exists(os.path.join(path, "cgroup.kill")):  # cgroup v2: the kernel kills them all at once
        with contextlib.suppress(OSError):
            _write(path, "cgroup.kill", "1")
            return
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            pids = [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _write(path: str, name: str, value: str) -> None:
    with open(os.path.join(path, name), "w") as f:
        f.write(value)
