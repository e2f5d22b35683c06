"""The OS sandbox of the `bash` builtin: bubblewrap (`bwrap`) on Linux.

What the command sees inside (see docs/security.md for the guarantees and the limits):
- the system directories (/usr, /etc, /opt and the merged-/usr links) read-only, with /etc's secrets
  (/etc/shadow, /etc/gshadow, /etc/sudoers*, /etc/ssh) masked; the directories of PATH and the
  configured `readOnlyPaths` read-only; `workDir` and `writablePaths` writable; everything else (home
  directories, /root, /var, /srv, /mnt, the real /tmp) absent. /tmp is an empty tmpfs per call, of at
  most `tmp_size` bytes (bwrap >= 0.8; tmpfs is memory, and without a size the kernel allows half of it).
- its own PID namespace with its own /proc: no other process of the machine is visible, so neither
  the parent's environment (/proc/<ppid>/environ) nor a signal can reach them;
- its own network namespace (loopback only, nothing listening) unless `network: true`;
- its own user, IPC, UTS and cgroup namespaces, no capabilities (even as root), no further user
  namespaces (`--disable-userns`);
- the scrubbed environment `bash` builds, nothing else; death with the parent (`--die-with-parent`).
Killing bwrap's process group kills the namespace's init, and with it every process in the namespace,
including ones that called setsid.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

SandboxMode = Literal["auto", "bwrap", "off"]
SANDBOX_MODES: tuple[str, ...] = ("auto", "bwrap", "off")

# Read-only when present; a top-level symlink (merged /usr: /bin -> usr/bin) is recreated as a link.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# Files and directories under the read-only system paths that hold secrets: masked.
MASKED_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
                "/etc/security/opasswd")
MASKED_DIRS = ("/etc/ssh", "/etc/sudoers.d", "/etc/ssl/private")
PROBE_TIMEOUT = 10.0


class SandboxUnavailableWarning(UserWarning):
    """`sandbox: "auto"` found no working bubblewrap: bash runs without the OS sandbox."""


@dataclass(frozen=True, slots=True)
class Sandbox:
    """How to wrap a command line in bwrap for one workspace."""

    bwrap: str
    workdir: str
    network: bool = False
    read_only: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    disable_userns: bool = True  # bwrap >= 0.8
    tmp_size: int = 0  # bytes of /tmp; 0: the kernel's default (half the memory)

    def argv(self, shell: str, command: str, path_dirs: Sequence[str] = ()) -> list[str]:
        args = [self.bwrap, "--unshare-all", "--unshare-user", "--die-with-parent",
                "--cap-drop", "ALL", "--hostname", "chainreact-sandbox"]
        if self.disable_userns:
            args.append("--disable-userns")
        if self.network:
            args.append("--share-net")
        for p in SYSTEM_PATHS:
            if os.path.islink(p):
                args += ["--symlink", os.readlink(p), p]
            elif os.path.isdir(p):
                args += ["--ro-bind", p, p]
        for p in MASKED_FILES:
            if os.path.isfile(p):
                args += ["--ro-bind", "/dev/null", p]
        for p in MASKED_DIRS:
            if os.path.isdir(p):
                args += ["--tmpfs", p, "--remount-ro", p]
        args += ["--proc", "/proc", "--dev", "/dev"]
        if self.tmp_size > 0:
            args += ["--size", str(self.tmp_size)]
        args += ["--tmpfs", "/tmp"]
        for p in (*_outside_system(path_dirs), *self.read_only):
            args += ["--ro-bind-try", p, p]
        for p in (*self.writable, self.workdir):
            args += ["--bind", p, p]
        args += ["--chdir", self.workdir, "--", shell, "-c", command]
        return args


def _outside_system(dirs: Sequence[str]) -> list[str]:
    """PATH directories not already under a system path (a venv's bin, /usr/local/bin is covered)."""
    out = []
    for d in dirs:
        if not d or not os.path.isabs(d):
            continue
        real = os.path.realpath(d)
        if any(real == s or real.startswith(s + "/") for s in SYSTEM_PATHS) or not os.path.isdir(real):
            continue
        if real.count("/") < 2:  # "/" or a top-level directory (/home, /root) on PATH would expose it all
            continue
        out.append(real)
    return out


_probe_lock = threading.Lock()
# bwrap path -> (why it cannot work, --disable-userns works, --size works)
_probed: dict[str, tuple[str | None, bool, bool]] = {}
_warned = False


def find_bwrap() -> str | None:
    return shutil.which("bwrap") or next(
        (p for p in ("/usr/bin/bwrap", "/usr/local/bin/bwrap") if os.access(p, os.X_OK)), None)


def probe(bwrap: str) -> tuple[str | None, bool, bool]:
    """(None when `bwrap` can build the sandbox here, else the reason; whether --disable-userns works;
    whether --size works).

    Cached per process. bwrap needs unprivileged user namespaces (or root); containers and some
    kernels forbid them.
    """
    with _probe_lock:
        if bwrap not in _probed:
            reason = _try(Sandbox(bwrap, "/tmp", tmp_size=1 << 20))
            disable = sized = True
            if reason is not None and "disable-userns" in reason:  # bwrap older than 0.8
                disable = False
                reason = _try(Sandbox(bwrap, "/tmp", disable_userns=False, tmp_size=1 << 20))
            if reason is not None and "size" in reason:
                sized = False
                reason = _try(Sandbox(bwrap, "/tmp", disable_userns=disable))
            _probed[bwrap] = (reason, disable, sized)
        return _probed[bwrap]


def _try(box: Sandbox) -> str | None:
    try:
        done = subprocess.run(box.argv("/bin/sh", "exit 0"), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=PROBE_TIMEOUT, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError) as e:
        return f"bwrap failed to start: {e}"
    if done.returncode == 0:
        return None
    err = done.stderr.decode("utf-8", "replace").strip()
    return f"bwrap cannot build a sandbox here ({err or f'exit code {done.returncode}'})"


def resolve_sandbox(mode: str, workdir: str, *, network: bool = False, read_only: Sequence[str] = (),
                    writable: Sequence[str] = (), tmp_size: int = 0) -> Sandbox | None:
    """The Sandbox for `mode`, or None (off, or auto without a working bwrap: warned once).

    Raises RuntimeError for `bwrap` when bubblewrap is missing or cannot work here.
    """
    global _warned
    if mode == "off":
        return None
    bwrap = find_bwrap()
    reason, disable_userns, sized = ("bubblewrap (bwrap) is not installed", False, False) if bwrap is None \
        else probe(bwrap)
    if reason is None and bwrap is not None:
        return Sandbox(bwrap, workdir, network, tuple(read_only), tuple(writable), disable_userns,
                       tmp_size if sized else 0)
    if mode == "bwrap":
        raise RuntimeError(reason)
    if not _warned:
        _warned = True
        warnings.warn(
            f"bash runs WITHOUT an OS sandbox: {reason}. Commands can read and write anything this user "
            "can. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or set "
            "sandbox: \"off\" in the bash tool's config to acknowledge this.",
            SandboxUnavailableWarning, stacklevel=3)
    return None
