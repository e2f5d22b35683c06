"""Killing everything a `bash` call started: its process group, and every process of its session.

Each call runs in a new session whose id is bash's pid. `killpg` reaches the call's process group,
but a job started under `set -m` gets a group of its own inside the same session; only `setsid`
leaves the session (and under the sandbox, the PID namespace catches even that). The kernel does
not reuse a pid while it still names a session, so a session id read from /proc cannot be a stranger.
"""

from __future__ import annotations

import contextlib
import os
import signal

# Rounds of scan-and-kill: a process forking while we scan can add a member once more.
KILL_ROUNDS = 5


def session_members(sid: int) -> list[int]:
    """Pids of the live processes in session `sid` (Linux /proc; empty where there is none)."""
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # Fields after the command name (which may contain spaces and parentheses).
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) > 3 and fields[0] != b"Z" and int(fields[3]) == sid:
            found.append(int(name))
    return found


def kill_session(sid: int) -> None:
    """SIGKILL the process group `sid` and every other process still in session `sid`."""
    kill_group(sid)
    for _ in range(KILL_ROUNDS):
        members = session_members(sid)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
